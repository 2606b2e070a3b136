"""What a pass carries between its stages: options, its result, the work under the claim."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from agent_loop_common.memory import ContextView, DistillerMemory, IngestBatch
from agent_loop_common.records import Grade, Lesson, LessonBook, RunRecord
from agent_loop_distiller.grading import GradingResult
from agent_loop_distiller.lessons import Edit, LessonLimits
from agent_loop_distiller.news import Backoff, PassKind
from agent_loop_distiller.report import ReportData

__all__ = ["CLAIM_KEY", "DistillerOptions", "PassResult", "Work"]

CLAIM_KEY = "distiller"
"""The repository-level claim target every distiller run competes for."""


@dataclass(frozen=True)
class DistillerOptions:
    """Knobs of a pass that are not deployment settings (defaults suit production)."""

    limits: LessonLimits = field(default_factory=LessonLimits)
    """Size bounds of the lesson book."""
    lesson_max_age: timedelta | None = None
    """Lessons unseen for longer expire; `None`: the record retention window."""
    housekeeping_buckets: int = 24
    """Commit the ledger without news once a pass has to scan more hourly buckets than this."""
    backoff: Backoff | None = None
    """Waits between failed distillations of the same records; `None`: the settings'
    back-off (`AGENT_LOOP_BACKOFF_BASE_MINUTES`, `AGENT_LOOP_BACKOFF_CAP_MINUTES`)."""
    report_days: int = 30
    """Days of rollups the report's Metrics tab covers."""
    prompt_chars: int = 60_000
    """Most characters of evidence in the distiller agent's prompt."""
    with_report: bool = True
    """Build the report's data after a pass that did work (reads the window's rollups)."""


@dataclass
class PassResult:
    """What one pass did (the record, when one was written, is the durable account)."""

    kind: PassKind = PassKind.IDLE
    record: RunRecord | None = None
    """The run's record (distillations and failed attempts only)."""
    ingested: int = 0
    """Records committed as ingested."""
    deferred: int = 0
    """Records newly left un-ingested (unknown major, invalid)."""
    grades_changed: list[Grade] = field(default_factory=list[Grade])
    """Grades written."""
    lessons: LessonBook | None = None
    """The lessons after the pass (when it read them)."""
    digest: str = ""
    """The digest written (empty when unchanged or not written)."""
    edits: list[Edit] = field(default_factory=list[Edit])
    """Lesson edits committed."""
    expired: list[Lesson] = field(default_factory=list[Lesson])
    """Lessons dropped as stale."""
    note: str = ""
    """Why the pass stopped or what it did, in one line."""
    report: ReportData | None = None
    """Data for the report, after a pass that did work."""


@dataclass
class Work:
    """What the pass learned under the claim, for the commit and the report."""

    memory: DistillerMemory
    batch: IngestBatch
    context: ContextView
    grading: GradingResult
    book: LessonBook
    digest: str = ""
