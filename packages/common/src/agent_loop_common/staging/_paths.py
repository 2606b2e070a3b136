"""Repository path normalisation and glob matching (pure).

A staged path names one file inside the repository, in git's own spelling: POSIX
separators, relative to the root, no `.`/`..` segments. Normalising before any check means
`./src//a.py`, `src/a.py` and `src\\a.py` are one entry in the stage and one policy
decision, so a protected path cannot be reached through an alternative spelling.
"""

from __future__ import annotations

import re
from functools import lru_cache

from agent_loop_common.staging._errors import PolicyViolation

__all__ = ["glob_matches", "normalise_path"]

_MAX_PATH_CHARS = 1024
_MAX_SEGMENT_CHARS = 255
_DRIVE = re.compile(r"^[A-Za-z]:")


def normalise_path(raw: object) -> str:
    """Return `raw` as a normalised repository-relative POSIX path.

    Args:
        raw: The path as the model sent it (any JSON value).

    Returns:
        The normalised path, e.g. `"src/pkg/mod.py"`.

    Raises:
        PolicyViolation: The value is not a string, is empty, absolute, leaves the
            repository (`..`), reaches into `.git`, names a directory, or contains NUL or
            control characters.
    """
    if not isinstance(raw, str):
        raise PolicyViolation(
            f"path must be a string like 'src/module.py', got {type(raw).__name__}."
        )
    text = raw.strip()
    shown = text[:120]
    if not text:
        raise PolicyViolation(
            "path is empty: give a repository-relative path like 'src/module.py'."
        )
    if "\x00" in text:
        raise PolicyViolation(f"path {shown!r} contains a NUL character.")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        raise PolicyViolation(f"path {shown!r} contains control characters (newline, tab, ...).")
    text = text.replace("\\", "/")
    if text.startswith(("/", "~")) or _DRIVE.match(text):
        raise PolicyViolation(
            f"path {shown!r} is absolute: give it relative to the repository root, like 'src/module.py'."
        )
    if text.endswith("/"):
        raise PolicyViolation(f"path {shown!r} names a directory: stage files one by one.")
    segments = [seg for seg in text.split("/") if seg not in ("", ".")]
    if not segments:
        raise PolicyViolation(f"path {shown!r} does not name a file.")
    if ".." in segments:
        raise PolicyViolation(
            f"path {shown!r} contains '..': paths must stay inside the repository; "
            "give the path relative to the repository root without '..'."
        )
    if any(seg.lower() == ".git" for seg in segments):
        raise PolicyViolation(
            f"path {shown!r} is inside a '.git' directory: git metadata cannot be staged."
        )
    if any(len(seg) > _MAX_SEGMENT_CHARS for seg in segments):
        raise PolicyViolation(
            f"path {shown!r} has a name longer than {_MAX_SEGMENT_CHARS} characters."
        )
    path = "/".join(segments)
    if len(path) > _MAX_PATH_CHARS:
        raise PolicyViolation(f"path is longer than {_MAX_PATH_CHARS} characters.")
    return path


def glob_matches(path: str, pattern: str) -> bool:
    """Whether normalised `path` matches `pattern`, case-insensitively.

    `*` and `?` stay within one path segment, a `**` segment matches any number of
    segments (including none in the middle, at least one at the end), and a pattern
    ending in `/` means everything below that directory. Matching ignores case so a
    protected path cannot be reached on a case-insensitive checkout by changing case.
    """
    return _compile(pattern).fullmatch(path) is not None


@lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    text = pattern.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    text = text.lstrip("/")
    if text.endswith("/"):
        text += "**"
    segments = [seg for seg in text.split("/") if seg not in ("", ".")]
    parts: list[str] = []
    for index, seg in enumerate(segments):
        last = index == len(segments) - 1
        if seg == "**":
            parts.append(".+" if last else "(?:[^/]+/)*")
            continue
        parts.append(_translate_segment(seg) + ("" if last else "/"))
    return re.compile("".join(parts), re.IGNORECASE)


def _translate_segment(segment: str) -> str:
    out: list[str] = []
    for ch in segment:
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(ch))
    return "".join(out)
