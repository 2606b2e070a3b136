"""Which lessons a run could have seen, which it did see, and by what draw (schema 1.4).

A lesson's effect is measured by randomization: when a lesson applies to a run, it is
held out with a known probability, decided by a hash of (run id, lesson id) so a replay
of the run draws the same. The run's record keeps one `LessonExposure` per candidate
lesson, so the distiller can compare the runs that were shown a lesson with those that
were not, among the runs where it applied. Pure models, no I/O.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["LessonExposure", "WorkKind"]


class WorkKind(StrEnum):
    """The kind of work a run did, decided before any lesson is shown (a stratum).

    Task kind explains more of an agent PR's fate than the agent does, so effects are
    compared within a kind, never across kinds.
    """

    FEATURE = "feature"
    """An issue asking for new behaviour (the default for an unlabelled issue)."""
    BUG = "bug"
    """An issue labelled as a bug."""
    DOCS = "docs"
    """An issue labelled as documentation."""
    DECOMPOSITION = "decomposition"
    """A specification issue the builder may split (labelled as a specification)."""
    REVIEW_FIX = "review_fix"
    """A reviewer pass over an agent pull request."""


class LessonExposure(BaseModel):
    """One candidate lesson of one run: did it apply, was it drawn, was it shown."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    lesson_id: str
    """The lesson (`Lesson.id`)."""
    applicable: bool
    """Its scope matched the work (role and work kind); only applicable lessons are drawn."""
    held_out: bool = False
    """The draw withheld it: no model of the run saw it (the control arm)."""
    shown: bool = False
    """It was in the prompt (drawn in and within the context budget)."""
    holdout: float = Field(default=0.0, ge=0.0, le=1.0)
    """The probability it was held out with (`AGENT_LOOP_LESSON_HOLDOUT`, or a proven
    lesson's smaller holdout); 0 when measurement is off or it did not apply."""
    note: str = ""
    """Why an applicable lesson drawn in was not shown anyway (`budget`), for people."""
