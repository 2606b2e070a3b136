"""The Memory tab: the distiller's memory files as this tick left them, size-capped."""

from __future__ import annotations

from collections.abc import Sequence

from agent_loop_distiller._report._data import MemoryFile
from agent_loop_distiller._report._html import details, esc

__all__ = ["FILE_CHARS", "TOTAL_CHARS", "render_memory"]

FILE_CHARS = 8_000
"""Most characters shown of one file."""
TOTAL_CHARS = 60_000
"""Most characters shown over all files (the report stays small)."""


def render_memory(files: Sequence[MemoryFile]) -> str:
    """The Memory tab's HTML."""
    if not files:
        return '<p class="muted">No memory files in this tick.</p>'
    out: list[str] = [
        '<p class="muted">Keys and paths in the MemoryStore, as this tick wrote or read them.</p>'
    ]
    budget = TOTAL_CHARS
    for f in files:
        size = len(f.text.encode())
        shown = f.text[: min(FILE_CHARS, max(budget, 0))]
        budget -= len(shown)
        cut = len(f.text) - len(shown)
        note = f'<p class="muted">{cut:,} more characters not shown.</p>' if cut else ""
        out.append(
            details(f"{f.key} / {f.path} ({size:,} bytes)", f"<pre>{esc(shown)}</pre>{note}")
        )
    return "".join(out)
