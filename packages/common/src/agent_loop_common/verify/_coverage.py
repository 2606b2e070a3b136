"""What of a change the verifier was shown, so nothing unseen is ever committed.

A staged file may be far larger than the verifier's prompt can hold. The verifier is
shown what fits, pages through the rest of the proposed tree with `read_file`, and this
record keeps both: the files shown whole in the prompt and the staged lines it read.
The attempt loop accepts a verdict only when every written file was shown whole one way
or the other (`Coverage.unseen` is empty); a deletion is shown by being listed.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent_loop_common.repo import ReadLog
from agent_loop_common.staging import ChangePlan

__all__ = ["Coverage"]


class Coverage:
    """Files shown whole in the verifier's prompt, and staged lines it read with its tools."""

    def __init__(self) -> None:
        self.in_prompt: set[str] = set()
        """Paths whose whole diff or content (or deletion) was in the prompt."""
        self.reads = ReadLog()
        """Staged lines shown by the verifier's `read_file`."""

    def unseen(self, plan: ChangePlan) -> list[str]:
        """The parts of `plan` the verifier was not shown, one line per file (empty: all)."""
        out: list[str] = []
        for path in sorted(plan.files):
            content = plan.files[path]
            if content is None or path in self.in_prompt:
                continue
            total = len(content.splitlines())
            missing = set(range(1, total + 1)) - self.reads.shown(path)
            if missing:
                out.append(f"{path} (lines {_ranges(missing)} of {total})")
        return out


def _ranges(numbers: Iterable[int]) -> str:
    """`1-3, 7, 9-12` for a set of line numbers (at most five runs, then `...`)."""
    runs: list[tuple[int, int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    text = [f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:5]]
    return ", ".join(text) + (", ..." if len(runs) > 5 else "")
