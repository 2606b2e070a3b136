"""Rates and per-PR figures derived from tallies, each with a stated denominator.

Rule for empty denominators: a rate or average whose denominator is 0 is `None`
("unknown"), never 0: a week with no runs did not have a 0% success rate. Every rate
that is not `None` is in [0, 1] by construction (numerator is a subset count of its
denominator).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt

from agent_loop_common.metrics._tally import (
    GradeTally,
    Tally,
    tally_grades,
    tally_records,
)
from agent_loop_common.records import Grade, RunRecord

__all__ = ["Metrics", "compute_metrics", "summarize"]

_Rate = Field(default=None, ge=0.0, le=1.0)


class Metrics(BaseModel):
    """Headline figures for a window of runs (and the grades of their PRs)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    runs: NonNegativeInt
    """Runs in the window that reached their target (claimed something, or were asked for one target and refused it), interrupted
    ones included."""
    opened_prs: NonNegativeInt
    """Builder runs that opened a PR."""
    cost_usd: NonNegativeFloat
    """Estimated cost of every run in the window, all roles."""
    tokens: NonNegativeInt
    """Tokens in + out of every run in the window, all roles."""
    cached_input_rate: float | None = _Rate
    """tokens read from the provider's prompt cache / tokens in: the share of the input
    billed at the cached price (about a tenth of the input price)."""
    success_rate: float | None = _Rate
    """successes / worked: runs that delivered, over runs that did not decline the work."""
    verification_rate: float | None = _Rate
    """verified / with_attempts: builder and reviewer runs where some try passed the
    verifier, over those with any try (the distiller has no verifier)."""
    first_try_verification_rate: float | None = _Rate
    """first_try_verified / with_attempts: builder and reviewer runs whose try 1 passed
    the verifier, over those with any try."""
    error_rate: float | None = _Rate
    """errors / (runs - interrupted): runs that ended in an unexpected error, over the
    runs the operator did not stop."""
    interrupted: NonNegativeInt = 0
    """Runs the operator stopped (SIGINT, SIGTERM): in `runs`, in no rate."""
    preflight_failures: NonNegativeInt = 0
    """Runs that never reached their target (a wrong repository, a refused token, a
    missing issue, an unreachable model): not in `runs`, in no rate."""
    cost_per_opened_pr: float | None = None
    """cost_usd / opened_prs: the whole loop's cost (reviews included) per PR opened."""
    tokens_per_opened_pr: float | None = None
    """tokens / opened_prs, with the same all-roles numerator."""
    mean_issue_to_pr_seconds: float | None = None
    """Mean (PR opened - issue created) over opened PRs whose issue time is known."""
    review_rounds_per_pr: float | None = None
    """review_rounds / graded: rounds so far per graded PR (open ones included)."""
    graded_prs: NonNegativeInt = 0
    """PRs with a grade."""
    open_prs: NonNegativeInt = 0
    """Graded PRs still open (undecided: not in the merge denominators)."""
    merged_rate: float | None = _Rate
    """merged / (merged + closed_unmerged): share of decided PRs that were merged."""
    closed_unmerged_rate: float | None = _Rate
    """closed_unmerged / (merged + closed_unmerged); the two rates sum to 1."""
    merged_unless_excused_rate: float | None = _Rate
    """merged / (merged + closed unmerged without a trusted reason): the rate lessons are
    measured on (a maintainer's duplicate or superseded close is not the agent's failure)."""
    unresolved_threads_rate: float | None = _Rate
    """left_unresolved / threads_checked: decided PRs with a review thread left open."""
    first_ci_green_rate: float | None = _Rate
    """ci_green / ci_checked: PRs whose first CI result (the builder's head) passed."""
    revert_rate: float | None = _Rate
    """reverted / revert_decided: merges reverted within 30 days, of those decided."""
    decompositions: NonNegativeInt = 0
    """Graded decompositions (builder runs that opened sub-issues)."""
    sub_issue_completion_rate: float | None = _Rate
    """sub_issues_closed / sub_issues: share of the agents' sub-issues closed so far."""


def _ratio(numerator: float, denominator: float) -> float | None:
    return None if denominator == 0 else numerator / denominator


def summarize(tally: Tally, grades: GradeTally | None = None) -> Metrics:
    """Turn counts into `Metrics`. Works the same on raw records' and rollups' tallies."""
    g = grades or GradeTally()
    tokens = tally.tokens_in + tally.tokens_out
    decided = g.merged + g.closed_unmerged
    return Metrics(
        runs=tally.runs,
        opened_prs=tally.opened_prs,
        cost_usd=tally.cost_usd,
        tokens=tokens,
        cached_input_rate=_ratio(tally.tokens_cache_read, tally.tokens_in),
        success_rate=_ratio(tally.successes, tally.worked),
        verification_rate=_ratio(tally.verified, tally.with_attempts),
        first_try_verification_rate=_ratio(tally.first_try_verified, tally.with_attempts),
        error_rate=_ratio(tally.errors, tally.runs - tally.interrupted),
        interrupted=tally.interrupted,
        preflight_failures=tally.preflight_failed,
        cost_per_opened_pr=_ratio(tally.cost_usd, tally.opened_prs),
        tokens_per_opened_pr=_ratio(tokens, tally.opened_prs),
        mean_issue_to_pr_seconds=_ratio(tally.issue_to_pr_seconds, tally.issue_to_pr_count),
        review_rounds_per_pr=_ratio(g.review_rounds, g.graded),
        graded_prs=g.graded,
        open_prs=g.open,
        merged_rate=_ratio(g.merged, decided),
        closed_unmerged_rate=_ratio(g.closed_unmerged, decided),
        merged_unless_excused_rate=_ratio(g.merged, decided - g.closed_excused),
        unresolved_threads_rate=_ratio(g.left_unresolved, g.threads_checked),
        first_ci_green_rate=_ratio(g.ci_green, g.ci_checked),
        revert_rate=_ratio(g.reverted, g.revert_decided),
        decompositions=g.decompositions,
        sub_issue_completion_rate=_ratio(g.sub_issues_closed, g.sub_issues),
    )


def compute_metrics(records: Iterable[RunRecord], grades: Iterable[Grade] = ()) -> Metrics:
    """`summarize` straight from records and grades."""
    return summarize(tally_records(records), tally_grades(grades))
