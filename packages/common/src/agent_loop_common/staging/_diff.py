"""The unified diff of a proposed change against its base: what a run proposed, in the
form people (and `git apply`) read.

The pipeline keeps it on the run's record (`RunRecord.diff`, capped), so `agent-loop
show RUN_ID` can print what a run proposed even when nothing was committed (a rejected
try, a failed run). Pure: the base contents are passed in (`RepoSnapshot.originals`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from agent_loop_common.staging._plans import ChangePlan

__all__ = ["ChangeDiff", "FileDiff", "change_diff"]


@dataclass(frozen=True, slots=True)
class FileDiff:
    """One path of a change, with its line counts."""

    path: str
    added: int
    removed: int
    status: str
    """`added`, `modified`, `deleted`, or `unchanged`; `binary` when the base is not text."""


@dataclass(frozen=True, slots=True)
class ChangeDiff:
    """A change as a unified diff, and per file what it adds and removes."""

    text: str
    files: tuple[FileDiff, ...]

    def capped(self, limit: int) -> str:
        """The diff cut to `limit` characters at a line end, saying how much was left out."""
        if len(self.text) <= limit:
            return self.text
        cut = self.text.rfind("\n", 0, limit)
        head = self.text[: cut if cut > 0 else limit]
        return f"{head}\n… diff cut here: {len(self.text) - len(head)} more characters\n"


def _lines(text: str | None) -> list[str]:
    return [] if text is None else text.splitlines()


def change_diff(plan: ChangePlan, originals: Mapping[str, str | None]) -> ChangeDiff:
    """`plan` against `originals` (base text per path; `None`: the path is new).

    A path missing from `originals` has a base that is not text (binary): it is named,
    not diffed.
    """
    parts: list[str] = []
    files: list[FileDiff] = []
    for path in sorted(plan.files):
        after = plan.files[path]
        if path not in originals:
            files.append(FileDiff(path, 0, 0, "binary"))
            parts.append(f"diff --git a/{path} b/{path}\nBinary or non-text base: not shown\n")
            continue
        before = originals[path]
        if before == after:
            files.append(FileDiff(path, 0, 0, "unchanged"))
            continue
        status = "added" if before is None else "deleted" if after is None else "modified"
        body = list(
            difflib.unified_diff(
                _lines(before),
                _lines(after),
                "/dev/null" if before is None else f"a/{path}",
                "/dev/null" if after is None else f"b/{path}",
                lineterm="",
            )
        )
        added = sum(1 for line in body if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in body if line.startswith("-") and not line.startswith("---"))
        files.append(FileDiff(path, added, removed, status))
        parts.append("\n".join([f"diff --git a/{path} b/{path}", *body]) + "\n")
    return ChangeDiff("".join(parts), tuple(files))
