"""`public_text`: defuse closing keywords, mentions, hidden comments and markers (pure).

The steps run in an order that keeps each one from undoing another:

1. line endings normalized; invisible, bidirectional and control characters removed,
   so `fi<ZWSP>xes #3` is seen as the `fixes #3` a reader sees;
2. token-shaped strings (GitHub, cloud and model-provider keys, private key blocks)
   replaced by `[redacted]` (`redact_secrets`): a second line behind the sandbox,
   which already holds no secret, in case one reaches a test's output anyway;
3. HTML comments removed until none is left (removing `<!-- x -->` from
   `<!<!-- x -->-- ... -->` leaves a new comment, which is removed in turn);
4. closing keywords defused: the keyword becomes `refs`, the reference stays;
5. `@mentions` broken with a zero-width joiner after the `@`;
6. what is left of a comment opener or closer escaped (`safe_text`), so no marker of
   the agents can appear;
7. the length capped with an ellipsis; the cut is checked again, so cutting
   `Fixes #12` to `Fixes #1` cannot close issue 1.
"""

from __future__ import annotations

import re

from agent_loop_common.claims import safe_text
from agent_loop_common.redaction import REDACTED, redact_secrets

__all__ = ["MENTION_BREAK", "REDACTED", "closing_references", "public_text", "redact_secrets"]

MENTION_BREAK = "\u200d"
"""Zero-width joiner put after the `@` of a mention: it reads the same, GitHub neither
links nor notifies (a mention needs a letter or digit right after the `@`)."""

_ELLIPSIS = "…"
_INVISIBLE = re.compile(
    "[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# HTML5 also ends a comment at `--!>`; an unterminated `<!--` is escaped later instead.
_COMMENT = re.compile(r"<!--.*?--!?>", re.DOTALL)
_KEYWORD = r"(?<![A-Za-z0-9_])(?P<keyword>close[sd]?|fix(?:e[sd])?|resolve[sd]?)"
# Whitespace of any kind, a colon, Markdown emphasis, brackets and quote marks may
# stand between the keyword and the reference.
_SEP = r"(?P<sep>[\s:*_~>\[(<]*)"
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_REF = (
    r"(?P<ref>"
    # a link's text before an issue URL: fixes [the bug](https://github.com/o/r/issues/5)
    r"(?:\[[^\]\n]{0,200}\]\(\s*)?"
    rf"https?://[^\s/()<>]+/{_NAME}/{_NAME}/(?:issues|pull)/\d+"
    rf"|{_NAME}/{_NAME}#\d+"
    r"|GH-(?P<gh>\d+)"
    r"|#(?P<number>\d+)"
    r")(?![0-9])"
)
_CLOSING = re.compile(_KEYWORD + _SEP + _REF, re.IGNORECASE)
_MENTION = re.compile(r"(?<![A-Za-z0-9_])@(?=[A-Za-z0-9])")


def public_text(text: str, *, allow_closing: int | None = None, limit: int = 20_000) -> str:
    """`text` made safe to post on GitHub as the agents' identity.

    - Closing keywords (`close`, `closes`, `closed`, `fix`, `fixes`, `fixed`, `resolve`,
      `resolves`, `resolved`, any case, an optional colon, any whitespace) aimed at
      `#N`, `owner/repo#N`, `GH-N` or an issue or pull request URL become `refs`, so
      merging the pull request closes nothing; only `<keyword> #N` with
      `N == allow_closing` (the pipeline's own `Fixes #N`, same repository) is kept.
    - `@mentions` get `MENTION_BREAK` after the `@`: `@octocat` becomes
      `@\u200doctocat`, which GitHub does not link or notify. E-mail addresses are kept.
    - HTML comments are removed (nothing hidden reaches the page), and any `<!--` or
      `-->` left is escaped, so none of the agents' markers can appear.
    - Token-shaped strings become `[redacted]` (`redact_secrets`).
    - Invisible, bidirectional and control characters are removed (tab and newline
      stay), line endings become `\\n`, and the result is stripped.
    - At most `limit` characters are kept; a longer text is cut and ends with `…`.

    Applying it twice gives the same result as applying it once.

    Args:
        text: What a model, a person or a tool wrote.
        allow_closing: The one issue number a closing keyword may name, or `None`.
        limit: Most characters of the result, ellipsis included (at least 1).

    Returns:
        The sanitized text.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    clean = text.replace("\r\n", "\n").replace("\r", "\n")
    clean = redact_secrets(_CONTROL.sub("", _INVISIBLE.sub("", clean)))
    while True:
        uncommented = _COMMENT.sub("", clean)
        if uncommented == clean:
            break
        clean = uncommented
    clean = _defuse_closing(clean, allow_closing)
    clean = _MENTION.sub("@" + MENTION_BREAK, clean)
    clean = safe_text(clean).strip()
    keep = limit - 1
    while len(clean) > limit:
        # The cut can end inside a reference (`Fixes #12` -> `Fixes #1`): check it again.
        # Defusing `fix` as `refs` adds a character, hence the loop.
        cut = clean[:keep].rstrip() + _ELLIPSIS
        clean, keep = _defuse_closing(cut, allow_closing), keep - 1
    return clean


def _defuse_closing(text: str, allowed: int | None) -> str:
    def defuse(match: re.Match[str]) -> str:
        number = match.group("number")
        if number is not None and allowed is not None and int(number) == allowed:
            return match.group(0)
        return f"refs{match.group('sep')}{match.group('ref')}"

    return _CLOSING.sub(defuse, text)


_REF_PARTS = re.compile(
    rf"(?:\[[^\]\n]{{0,200}}\]\(\s*)?https?://[^\s/()<>]+/(?P<url_repo>{_NAME}/{_NAME})/"
    r"(?P<kind>issues|pull)/(?P<url_number>\d+)"
    rf"|(?P<repo>{_NAME}/{_NAME})#(?P<repo_number>\d+)"
)


def closing_references(text: str, repo: str) -> list[int]:
    """The numbers a closing keyword in `text` names in repository `repo` (`owner/name`),
    in order, each once: what GitHub links a pull request's body to as the issues it
    closes (`Fixes #3`, `closes acme/widgets#4`, `resolves https://.../issues/5`).

    The text is read as `public_text` sees it (invisible characters removed, HTML
    comments still counted: GitHub reads the raw body). References to other repositories
    and to pull request URLs are left out.
    """
    clean = _CONTROL.sub("", _INVISIBLE.sub("", text))
    here = repo.casefold()
    found: list[int] = []
    for match in _CLOSING.finditer(clean):
        number = match.group("number") or match.group("gh")
        if number is None:
            parts = _REF_PARTS.match(match.group("ref"))
            if parts is None:
                continue
            if parts.group("url_repo") is not None:
                if parts.group("kind") != "issues" or parts.group("url_repo").casefold() != here:
                    continue
                number = parts.group("url_number")
            elif parts.group("repo").casefold() == here:
                number = parts.group("repo_number")
        if number is not None and int(number) not in found:
            found.append(int(number))
    return found
