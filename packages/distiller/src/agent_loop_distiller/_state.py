"""What a tick carries between its stages: options, its result, the work under the claim."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from agent_loop_common.claims import BackoffPolicy
from agent_loop_common.github import BranchHead
from agent_loop_common.memory import ContextView, DistillerMemory, IngestBatch
from agent_loop_common.records import (
    Grade,
    Lesson,
    LessonBook,
    RetiredLesson,
    RunRecord,
    Visibility,
)
from agent_loop_distiller._act import Acted
from agent_loop_distiller._effect import EffectBook
from agent_loop_distiller._flow_back import IgnoredEdit
from agent_loop_distiller._grading import GradingResult
from agent_loop_distiller._judge import Judged
from agent_loop_distiller._lessons import Edit, LessonLimits
from agent_loop_distiller._measure import Measured
from agent_loop_distiller._publish import PullSync
from agent_loop_distiller._replay import Replayed
from agent_loop_distiller._report import ReportData
from agent_loop_distiller._select import TickKind

__all__ = ["CLAIM_KEY", "DistillerOptions", "TickResult", "Work"]

CLAIM_KEY = "distiller"
"""The repository-level claim target every distiller run competes for."""


@dataclass(frozen=True)
class DistillerOptions:
    """Knobs of a tick that are not deployment settings (defaults suit production)."""

    limits: LessonLimits = field(default_factory=LessonLimits)
    """Size bounds of the lesson book."""
    lesson_max_age: timedelta | None = None
    """Lessons unseen for longer expire; `None`: the record retention window."""
    housekeeping_buckets: int = 24
    """Commit the ledger without news once a tick has to scan more hourly buckets than this."""
    backoff: BackoffPolicy | None = None
    """Waits between failed distillations of the same records; `None`: the settings'
    back-off (`AGENT_LOOP_BACKOFF_BASE_MINUTES`, `AGENT_LOOP_BACKOFF_CAP_MINUTES`)."""
    report_days: int = 30
    """Days of rollups the report's Metrics tab covers."""
    prompt_chars: int = 60_000
    """Most characters of evidence in the distiller agent's prompt."""
    with_report: bool = True
    """Build the report's data after a tick that did work (reads the window's rollups)."""
    retry_now: bool = False
    """The operator's `--retry-now`: do not wait out the back-off after failed ticks."""
    max_rewords: int = 3
    """Most ignored lessons the model rewords per tick (each one model call)."""


@dataclass
class TickResult:
    """What one tick did (the record, when one was written, is the durable account)."""

    kind: TickKind = TickKind.IDLE
    record: RunRecord | None = None
    """The run's record (distillations and failed attempts only)."""
    ingested: int = 0
    """Records committed as ingested."""
    deferred: int = 0
    """Records newly left un-ingested (unknown major, invalid)."""
    grades_changed: list[Grade] = field(default_factory=list[Grade])
    """Grades written."""
    lessons: LessonBook | None = None
    """The lessons after the tick (when it read them)."""
    digest: str = ""
    """The digest written (empty when unchanged or not written)."""
    edits: list[Edit] = field(default_factory=list[Edit])
    """Lesson edits committed."""
    expired: list[Lesson] = field(default_factory=list[Lesson])
    """Lessons dropped as stale."""
    note: str = ""
    """Why the tick stopped or what it did, in one line."""
    report: ReportData | None = None
    """Data for the report, after a tick that did work."""
    measured: Measured | None = None
    """What the lesson-effect measurement counted, decided and retired this tick."""
    judged: Judged | None = None
    """The compliance judgments this tick bought (`AGENT_LOOP_COMPLIANCE_JUDGMENTS`)."""
    acted: Acted | None = None
    """What the distiller did about the diagnoses: narrowed, reworded, flagged."""
    replayed: Replayed | None = None
    """The lesson replays this tick ran (`AGENT_LOOP_LESSON_REPLAY=on` only)."""
    lessons_pull: PullSync | None = None
    """What keeping the lessons pull request did (`AGENT_LOOP_LESSONS_PR=on` only)."""
    lessons_base: BranchHead | None = None
    """The default branch as the lessons flow-back read it (reused by the pull request)."""
    lessons_edits_ignored: list[IgnoredEdit] = field(default_factory=list[IgnoredEdit])
    """Edits of the lessons section GitHub vouches for no trusted person for, so not
    applied (each with its commit and reason; the lessons pull request lists them)."""


@dataclass
class Work:
    """What the tick learned under the claim, for the commit and the report."""

    memory: DistillerMemory
    batch: IngestBatch
    context: ContextView
    grading: GradingResult
    book: LessonBook
    digest: str = ""
    retired: list[RetiredLesson] = field(default_factory=list[RetiredLesson])
    """Lessons that leave the book this tick, archived after the commit."""
    visibility: Visibility = ""
    """The repository's visibility this tick, recorded on its lessons."""
    effects: EffectBook | None = None
    """The lesson-effect state after this tick's measurement, saved with the commit."""
