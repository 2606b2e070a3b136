"""Repository path normalisation, glob matching and tree relations (pure).

A staged path names one file inside the repository, in git's own spelling: POSIX
separators, relative to the root, no `.`/`..` segments. Normalising before any check means
`./src//a.py`, `src/a.py` and `src\\a.py` are one entry in the stage and one policy
decision, so a protected path cannot be reached through an alternative spelling.

A repository is a tree, not a set of strings: writing a file at `.github` replaces the
whole `.github` directory, and writing `Jenkinsfile/x` replaces the file `Jenkinsfile`.
`path_relation` says whether a path is, lies under, or contains what a pattern
protects, so the policy can refuse all three.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from agent_loop_common.staging._errors import PolicyViolation

__all__ = ["PathRelation", "ancestors", "glob_matches", "normalise_path", "path_relation"]

PathRelation = Literal["matches", "inside", "contains"]
"""How a path relates to a protected pattern: it is a match, lies under one, or holds one."""

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


def ancestors(path: str) -> list[str]:
    """The directories above normalised `path`, outermost first: `a/b/c` -> `a`, `a/b`."""
    segments = path.split("/")
    return ["/".join(segments[:i]) for i in range(1, len(segments))]


def path_relation(path: str, pattern: str) -> PathRelation | None:
    """How normalised `path` relates to the paths `pattern` protects, or `None`.

    - `matches`: `path` itself matches (`glob_matches`).
    - `inside`: a directory above `path` matches, e.g. `Jenkinsfile/x` for `Jenkinsfile`:
      writing it would turn the protected file into a directory.
    - `contains`: `path` is a directory above what the pattern names, e.g. `.github` or
      `.github/workflows` for `.github/workflows/`: a file written there, or a deletion,
      would replace the whole protected tree.

    `contains` follows the pattern's segments up to its first `**` (`**/*.pem` could
    match under any directory, so no path is refused as its ancestor); a directory of
    the base branch is refused by the staging tools' `is_dir_at_base` lookup instead.
    """
    if glob_matches(path, pattern):
        return "matches"
    if any(glob_matches(above, pattern) for above in ancestors(path)):
        return "inside"
    segments = path.split("/")
    fixed = _segments(pattern)
    if len(segments) < len(fixed) and all(
        seg != "**" and _segment_regex(seg).fullmatch(name) is not None
        for seg, name in zip(fixed, segments, strict=False)
    ):
        return "contains"
    return None


def _segments(pattern: str) -> list[str]:
    """A pattern's segments in normalised form (a trailing `/` becomes a `**` segment)."""
    text = pattern.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    text = text.lstrip("/")
    if text.endswith("/"):
        text += "**"
    return [seg for seg in text.split("/") if seg not in ("", ".")]


@lru_cache(maxsize=512)
def _segment_regex(segment: str) -> re.Pattern[str]:
    return re.compile(_translate_segment(segment), re.IGNORECASE)


@lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    segments = _segments(pattern)
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
