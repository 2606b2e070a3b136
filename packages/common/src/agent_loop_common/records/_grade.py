"""Grades: what became of the work, decided later by the distiller from GitHub."""

from __future__ import annotations

from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, NonNegativeInt

from agent_loop_common.records._parts import Target

__all__ = ["Grade", "GradeState"]


class GradeState(StrEnum):
    """The fate of an agent PR (or of a decomposition, see `Grade`)."""

    MERGED = "merged"
    CLOSED_UNMERGED = "closed_unmerged"
    OPEN = "open"


class Grade(BaseModel):
    """The distiller's verdict on one agent PR; re-graded while it is still open.

    A decomposition (a builder run that opened sub-issues) is graded too, with
    `target.kind == "issue"` (the parent issue): `open` while any sub-issue is open,
    `merged` once every sub-issue is closed. Metrics count PR states from PR grades
    only, and sub-issue completion from decomposition grades.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: str = "1.1"
    """Same versioning rule as `RunRecord` (1.1 added the optional fields below `run_id`)."""
    target: Target
    """The graded pull request (`kind="pr"`), or the decomposed issue (`kind="issue"`)."""
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
    review_run_ids: list[str] = Field(default_factory=list[str])
    """The reviewer runs counted in `review_rounds`, so re-reading the same records (a
    pass that died before its ledger was saved) never counts a round twice."""
    issue_number: NonNegativeInt | None = None
    """The issue the builder run worked on (the PR resolves it, or it was decomposed)."""
    sub_issues: list[int] = Field(default_factory=list[int])
    """Decompositions: the sub-issues the builder opened."""
    sub_issues_closed: list[int] = Field(default_factory=list[int])
    """Decompositions: the sub-issues closed so far."""
