"""What a report is rendered from: plain values the tick already holds (no I/O here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from agent_loop_common.metrics import DailyRollup
from agent_loop_common.records import Grade, Lesson, LessonBook, RunRecord
from agent_loop_distiller._effect import EffectBook
from agent_loop_distiller._lessons import Edit

__all__ = ["MemoryFile", "ReportData"]


@dataclass(frozen=True, slots=True)
class MemoryFile:
    """One file of the distiller's memory, as written (or read) by the tick."""

    key: str
    """Store key, e.g. `agent-loop-context`."""
    path: str
    """Path inside the key, e.g. `context/digest.md`."""
    text: str
    """Its content (capped when rendered)."""


@dataclass(frozen=True)
class ReportData:
    """Everything the four tabs show."""

    generated_at: datetime
    """When the tick ran."""
    repo: str
    """`owner/name` of the repository the loop works on."""
    book: LessonBook
    """Lessons after the tick."""
    rollups: list[DailyRollup] = field(default_factory=list[DailyRollup])
    """Daily tallies of the report window, oldest first."""
    grades: list[Grade] = field(default_factory=list[Grade])
    """Grades of the window (PRs and decompositions)."""
    runs: list[RunRecord] = field(default_factory=list[RunRecord])
    """This distiller run first, then the records it ingested, newest first."""
    edits: list[Edit] = field(default_factory=list[Edit])
    """Lesson edits of this tick."""
    expired: list[Lesson] = field(default_factory=list[Lesson])
    """Lessons dropped as stale this tick."""
    memory: list[MemoryFile] = field(default_factory=list[MemoryFile])
    """The memory files this tick wrote or read."""
    note: str = ""
    """One line on what the tick did."""
    effects: EffectBook | None = None
    """The measured effect of every lesson over its whole life (the ledger's effect,
    compliance and token columns); `None` before the first measuring tick."""
