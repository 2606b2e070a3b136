"""Additive counts over run records and grades.

Metrics are ratios of these counts. Keeping the counts (not the ratios) is what lets the
distiller store daily rollups and still compute exact metrics over any window later:
the tally of a window is the sum of its days' tallies.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Self

from pydantic import BaseModel, ConfigDict, NonNegativeFloat, NonNegativeInt

from agent_loop_common.records import Grade, GradeState, Outcome, Role, RunRecord, TargetKind

__all__ = [
    "IDLE_OUTCOMES",
    "SUCCESS_OUTCOMES",
    "UNCOUNTED_OUTCOMES",
    "VERIFIED_ROLES",
    "GradeTally",
    "Tally",
    "tally_grades",
    "tally_records",
]

SUCCESS_OUTCOMES: frozenset[Outcome] = frozenset(
    {
        Outcome.OPENED_PR,
        Outcome.OPENED_ISSUES,
        Outcome.PUSHED_FIX,
        Outcome.REVIEWED_CLEAN,
        Outcome.COMMENTED,
        Outcome.DISTILLED,
    }
)
"""Outcomes that delivered what the run set out to do."""

IDLE_OUTCOMES: frozenset[Outcome] = frozenset({Outcome.SKIPPED, Outcome.BACKED_OFF})
"""Outcomes of runs that reached their target and did not work on it (the report's
"declined"): an issue or PR asked for by number and refused (not trusted, in back-off,
already handled), one found done once claimed, or an issue the builder's model
declined. They are not in the success denominator: declining work is neither a success
nor a failure."""

UNCOUNTED_OUTCOMES: frozenset[Outcome] = frozenset({Outcome.INTERRUPTED, Outcome.PREFLIGHT_FAILED})
"""Outcomes that say nothing about the agents' work, so no rate counts them: a run the
operator stopped (`interrupted`: counted in `runs`, in no rate) and a run that never
reached its target (`preflight_failed`: not even in `runs`, counted apart)."""


VERIFIED_ROLES: frozenset[Role] = frozenset({Role.BUILDER, Role.REVIEWER})
"""The roles whose tries a verifier judges. Only their runs count in the verification
figures (`with_attempts`, `verified`, `first_try_verified`): the distiller's one try is
its pass, not a verdict, and counting it made every distiller pass "verified first try"."""

_VERIFICATION = ("with_attempts", "verified", "first_try_verified")


class _Additive(BaseModel):
    """Counts that add field by field: the tally of the union of two disjoint sets."""

    def __add__(self, other: Self) -> Self:
        mine = self.model_dump()
        theirs = other.model_dump()
        return self.model_validate({k: mine[k] + theirs[k] for k in mine})


class Tally(_Additive):
    """Counts and sums over a set of run records. `a + b` tallies both sets."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    runs: NonNegativeInt = 0
    """Records of runs that reached their target (claimed something, or were asked for one target and refused it); `interrupted`
    ones included, `preflight_failed` ones not."""
    worked: NonNegativeInt = 0
    """Of `runs`, those whose outcome is neither in `IDLE_OUTCOMES` nor `interrupted`."""
    successes: NonNegativeInt = 0
    """Records whose outcome is in `SUCCESS_OUTCOMES`."""
    errors: NonNegativeInt = 0
    """Records with outcome `error`."""
    budget_exceeded: NonNegativeInt = 0
    """Records with outcome `budget_exceeded`."""
    interrupted: NonNegativeInt = 0
    """Of `runs`, those the operator stopped (outcome `interrupted`): in no rate."""
    preflight_failed: NonNegativeInt = 0
    """Records of runs that never reached their target (outcome `preflight_failed`): a
    wrong repository, a refused token, a missing issue, an unreachable model. Not in
    `runs` and in no rate; their GitHub requests still count in the sums below."""
    with_attempts: NonNegativeInt = 0
    """Records of a verified role (`VERIFIED_ROLES`: builder, reviewer) with at least one
    try (the verification denominators), interrupted runs left out (their last try was
    cut short)."""
    verified: NonNegativeInt = 0
    """Of `with_attempts`, records where some try passed the verifier."""
    first_try_verified: NonNegativeInt = 0
    """Of `with_attempts`, records where try 1 passed the verifier."""
    attempts: NonNegativeInt = 0
    """Tries over all records."""
    opened_prs: NonNegativeInt = 0
    """Records with outcome `opened_pr`."""
    tokens_in: NonNegativeInt = 0
    """Prompt tokens over all records."""
    tokens_out: NonNegativeInt = 0
    """Completion tokens over all records."""
    tokens_cache_read: NonNegativeInt = 0
    """Of `tokens_in`, those read from the provider's prompt cache (0 in rollups and
    records older than schema 2.2, which did not count them)."""
    tokens_cache_write: NonNegativeInt = 0
    """Of `tokens_in`, those written to the provider's prompt cache."""
    llm_calls: NonNegativeInt = 0
    """Model calls over all records."""
    cost_usd: NonNegativeFloat = 0.0
    """Estimated cost over all records."""
    github_requests: NonNegativeInt = 0
    """GitHub requests over all records."""
    github_not_modified: NonNegativeInt = 0
    """GitHub 304 answers over all records."""
    issue_to_pr_seconds: NonNegativeFloat = 0.0
    """Sum of (PR opened - issue created) over `opened_pr` records that know the latter."""
    issue_to_pr_count: NonNegativeInt = 0
    """How many records contributed to `issue_to_pr_seconds`."""


def unverified(tally: Tally) -> Tally:
    """`tally` without verification counts: the tally of a role no verifier judges, as
    counted in rollups folded before `VERIFIED_ROLES` (see `total_tally`)."""
    return tally.model_copy(update=dict.fromkeys(_VERIFICATION, 0))


def tally_records(records: Iterable[RunRecord]) -> Tally:
    """Count one set of records."""
    counts = dict.fromkeys(Tally.model_fields, 0)
    sums: dict[str, float] = {"cost_usd": 0.0, "issue_to_pr_seconds": 0.0}
    for r in records:
        counts["tokens_in"] += r.usage.tokens_in
        counts["tokens_out"] += r.usage.tokens_out
        counts["tokens_cache_read"] += r.usage.tokens_cache_read
        counts["tokens_cache_write"] += r.usage.tokens_cache_write
        counts["llm_calls"] += r.usage.llm_calls
        counts["github_requests"] += r.github.requests
        counts["github_not_modified"] += r.github.not_modified
        sums["cost_usd"] += r.usage.cost_usd
        if r.outcome is Outcome.PREFLIGHT_FAILED:
            counts["preflight_failed"] += 1
            continue
        counts["runs"] += 1
        counts["attempts"] += len(r.attempts)
        if r.outcome is Outcome.INTERRUPTED:
            counts["interrupted"] += 1
            continue
        counts["worked"] += r.outcome not in IDLE_OUTCOMES
        counts["successes"] += r.outcome in SUCCESS_OUTCOMES
        counts["errors"] += r.outcome is Outcome.ERROR
        counts["budget_exceeded"] += r.outcome is Outcome.BUDGET_EXCEEDED
        if r.role in VERIFIED_ROLES:
            counts["with_attempts"] += bool(r.attempts)
            counts["verified"] += r.verified
            counts["first_try_verified"] += r.first_try_verified
        if r.outcome is Outcome.OPENED_PR:
            counts["opened_prs"] += 1
            created = r.target.created_at
            if created is not None and r.finished_at >= created:
                sums["issue_to_pr_seconds"] += (r.finished_at - created).total_seconds()
                counts["issue_to_pr_count"] += 1
    return Tally.model_validate({**counts, **sums})


class GradeTally(_Additive):
    """Counts over grades (one per agent PR). `a + b` tallies both sets."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    graded: NonNegativeInt = 0
    """PRs with a grade."""
    merged: NonNegativeInt = 0
    """Grades in state `merged`."""
    closed_unmerged: NonNegativeInt = 0
    """Grades in state `closed_unmerged`."""
    open: NonNegativeInt = 0
    """Grades in state `open`."""
    review_rounds: NonNegativeInt = 0
    """Sum of review rounds over all graded PRs."""
    decompositions: NonNegativeInt = 0
    """Decomposition grades (`target.kind == "issue"`); not counted in the PR states."""
    sub_issues: NonNegativeInt = 0
    """Sub-issues opened by those decompositions."""
    sub_issues_closed: NonNegativeInt = 0
    """Of those, the ones closed so far."""
    closed_excused: NonNegativeInt = 0
    """Of `closed_unmerged`, those a trusted person gave a reason (duplicate, superseded,
    not planned): not the agent's failure."""
    threads_checked: NonNegativeInt = 0
    """Decided PRs whose review threads were read."""
    left_unresolved: NonNegativeInt = 0
    """Of those, PRs decided with a review thread left unresolved."""
    ci_checked: NonNegativeInt = 0
    """Decided PRs whose first head had a CI result (`passed` or `failed`)."""
    ci_green: NonNegativeInt = 0
    """Of those, the ones whose first CI result passed."""
    revert_decided: NonNegativeInt = 0
    """Merged PRs whose 30-day revert check is decided."""
    reverted: NonNegativeInt = 0
    """Of those, merges reverted on the default branch within 30 days."""


def tally_grades(grades: Iterable[Grade]) -> GradeTally:
    """Count grades. Give each PR once (its latest grade).

    PR grades count towards the PR states and review rounds; decomposition grades
    (`target.kind == "issue"`) count only towards the sub-issue figures.
    """
    counts = dict.fromkeys(GradeTally.model_fields, 0)
    for g in grades:
        if g.target.kind is TargetKind.ISSUE:
            counts["decompositions"] += 1
            counts["sub_issues"] += len(set(g.sub_issues))
            counts["sub_issues_closed"] += len(set(g.sub_issues_closed) & set(g.sub_issues))
            continue
        counts["graded"] += 1
        counts["review_rounds"] += g.review_rounds
        match g.state:
            case GradeState.MERGED:
                counts["merged"] += 1
            case GradeState.CLOSED_UNMERGED:
                counts["closed_unmerged"] += 1
                reason = g.close_reason
                counts["closed_excused"] += reason is not None and not reason.agent_failure
            case GradeState.OPEN:
                counts["open"] += 1
        if g.unresolved_threads is not None:
            counts["threads_checked"] += 1
            counts["left_unresolved"] += g.unresolved_threads > 0
        if g.first_ci in ("passed", "failed"):
            counts["ci_checked"] += 1
            counts["ci_green"] += g.first_ci == "passed"
        if g.state is GradeState.MERGED and g.reverted is not None:
            counts["revert_decided"] += 1
            counts["reverted"] += g.reverted
    return GradeTally.model_validate(counts)
