"""`redact_secrets`: secrets out of any text that leaves the machine.

Two nets, applied together:

- **Known shapes** (pure): every provider key and token whose format its issuer fixed,
  matched by that format (a prefix and an alphabet), never by guessing from digits. A key
  made of letters only is caught as surely as one full of digits. A shape starts where
  a word does, or right after an escape sequence (`\\nsk-...` in a JSON string).
- **The live secrets** of this process (`LIVE_SECRETS`): the run's own GitHub token (a
  personal token, or the installation token an App minted a minute ago) and the model
  keys. A value with no fixed shape (a Mistral or Together key, a proxy's key) is caught
  only here. Each is looked for as written, split by whitespace, quotes, `+`, commas or
  a string's `\\n` escapes (`"ghp_ab" + "cd..."`, a token wrapped over lines), reversed,
  in hex, with any character percent-encoded (either case of hex), and in base64
  (standard and URL-safe, at any of the three byte alignments, `/` also as `\\/`), which
  covers `base64(token)`, `Authorization: Basic base64("x-access-token:" + token)` and
  any `user:token` pair, wrapped over lines or not.

Not covered (a determined leak can always re-encode): other encodings (rot13, gzip,
base32, an XOR), a secret cut into pieces printed apart with other text between them,
fewer than all of its characters, and a key with no fixed shape that is not this
process's live secret.

A leaf module (it imports nothing of the project) so both the sandbox, whose output
reaches the model, and `public_text`, which guards everything posted on GitHub, can use
it without an import cycle. It is a second line of defence: the sandbox holds no secret.
"""

from __future__ import annotations

import base64
import re
import threading

__all__ = ["LIVE_SECRETS", "REDACTED", "LiveSecrets", "redact_secrets"]

REDACTED = "[redacted]"
"""What a secret becomes in public text."""

_ESCAPES = (
    r"\\[abefnrtv0]",
    r"\\x[0-9A-Fa-f]{2}",
    r"\\u[0-9A-Fa-f]{4}",
    r"\x1b\[\dm",
    r"\x1b\[\d\dm",
    r";\dm",
    r";\d\dm",
    r";\d\d\dm",
)
"""Escape sequences a key may follow directly: a JSON or Python string's `\\n`, `\\t`,
`\\x1b`, `\\u00e9` (whose last character is a letter or a digit), a terminal color."""


def _start(head: str, word: str = "A-Za-z0-9_") -> str:
    """`head`, the fixed-width start of a shape, where a word starts (`task-force` is no
    `sk-` key) or right after an escape sequence (`"connecting\\nsk-..."` in a JSON
    string). The boundary is checked behind `head` once it matched, so every shape still
    starts with literal characters the regex engine scans for (a boundary in front made
    the scan about eight times slower)."""
    escaped = "".join(f"|(?<={e}{head})" for e in _ESCAPES)
    return f"{head}(?:(?<![{word}]{head}){escaped})"


_E = r"(?![A-Za-z0-9])"
"""A right boundary for shapes of a fixed length."""

_SHAPES: tuple[tuple[str, str], ...] = (
    # (what, pattern). Lengths are the issuers' where fixed; minimums where a token has
    # grown before (a future longer token is still caught).
    (
        "PEM private key (to its end, or the end of the text when cut)",
        r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----.*?(?:-----END[A-Z ]{0,40}PRIVATE KEY-----|\Z)",
    ),
    ("GitHub token (ghp_, gho_, ghu_, ghs_, ghr_)", _start("gh[pousr]_") + r"[A-Za-z0-9]{30,}"),
    ("GitHub fine-grained token", _start("github_pat_") + r"[A-Za-z0-9_]{30,}"),
    (
        "AWS access key id",
        _start("(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)", "A-Za-z0-9")
        + r"[A-Z2-7]{16}"
        + _E,
    ),
    (
        "AWS secret access key (named; a `/` may be written `\\/` in JSON)",
        r"(?i:aws_?secret_?access_?key|secretaccesskey)[\"'\s]*[:=][\"'\s]*"
        r"(?:[A-Za-z0-9+]|\\?/){40}(?![A-Za-z0-9/+])",
    ),
    (
        "Anthropic key (sk-ant-api03-, admin01, oat01, ...)",
        _start("sk-") + r"ant-[a-z]{2,6}\d{2}-[A-Za-z0-9_-]{20,}",
    ),
    (
        "OpenAI project, service-account and admin key",
        _start("sk-") + r"(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}",
    ),
    ("OpenRouter key", _start("sk-") + r"or-v\d+-[A-Za-z0-9]{20,}"),
    # OpenAI's legacy keys (48 letters and digits), DeepSeek's (32 hex) and most
    # OpenAI-compatible servers: `sk-` and one unbroken run of letters and digits.
    # `sk-learn-...` is not one: a word never runs 20 characters without a hyphen.
    (
        "sk- key (OpenAI legacy, DeepSeek, compatible servers)",
        _start("sk-") + r"[A-Za-z0-9]{20,}" + _E,
    ),
    ("Google API key", _start("AIza") + r"[0-9A-Za-z_-]{35}"),
    ("Groq key", _start("gsk_") + r"[A-Za-z0-9]{40,}"),
    ("xAI key", _start("xai-") + r"[A-Za-z0-9]{40,}"),
    ("Perplexity key", _start("pplx-") + r"[A-Za-z0-9]{40,}"),
    ("Together key (tgp_v1_)", _start("tgp_v") + r"\d+_[A-Za-z0-9_-]{30,}"),
    ("Fireworks key", _start("fw_") + r"[A-Za-z0-9]{20,}"),
    ("Replicate token", _start("r8_") + r"[A-Za-z0-9]{30,}"),
    ("Hugging Face token", _start("hf_") + r"[A-Za-z0-9]{30,}"),
    ("Hugging Face organization token", _start("api_org_") + r"[A-Za-z0-9]{30,}"),
    ("Slack token", _start("(?:xox[abposre]|xapp)-") + r"[A-Za-z0-9-]{10,}"),
    ("GitLab token", _start("gl") + r"(?:pat|dt|rt|ptt|cbt)-[A-Za-z0-9_-]{20,}"),
    ("npm token", _start("npm_") + r"[A-Za-z0-9]{36}" + _E),
    ("PyPI token", _start("pypi-") + r"AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,}"),
    ("Stripe secret key", _start("[rs]k_") + r"(?:live|test)_[A-Za-z0-9]{20,}"),
    # A JSON Web Token (a GitHub App's JWT, an OAuth access token): three base64url parts.
    (
        "JSON Web Token",
        _start("eyJ") + r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
)

_KNOWN = re.compile("|".join(pattern for _, pattern in _SHAPES), re.DOTALL)

_SPLIT_GAP = r"(?:[\s\"'`+,]|\\[nrt]?){0,6}"
"""What may stand between two characters of a split secret: whitespace, quotes, `+`,
commas, backslashes and the `\\n`, `\\r`, `\\t` escapes of a string literal (string
concatenation, wrapped lines, a list of pieces, a wrapped secret inside a JSON string)."""
_WRAP_GAP = r"(?:\s|\\[nr]){0,4}"
"""What may stand between two characters of an encoded secret (a wrapped line, also as
the escapes of a JSON string)."""
_MIN_LIVE = 12
"""A live secret shorter than this is not looked for: it would match ordinary text."""


def _char(c: str) -> str:
    """A pattern for one character as written, percent-encoded (either case of hex, as
    in a URL's userinfo) or, for `/`, JSON-escaped as `\\/`."""
    code = "".join(f"[{d.upper()}{d.lower()}]" if d.isalpha() else d for d in f"{ord(c):02X}")
    forms = [re.escape(c), f"%{code}"]
    if c == "/":
        forms.append(r"\\/")
    return f"(?:{'|'.join(forms)})" if ord(c) < 0x80 else re.escape(c)


def _spread(text: str, gap: str) -> str:
    """A pattern matching `text`, each character in any of its `_char` forms, with up to a
    few `gap` characters between any two."""
    return gap.join(_char(c) for c in text)


def _base64_cores(secret: bytes) -> list[str]:
    """The part of `secret`'s base64 that is the same wherever it sits in a longer text.

    Base64 encodes groups of 3 bytes; a secret preceded by k bytes (k = 0, 1, 2 modulo 3)
    shares its first group with them and its last with whatever follows. The characters
    of the groups that hold only the secret's bytes are fixed for each k: those three
    cores, standard and URL-safe, find the secret inside any base64 text.
    """
    cores: list[str] = []
    for k in range(3):
        encoded = base64.b64encode(b"\0" * k + secret).decode()
        start = (0, 2, 3)[k]
        end = 4 * ((len(secret) + k) // 3)
        core = encoded[start:end]
        if len(core) >= _MIN_LIVE:
            cores.append(core)
            cores.append(core.replace("+", "-").replace("/", "_"))
    return cores


def _live_patterns(secret: str) -> list[str]:
    raw = secret.encode()
    forms = {secret, secret[::-1], raw.hex(), raw.hex().upper()}
    patterns = [_spread(form, _SPLIT_GAP) for form in sorted(forms)]
    patterns += [_spread(core, _WRAP_GAP) for core in sorted(set(_base64_cores(raw)))]
    return patterns


class LiveSecrets:
    """The secrets this process holds, looked for in every redacted text.

    Added where a secret enters the process (the GitHub facade's credentials, the model
    keys read at the start of a run); never removed while the process runs, except by
    `clear` in tests. Thread-safe: adding builds a new pattern, readers use the last one.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None

    def add(self, secret: str | None) -> None:
        """Look for `secret` from now on (ignored when empty or too short to be one)."""
        value = (secret or "").strip()
        if len(value) < _MIN_LIVE or value in self._secrets:
            return
        with self._lock:
            secrets = self._secrets | {value}
            patterns = [
                p for s in sorted(secrets, key=len, reverse=True) for p in _live_patterns(s)
            ]
            self._pattern = re.compile("|".join(f"(?:{p})" for p in patterns))
            self._secrets = secrets

    def clear(self) -> None:
        """Forget every secret (tests only: a process keeps its secrets to the end)."""
        with self._lock:
            self._secrets, self._pattern = frozenset(), None

    def __len__(self) -> int:
        return len(self._secrets)

    def redact(self, text: str) -> str:
        """`text` with every form of a live secret replaced by `REDACTED`."""
        pattern = self._pattern
        return text if pattern is None else pattern.sub(REDACTED, text)


LIVE_SECRETS = LiveSecrets()
"""This process's live secrets (see `LiveSecrets`)."""


def redact_secrets(text: str) -> str:
    """`text` with every secret replaced by `REDACTED` (idempotent).

    Caught: the known shapes (GitHub, AWS, OpenAI `sk-`, `sk-proj-`,
    `sk-svcacct-`, Anthropic `sk-ant-api03-`, Google `AIza`, Groq `gsk_`, xAI `xai-`,
    Hugging Face `hf_`, Slack, GitLab, npm, PyPI, Stripe keys, JWTs and PEM private
    keys), and this process's live secrets (`LIVE_SECRETS`) as written, split, reversed,
    in hex, percent-encoded or in base64 (`x-access-token:<token>` basic auth included).
    """
    return _KNOWN.sub(REDACTED, LIVE_SECRETS.redact(text))
