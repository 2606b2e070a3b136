"""Lessons: the distiller's itemized, provenance-carrying advice to the agents."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, NonNegativeInt

from agent_loop_common.records._exposure import WorkKind
from agent_loop_common.records._parts import Role

__all__ = ["Lesson", "LessonBook", "LessonState", "OutcomeMetric"]


class LessonState(StrEnum):
    """Where a lesson stands in the measurement of its effect (since 1.3).

    `proving` while the evidence is undecided; `proven` once an always-valid test says
    it helps (it keeps a small holdout so decay is noticed); `no_effect` once enough
    exposures exclude a useful gain, `harmful` once the test says it hurts. The last two
    retire the lesson (it moves to `LessonBook.retired` with its reason).
    """

    PROVING = "proving"
    PROVEN = "proven"
    NO_EFFECT = "no_effect"
    HARMFUL = "harmful"


class OutcomeMetric(StrEnum):
    """The binary outcomes a lesson's effect is measured on (higher is better)."""

    FIRST_TRY_TESTS = "first_try_tests"
    """The sandbox's verdict on try 1 was `passed` (no evidence never counts as a pass)."""
    FIRST_TRY_VERIFIED = "first_try_verified"
    """The verifier accepted try 1."""
    NO_REGRESSION = "no_regression"
    """The accepted change broke no test that passed on the base."""
    MERGED = "merged"
    """The pull request was merged (closed for workflow reasons does not count as 0)."""
    CLEAN_REVIEW = "clean_review"
    """The pull request needed no reviewer fix commit."""


class Lesson(BaseModel):
    """One piece of advice, with the runs it was learned from."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    id: str
    """Stable id, quoted by `RunRecord.lesson_ids` when the lesson was in context."""
    text: str
    """The advice as shown to the agent (untrusted context, budgeted by the digest)."""
    roles: list[Role] = Field(default_factory=list[Role])
    """Agents the lesson applies to; empty means all."""
    source_run_ids: list[str] = Field(default_factory=list[str])
    """Runs whose records taught this lesson (provenance)."""
    created_at: AwareDatetime
    """When the lesson was first written."""
    updated_at: AwareDatetime
    """When the lesson was last edited."""
    source_refs: list[str] = Field(default_factory=list[str])
    """Issues and pull requests those runs worked on or opened (`issue-12`, `pr-15`), so a
    human can check the lesson against what happened (since 1.1)."""
    hits: NonNegativeInt = 0
    """How many runs have backed the lesson so far (evidence added, confirmed or merged in);
    0 in books written before 1.1."""
    last_seen_at: AwareDatetime | None = None
    """When evidence last backed the lesson; a lesson unseen for long expires (since 1.1;
    `None`: use `updated_at`)."""
    general: bool = False
    """The distiller judged it true of any repository, not only the one it was learned
    in: with `AGENT_LOOP_REPOS` the other repositories' runs read it too (since 1.2)."""
    kinds: list[WorkKind] = Field(default_factory=list[WorkKind])
    """Work kinds the lesson applies to; empty means all (since 1.3). Narrowing a lesson
    that rarely applies sets this."""
    target_metric: OutcomeMetric | None = None
    """The outcome the lesson means to improve; `None`: `first_try_tests` (since 1.3)."""
    state: LessonState = LessonState.PROVING
    """The measured verdict on the lesson's effect (since 1.3)."""
    retired_at: AwareDatetime | None = None
    """When it was retired; set only on lessons in `LessonBook.retired` (since 1.3)."""
    retired_reason: str = ""
    """Why it was retired (the effect and its interval, a reviewer's edit, ...)."""
    replaced_by: str = ""
    """The id of the lesson that superseded it, if any."""

    @property
    def metric(self) -> OutcomeMetric:
        """The metric its effect is decided on."""
        return self.target_metric or OutcomeMetric.FIRST_TRY_TESTS

    def applies_to(self, role: Role, kind: WorkKind | None) -> bool:
        """Whether its scope matches a run of `role` on work of `kind`."""
        if self.roles and role not in self.roles:
            return False
        return not self.kinds or kind is None or kind in self.kinds


class LessonBook(BaseModel):
    """The whole `context/lessons.json` document."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    schema_version: str = "1.3"
    """Same versioning rule as `RunRecord` (1.1 added the lessons' provenance refs, hits
    and last-seen time; 1.2 `general`; 1.3 kinds, target metric, state and `retired`)."""
    lessons: list[Lesson] = Field(default_factory=list[Lesson])
    """Current lessons, most useful first."""
    retired: list[Lesson] = Field(default_factory=list[Lesson])
    """Lessons taken out of use, newest last, each with `retired_at` and
    `retired_reason`: nothing is deleted silently (bounded by the distiller)."""

    def for_role(self, role: Role) -> list[Lesson]:
        """Lessons that apply to `role`."""
        return [lesson for lesson in self.lessons if not lesson.roles or role in lesson.roles]

    def retire(
        self, lesson_id: str, reason: str, at: datetime, *, replaced_by: str = "", keep: int = 100
    ) -> LessonBook:
        """The book with `lesson_id` moved to `retired` with its reason (kept, not deleted).

        `keep` bounds `retired` (the oldest fall off) so the book every run reads stays
        small. An unknown id returns the book unchanged.
        """
        found = next((x for x in self.lessons if x.id == lesson_id), None)
        if found is None:
            return self
        gone = found.model_copy(
            update={"retired_at": at, "retired_reason": reason, "replaced_by": replaced_by}
        )
        retired = [*(x for x in self.retired if x.id != lesson_id), gone][-keep:]
        lessons = [x for x in self.lessons if x.id != lesson_id]
        return self.model_copy(update={"lessons": lessons, "retired": retired})
