"""`redact_secrets`: token-shaped strings out of any text that leaves the machine (pure).

A leaf module (it imports nothing of the project) so both the sandbox, whose output
reaches the model, and `public_text`, which guards everything posted on GitHub, can use
it without an import cycle.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "redact_secrets"]

REDACTED = "[redacted]"
"""What a token-shaped string becomes in public text."""

# Formats documented by their issuers; the lengths are minimums so a shortened or
# future longer token is still caught, and the left boundary keeps words like
# `task-force` or `disk-usage` intact.
_SECRET = re.compile(
    "|".join(
        (
            # PEM private keys, to their end (or the end of the text when cut)
            r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----.*?"
            r"(?:-----END[A-Z ]{0,40}PRIVATE KEY-----|\Z)",
            r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
            r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{30,}",  # GitHub fine-grained tokens
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![0-9A-Z])",  # AWS key ids
            # OpenAI, Anthropic, OpenRouter and most OpenAI-compatible providers
            r"(?<![A-Za-z0-9_-])sk-(?=[A-Za-z0-9_-]{0,40}[0-9])"
            r"(?:ant-|proj-|svcacct-|or-)?[A-Za-z0-9_-]{20,}",
            r"(?<![A-Za-z0-9_])AIza[0-9A-Za-z_-]{35}",  # Google API keys
            r"(?<![A-Za-z0-9_])xox[abposr]-[A-Za-z0-9-]{10,}",  # Slack
            r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}",  # Hugging Face
            r"(?<![A-Za-z0-9_])glpat-[A-Za-z0-9_-]{20,}",  # GitLab
        )
    ),
    re.DOTALL,
)


def redact_secrets(text: str) -> str:
    """`text` with every token-shaped string replaced by `REDACTED` (pure, idempotent).

    Caught: GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), AWS
    access key ids (`AKIA...`, `ASIA...`), model-provider keys (`sk-...`, `sk-ant-...`,
    `sk-proj-...`), Google API keys, Slack, Hugging Face and GitLab tokens, and PEM
    private key blocks. It is a second line of defence: the sandbox holds no secret, and
    this catches one that reached a test's output or a model's words anyway.
    """
    return _SECRET.sub(REDACTED, text)
