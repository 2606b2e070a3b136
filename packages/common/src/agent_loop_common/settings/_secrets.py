"""Recognise a credential where a plain setting should be (pure).

Plain settings travel as environment variables: `agent_loop_common.deploy` copies them
into the deploy spec, where anyone who can read the task definition reads them. Secrets
travel as Flyte secrets only. A key written into a URL (`https://user:key@host/v1`,
`?api_key=...`) or pasted into the wrong variable would silently cross that line, so
settings refuse such URLs at load time and deploy refuses to forward such values.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

__all__ = ["credential_in"]

_SECRET_PARAM = re.compile(
    r"^(?:.*[_-])?(?:key|apikey|token|secret|password|passwd|pwd|auth|authorization|"
    r"signature|sig|credential|credentials|code)$",
    re.IGNORECASE,
)
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"gh[pousr]_[A-Za-z0-9]{20,}"  # GitHub tokens
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|sk-[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic and compatible keys
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|AIza[0-9A-Za-z_-]{30,}"  # Google API key
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"  # a JWT
    r")"
)
_PEM = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")


def credential_in(value: str) -> str | None:
    """What in `value` looks like a credential, in words that do not repeat it; else `None`.

    Looks for a URL with a user name or password (`https://user:key@host`), a URL query
    parameter named like a key (`key`, `api_key`, `token`, `access_token`, `sig`...), a
    private key, and the shapes of common API tokens (`ghp_...`, `sk-...`).
    """
    text = value.strip()
    if "://" in text:
        try:
            parts = urlsplit(text)
            has_user = parts.username is not None or parts.password is not None
        except ValueError:
            return "a URL that cannot be parsed"
        if has_user or "@" in parts.netloc:
            return "a user name or password in the URL (user:key@host)"
        for name, _ in parse_qsl(parts.query, keep_blank_values=True):
            if _SECRET_PARAM.match(name.strip()):
                return f"the URL query parameter '{name.strip()[:40]}'"
    if _PEM.search(text):
        return "a private key"
    if _TOKEN.search(text):
        return "an API token"
    return None
