"""Grades: what became of the work, decided later by the distiller from GitHub."""

from __future__ import annotations

from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, ConfigDict, NonNegativeInt

from agent_loop_common.records._parts import Target

__all__ = ["Grade", "GradeState"]


class GradeState(StrEnum):
    """The fate of an agent PR."""

    MERGED = "merged"
    CLOSED_UNMERGED = "closed_unmerged"
    OPEN = "open"


class Grade(BaseModel):
    """The distiller's verdict on one agent PR; re-graded while it is still open."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    schema_version: str = "1.0"
    """Same versioning rule as `RunRecord`."""
    target: Target
    """The graded pull request (`kind="pr"`)."""
    state: GradeState
    """Merged, closed without merging, or still open."""
    review_rounds: NonNegativeInt = 0
    """Reviewer runs that pushed a fix or commented on this PR so far."""
    graded_at: AwareDatetime
    """When the distiller looked."""
    opened_at: AwareDatetime | None = None
    """When the PR was opened; decides which monthly grades key holds the grade."""
    run_id: str = ""
    """The builder run that opened the PR, linking the grade to lessons in that run."""
