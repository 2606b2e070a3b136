"""`RunRecord`: the one durable account of a pipeline run.

One record per run that claimed something, or that failed before it could reach its
target (outcome `preflight_failed`); idle runs only bump a counter (see
`agent_loop_common.memory`). Records are append-only: written once by the run, read by
the distiller, never rewritten, so a reader never needs to preserve fields it does not
know.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

from agent_loop_common.records._exposure import LessonExposure, WorkKind
from agent_loop_common.records._lessons import StaleLesson
from agent_loop_common.records._parts import (
    Attempt,
    GitHubUsage,
    Links,
    Outcome,
    Role,
    Target,
    TestEvidence,
    TraceStep,
    Usage,
)

__all__ = ["DIFF_CHARS", "SCHEMA_VERSION", "RunId", "RunRecord"]

SCHEMA_VERSION = "3.0"
"""The version this code writes. Bump the minor for added optional fields, the major for
anything an older reader would misread (removed/renamed fields, new enum members).

2.0 added the outcomes `interrupted` and `preflight_failed`: a 1.x reader defers such
records as an unknown major instead of failing to validate them; 2.x reads every 1.x
record unchanged. 2.1 added `tests.per_process_limits` and `tests.oom_kills`; 2.2
`usage.tokens_cache_read` and `usage.tokens_cache_write`; 2.3 `diff` (the change the run
proposed) and `trace[].agent` (whose step it was). 3.0 added the tests' status
`tampered` (with `tests.tampered`, `tests.not_shown_fixed` and `tests.guard_failing`):
a 2.x reader defers such records; 3.x reads every 1.x and 2.x record unchanged."""

DIFF_CHARS = 16_000
"""Longest `RunRecord.diff` kept: a record is read by every status and distiller pass, so
a huge change keeps its first part and says how much was left out."""

RunId = Annotated[
    str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$", strict=True)
]
"""A run id is used as a file name in memory: one path segment, no dots first."""


class RunRecord(BaseModel):
    """Everything the loop needs to learn from one run, and to show it to humans."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: str = SCHEMA_VERSION
    """`"<major>.<minor>"` of the writer; readers accept any minor of a major they know."""
    run_id: RunId
    """Unique per run (also in the claim marker), so records never collide in memory."""
    role: Role
    """The agent that ran."""
    agent_id: str = ""
    """The agents' identity instance, e.g. the deployment name and version, for rollouts."""
    deployment: str = ""
    """Where it ran: `local`, or the Flyte run/action URL when deployed."""
    repo: str = ""
    """The repository (`owner/name`) the run worked on (schema 1.3; empty in older records)."""
    target: Target
    """The issue, PR or repository the run claimed."""
    outcome: Outcome
    """How the run ended."""
    started_at: AwareDatetime
    """When the run started (after selection, before the claim)."""
    finished_at: AwareDatetime
    """When the run finished; also the day a record counts towards in rollups."""
    attempts: list[Attempt] = Field(default_factory=list[Attempt])
    """Every try with the verifier's verdict, in order."""
    model: str = ""
    """The litellm model string used."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens, model calls and estimated cost of the whole run."""
    github: GitHubUsage = Field(default_factory=GitHubUsage)
    """GitHub API traffic of the run."""
    stage_seconds: dict[str, float] = Field(default_factory=dict[str, float])
    """Wall time per pipeline stage (`select`, `claim`, `build`, `verify`, `apply`, ...)."""
    trace: list[TraceStep] = Field(default_factory=list[TraceStep])
    """Flat step trace of the agent loop, from its progress events."""
    links: Links = Field(default_factory=Links)
    """The PR or issues the run created."""
    error: str = ""
    """Error text for `error`, `budget_exceeded` and other failed outcomes."""
    lesson_ids: list[str] = Field(default_factory=list[str])
    """Ids of the lessons that were in the agent's context, so they can be graded."""
    exposures: list[LessonExposure] = Field(default_factory=list[LessonExposure])
    """Every candidate lesson of the run: applicable or not, held out or shown, and the
    holdout probability of its draw (1.4), so the distiller measures each lesson's effect."""
    work_kind: WorkKind | None = None
    """The kind of work, decided before any lesson was shown (1.4): the stratum the run's
    outcomes are compared in. `None` in older records and for the distiller."""
    stale_lessons: list[StaleLesson] = Field(default_factory=list[StaleLesson])
    """Lessons the run hid because a citation was missing from its base tree (1.4), so
    the distiller marks them stale, to fix or retire."""
    fault: Literal["", "operator", "work"] = ""
    """Whose failure a failed run was (1.1): `operator` for configuration and
    infrastructure (credentials, permissions, an unreachable service, an unknown model),
    which never rests the target; `work` for the work itself; empty when it did not fail."""
    backoff_until: AwareDatetime | None = None
    """When the target may be tried again, if the run left it resting in back-off (1.1)."""
    problems: list[str] = Field(default_factory=list[str])
    """Things the run worked around, for people (1.1): e.g. a corrupt memory document it
    ignored and set aside."""
    tests: TestEvidence | None = None
    """What the repository's tests said about the change (1.2): command and its source,
    backend, base and after summaries, fail-to-pass tests, tampering flags. `None` when
    the run checked no change (a decomposition, a decline, an idle or failed run)."""
    diff: str = ""
    """The change the run proposed, as a unified diff against its base (2.3): the last
    change a try submitted (the accepted one, when a try was accepted), whether or not
    it was committed, cut to `DIFF_CHARS` characters with a note of what was left out.
    Empty when the run proposed no change (a decomposition, a decline, an earlier
    record)."""

    @property
    def duration_seconds(self) -> float:
        """Wall time from start to finish."""
        return (self.finished_at - self.started_at).total_seconds()

    @property
    def first_try_verified(self) -> bool:
        """Whether try number 1 passed the verifier."""
        return any(a.number == 1 and a.verified for a in self.attempts)

    @property
    def verified(self) -> bool:
        """Whether any try passed the verifier."""
        return any(a.verified for a in self.attempts)
