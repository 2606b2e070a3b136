"""The outcome vector of a run, graded from its record and, later, from GitHub. Pure.

What a run's record says at once (the sandbox's verdict of try 1, tries, the verifier's
rejections, regressions the tests caught) and what the grades say once people decided
(merged or closed and why, review rounds, threads left unresolved, the first CI result,
time to merge, a revert within 30 days). The binary parts are what lesson
effects are measured on (`OutcomeMetric`, higher is better). A run whose first try no
test could judge (no evidence: tests off, no command, not run) has no first-try test
outcome: it never counts as a pass, nor as a failure.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_loop_common.records import (
    CheckResult,
    CloseReason,
    Grade,
    GradeState,
    OutcomeMetric,
    RunRecord,
)

__all__ = [
    "PR_METRICS",
    "PullOutcomes",
    "RunOutcomes",
    "outcomes_of",
    "pr_facts",
    "pr_outcomes",
]

PR_METRICS = frozenset(
    {
        OutcomeMetric.MERGED,
        OutcomeMetric.NO_REVIEW_FIX,
        OutcomeMetric.NO_UNRESOLVED_THREADS,
        OutcomeMetric.FIRST_CI_GREEN,
        OutcomeMetric.NOT_REVERTED,
    }
)
"""The outcomes a run's pull request decides later (`PullOutcomes.binary`)."""


@dataclass(frozen=True, slots=True)
class RunOutcomes:
    """What is known of one run's result (`None`: not known, or not applicable)."""

    first_try_tests: bool | None
    """The sandbox's verdict on try 1: passed (True), failed (False), no evidence (None)."""
    first_try_verified: bool | None
    """The verifier accepted try 1 (None: the run made no try)."""
    tries_used: int
    """Tries the run made."""
    verifier_rejections: int
    """Tries the model verifier rejected (tests passed or did not run)."""
    test_rejections: int
    """Tries the tests rejected: regressions and failures caught before any write."""
    no_regression: bool | None
    """The last checked change broke no test that passed on the base (None: unchecked)."""

    def binary(self) -> dict[OutcomeMetric, bool | None]:
        """The parts lessons are measured on."""
        return {
            OutcomeMetric.FIRST_TRY_TESTS: self.first_try_tests,
            OutcomeMetric.FIRST_TRY_VERIFIED: self.first_try_verified,
            OutcomeMetric.NO_REGRESSION: self.no_regression,
        }


def _verdict(tests_line: str) -> str:
    """`passed` / `failed` / anything else (no evidence) from an attempt's tests line."""
    return tests_line.split(":", 1)[0].strip() if tests_line else ""


def outcomes_of(record: RunRecord) -> RunOutcomes:
    """The outcomes a record shows by itself."""
    first = next((a for a in record.attempts if a.number == 1), None)
    verdict = _verdict(first.tests) if first is not None else ""
    first_tests = True if verdict == "passed" else False if verdict == "failed" else None
    test_rejections = sum(1 for a in record.attempts if _verdict(a.tests) == "failed")
    verifier = sum(1 for a in record.attempts if not a.verified and _verdict(a.tests) != "failed")
    tests = record.tests
    checked = tests is not None and tests.status in ("passed", "failed")
    return RunOutcomes(
        first_try_tests=first_tests,
        first_try_verified=None if first is None else first.verified,
        tries_used=len(record.attempts),
        verifier_rejections=verifier,
        test_rejections=test_rejections,
        no_regression=(not tests.regressions) if checked and tests is not None else None,
    )


@dataclass(frozen=True, slots=True)
class PullOutcomes:
    """What people decided about the pull request a builder run opened."""

    merged: bool | None
    """Merged (True), closed without merging (False), still open (None)."""
    review_rounds: int
    """Reviewer runs that pushed a fix or commented."""
    hours_to_merge: float | None
    """From the run's finish to the grade that saw it merged (an upper bound)."""
    close_reason: CloseReason | None = None
    """Closed unmerged: the trusted reason, or `no_reason` (the agent's failure)."""
    unresolved_threads: int | None = None
    """Review threads left unresolved at the decision (None: not looked at)."""
    first_ci: CheckResult | None = None
    """The first CI result on the head the builder pushed (None: not looked at)."""
    reverted: bool | None = None
    """Reverted within 30 days of the merge (None: undecided, or not merged)."""
    review_fixes: int = 0
    """Reviewer runs that pushed a fix commit."""

    def binary(self) -> dict[OutcomeMetric, bool | None]:
        """The parts lessons are measured on, each only once decided.

        A PR closed unmerged for a trusted reason (duplicate, superseded, not planned)
        has no `merged` and no `no_unresolved_threads` outcome: it was not the run's
        failure, and a review dropped with it says nothing; its first CI result and
        review fixes still count (they judge the work before anyone decided). A merge's
        `not_reverted` is observed once a revert was seen or 30 days passed without one.
        """
        decided = self.merged is not None
        merged = self.merged
        excused = merged is False and self.close_reason is not None
        if excused and self.close_reason is not None:
            excused = not self.close_reason.agent_failure
        merged = None if excused else merged
        threads = None if excused else self.unresolved_threads
        ci = self.first_ci
        return {
            OutcomeMetric.MERGED: merged,
            OutcomeMetric.NO_REVIEW_FIX: (self.review_fixes == 0) if decided else None,
            OutcomeMetric.NO_UNRESOLVED_THREADS: (threads == 0)
            if decided and threads is not None
            else None,
            OutcomeMetric.FIRST_CI_GREEN: None if ci is None or ci == "none" else ci == "passed",
            OutcomeMetric.NOT_REVERTED: None if self.reverted is None else not self.reverted,
        }


def pr_outcomes(grade: Grade) -> PullOutcomes:
    """The outcomes a PR grade shows."""
    merged = {GradeState.MERGED: True, GradeState.CLOSED_UNMERGED: False}.get(grade.state)
    hours = None
    if merged and grade.opened_at is not None:
        end = grade.merged_at or grade.graded_at
        hours = (end - grade.opened_at).total_seconds() / 3600
    return PullOutcomes(
        merged,
        grade.review_rounds,
        hours,
        close_reason=grade.close_reason if merged is False else None,
        unresolved_threads=grade.unresolved_threads,
        first_ci=grade.first_ci,
        reverted=grade.reverted if merged else None,
        review_fixes=len(grade.review_fix_run_ids),
    )


def pr_facts(grade: Grade) -> list[str]:
    """What the PR's decision left, in words for the digest and the distiller's prompt.

    Only fixed phrases and numbers: the reason comes from a trusted person's label or
    comment matched to a category, never from their text.
    """
    facts: list[str] = []
    if grade.state is GradeState.CLOSED_UNMERGED and grade.close_reason is not None:
        if grade.close_reason.agent_failure:
            facts.append("no maintainer gave a reason (counted as the agent's failure)")
        else:
            reason = grade.close_reason.value.replace("_", " ")
            facts.append(f"a maintainer closed it as {reason} (not the agent's failure)")
    if grade.unresolved_threads:
        facts.append(f"{grade.unresolved_threads} review thread(s) left unresolved")
    if grade.first_ci in ("passed", "failed"):
        facts.append(f"first CI {grade.first_ci}")
    if grade.reverted:
        facts.append("reverted on the default branch within 30 days")
    return facts
