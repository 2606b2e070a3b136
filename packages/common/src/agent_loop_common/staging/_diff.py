"""A change as a git diff against its base: what `git apply` (and SWE-bench) reads. Pure.

A staged change is kept whole (path -> full new content, `None` to delete), which is
what the verifier reads and the pipeline commits. A benchmark's prediction is a patch
instead (SWE-bench's `model_patch`), and a person reads a change best as one, so this
renders the files against the base's content in git's format: `diff --git` headers,
`new file mode` / `deleted file mode` with the base's mode, `/dev/null` sides, and git's
`\\ No newline at end of file` marker, so the patch applies with `git apply` exactly.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

__all__ = ["change_diff"]

_NO_NEWLINE = "\\ No newline at end of file\n"


def change_diff(
    originals: Mapping[str, bytes | None],
    files: Mapping[str, str | None],
    *,
    modes: Mapping[str, str] | None = None,
) -> str:
    """The git diff turning the base into the base with `files` applied.

    Args:
        originals: Each changed path's bytes at the base (`None`: absent there).
        files: The change: path -> full new text, `None` to delete.
        modes: The base's git modes by path (`100755` keeps a script executable on a
            deletion's header); `100644` when not given.

    Returns:
        The diff, files in path order; `""` when nothing changes. A base file that is
        not UTF-8 is compared as decoded with replacement characters (a text change over
        a binary file cannot be expressed as a text patch exactly).
    """
    parts: list[str] = []
    for path in sorted(files):
        new = files[path]
        raw = originals.get(path)
        old = raw.decode("utf-8", errors="replace") if raw is not None else None
        if old == new or (old is None and new is None):
            continue
        mode = (modes or {}).get(path, "100644")
        header = [f"diff --git a/{path} b/{path}\n"]
        if old is None:
            header.append("new file mode 100644\n")
        elif new is None:
            header.append(f"deleted file mode {mode}\n")
        before = f"a/{path}" if old is not None else "/dev/null"
        after = f"b/{path}" if new is not None else "/dev/null"
        body = list(
            difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                (new or "").splitlines(keepends=True),
                fromfile=before,
                tofile=after,
                n=3,
            )
        )
        if not body:  # an empty file created or deleted: git writes the header alone
            parts.append("".join(header))
            continue
        parts.append("".join(header) + "".join(_marked(line) for line in body))
    return "".join(parts)


def _marked(line: str) -> str:
    """A diff line, with git's marker when the file's last line has no newline."""
    return line if line.endswith("\n") else f"{line}\n{_NO_NEWLINE}"
