"""Lessons: the distiller's itemized, provenance-carrying advice to the agents."""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, NonNegativeInt

from agent_loop_common.records._parts import Role

__all__ = ["Lesson", "LessonBook"]


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


class LessonBook(BaseModel):
    """The whole `context/lessons.json` document."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    schema_version: str = "1.2"
    """Same versioning rule as `RunRecord` (1.1 added the lessons' provenance refs, hits
    and last-seen time; 1.2 `general`)."""
    lessons: list[Lesson] = Field(default_factory=list[Lesson])
    """Current lessons, most useful first."""

    def for_role(self, role: Role) -> list[Lesson]:
        """Lessons that apply to `role`."""
        return [lesson for lesson in self.lessons if not lesson.roles or role in lesson.roles]
