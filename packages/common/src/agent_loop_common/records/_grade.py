"""Grades: what became of the work, decided later by the distiller from GitHub."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, NonNegativeInt

from agent_loop_common.records._exposure import LessonExposure, WorkKind
from agent_loop_common.records._parts import Target

__all__ = ["CheckResult", "CloseReason", "Grade", "GradeState"]

CheckResult = Literal["passed", "failed", "none"]
"""The first CI result on a PR's first head: every finished check run and status
passed, one failed (or errored, timed out, was cancelled), or none reported."""


class GradeState(StrEnum):
    """The fate of an agent PR (or of a decomposition, see `Grade`)."""

    MERGED = "merged"
    CLOSED_UNMERGED = "closed_unmerged"
    OPEN = "open"


class CloseReason(StrEnum):
    """Why a PR was closed without merging, as a trusted person said it (since 1.2).

    Only a maintainer's (trusted) label or comment gives a reason; anything else, and
    silence, is `no_reason`, which counts as the agent's failure: an agent PR a person
    closed unmerged was not accepted unless someone trusted said it was not its fault.
    """

    NO_REASON = "no_reason"
    """No trusted reason: counted as the agent's failure."""
    DUPLICATE = "duplicate"
    """Another PR or issue already did it (a `duplicate` label or a trusted comment)."""
    SUPERSEDED = "superseded"
    """Replaced by another PR (a `superseded` label, or a trusted comment naming it)."""
    NOT_PLANNED = "not_planned"
    """The work is not wanted (`wontfix`, `invalid`, `not planned`): not the run's fault."""

    @property
    def agent_failure(self) -> bool:
        """Whether the close counts against the run (and the lessons it saw)."""
        return self is CloseReason.NO_REASON


class Grade(BaseModel):
    """The distiller's verdict on one agent PR; re-graded while it is still open.

    A decomposition (a builder run that opened sub-issues) is graded too, with
    `target.kind == "issue"` (the parent issue): `open` while any sub-issue is open,
    `merged` once every sub-issue is closed. Metrics count PR states from PR grades
    only, and sub-issue completion from decomposition grades.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: str = "1.2"
    """Same versioning rule as `RunRecord` (1.1 added the optional fields below `run_id`;
    1.2 the PR-level outcome vector from `repo` on)."""
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
    repo: str = ""
    """The builder run's repository (`owner/name`), for the effect's stratum (1.2)."""
    work_kind: WorkKind | None = None
    """The builder run's kind of work, for the effect's stratum (1.2)."""
    exposures: list[LessonExposure] = Field(default_factory=list[LessonExposure])
    """The builder run's applicable lessons, shown or held out: the PR's outcomes are
    folded into their effects once decided (1.2)."""
    closed_by: str = ""
    """Who closed the PR (merged or not), when known (1.2)."""
    close_reason: CloseReason | None = None
    """Closed unmerged: the trusted reason, or `no_reason` (1.2; `None`: not closed
    unmerged, or graded before 1.2)."""
    unresolved_threads: NonNegativeInt | None = None
    """Review threads left unresolved when the PR was merged or closed (1.2; `None`: not
    looked at)."""
    first_head_sha: str = ""
    """The PR's first commit: the head the builder pushed (1.2)."""
    first_ci: CheckResult | None = None
    """The first CI result on that head (1.2; `None`: not looked at)."""
    merged_at: AwareDatetime | None = None
    """When GitHub merged it (1.2)."""
    merge_sha: str = ""
    """The merge (or squash) commit on the default branch (1.2)."""
    reverted: bool | None = None
    """A commit on the default branch reverted the merge within 30 days (True), 30
    days passed without one (False), or not decided yet (`None`) (1.2)."""
    revert_sha: str = ""
    """The reverting commit, when one was found (1.2)."""
    review_fix_run_ids: list[str] = Field(default_factory=list[str])
    """The reviewer runs among `review_run_ids` that pushed a fix commit (1.2): the
    `no_review_fix` outcome counts these, not comments."""
