"""Reading a decided PR's facts as outcomes (pure): the first CI result, the trusted
close reason, a revert within 30 days, and their folding into lesson effects once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent_loop_common.github import CheckRun, Comment, CommitStatus, IssueEvent, PathCommit, User
from agent_loop_common.records import (
    CloseReason,
    Grade,
    GradeState,
    LessonExposure,
    OutcomeMetric,
    Target,
    TargetKind,
)
from agent_loop_distiller import EffectBook, PullOutcomes, pr_outcomes
from agent_loop_distiller._effect import EffectPolicy
from agent_loop_distiller._measure import fold_pull_outcomes
from agent_loop_distiller._pull_facts import close_reason, closer, first_ci, revert_of

T0 = datetime(2026, 5, 1, 12, tzinfo=UTC)
M = OutcomeMetric


def user(login: str) -> User:
    return User(login=login, id=len(login), type="User")


def check(conclusion: str | None, status: str = "completed") -> CheckRun:
    return CheckRun(
        id=1, name="ci", head_sha="a" * 40, status=status, conclusion=conclusion,
        output_title="", output_summary="", output_text="",
    )  # fmt: skip


def status(state: str) -> CommitStatus:
    return CommitStatus(context="ci", state=state, description="", target_url="")


@pytest.mark.parametrize(
    ("runs", "statuses", "expected"),
    [
        ([check("success")], [], "passed"),
        ([check("success"), check("failure")], [], "failed"),
        ([check("timed_out")], [status("success")], "failed"),
        ([], [status("error")], "failed"),
        ([], [status("success")], "passed"),
        ([check(None, "in_progress")], [status("pending")], "none"),
        ([], [], "none"),
    ],
)
def test_first_ci(runs: list[CheckRun], statuses: list[CommitStatus], expected: str) -> None:
    assert first_ci(runs, statuses) == expected


def event(kind: str, login: str, at: datetime, label: str | None = None, n: int = 1) -> IssueEvent:
    return IssueEvent(id=n, event=kind, actor=user(login), label=label, created_at=at)


def comment(login: str, body: str, at: datetime, n: int = 1) -> Comment:
    return Comment(id=n, body=body, user=user(login), created_at=at, updated_at=at, html_url="")


TRUSTED = {"maria"}


def trusted(login: str) -> bool:
    return login in TRUSTED


def test_a_trusted_label_gives_the_reason_an_untrusted_one_does_not() -> None:
    closed = [event("closed", "maria", T0, n=9)]
    by_maria = [event("labeled", "maria", T0, "Superseded", 2), *closed]
    assert close_reason(by_maria, [], T0, trusted) is CloseReason.SUPERSEDED
    by_sam = [event("labeled", "sam", T0, "duplicate", 2), *closed]
    assert close_reason(by_sam, [], T0, trusted) is CloseReason.NO_REASON
    removed = [*by_maria, event("unlabeled", "sam", T0 + timedelta(seconds=1), "superseded", 3)]
    assert close_reason(removed, [], T0, trusted) is CloseReason.NO_REASON
    assert closer(by_maria) == "maria"


def test_only_trusted_comments_near_the_close_give_a_reason() -> None:
    said = [
        comment("sam", "duplicate of #3", T0, 1),
        comment("maria", "Won't fix: not wanted.", T0 - timedelta(minutes=5), 2),
    ]
    assert close_reason([], said, T0, trusted) is CloseReason.NOT_PLANNED
    stale = [comment("maria", "Is this a duplicate?", T0 - timedelta(days=2))]
    assert close_reason([], stale, T0, trusted) is CloseReason.NO_REASON
    latest = [
        comment("maria", "duplicate?", T0 - timedelta(minutes=2), 1),
        comment("maria", "Replaced by #12.", T0, 2),
    ]
    assert close_reason([], latest, T0, trusted) is CloseReason.SUPERSEDED
    assert (
        close_reason([], [comment("sam", "superseded", T0)], T0, trusted) is CloseReason.NO_REASON
    )


def commit(sha: str, message: str, at: datetime) -> PathCommit:
    return PathCommit(sha=sha, parents=(), author_login="maria", message=message, committed_at=at)


def test_reverts_by_sha_or_by_revert_pr_within_30_days() -> None:
    merge = "abc1234" + "0" * 33
    args = {"merge_sha": merge, "number": 7, "repo": "acme/widgets", "merged_at": T0}
    by_sha = commit("r1", "Revert x\n\nThis reverts commit abc1234.", T0 + timedelta(days=3))
    assert revert_of([by_sha], **args) == by_sha
    by_pull = commit("r2", 'Revert "Fix"\n\nReverts acme/widgets#7', T0 + timedelta(days=1))
    assert revert_of([by_sha, by_pull], **args) == by_pull  # the oldest revert
    other_pr = commit("r3", "Reverts acme/widgets#71\n", T0 + timedelta(days=1))
    other_repo = commit("r4", "Reverts evil/widgets#7", T0 + timedelta(days=1))
    too_late = commit("r5", f"This reverts commit {merge}.", T0 + timedelta(days=31))
    before = commit("r6", f"This reverts commit {merge}.", T0 - timedelta(days=1))
    assert revert_of([other_pr, other_repo, too_late, before], **args) is None


def grade(**kw: object) -> Grade:
    base: dict[str, object] = {
        "target": Target(kind=TargetKind.PR, number=7),
        "state": GradeState.MERGED,
        "graded_at": T0,
        "run_id": "b-7",
        "repo": "acme/widgets",
        "exposures": [LessonExposure(lesson_id="L", applicable=True, shown=True, holdout=0.2)],
    }
    return Grade.model_validate({**base, **kw})


def test_the_pr_vector_counts_only_decided_parts() -> None:
    assert pr_outcomes(grade(state=GradeState.OPEN, unresolved_threads=0)).binary() == {
        M.MERGED: None,
        M.NO_REVIEW_FIX: None,
        M.NO_UNRESOLVED_THREADS: None,
        M.FIRST_CI_GREEN: None,
        M.NOT_REVERTED: None,
    }
    duplicate = grade(
        state=GradeState.CLOSED_UNMERGED, close_reason=CloseReason.DUPLICATE,
        unresolved_threads=1, first_ci="failed",
    )  # fmt: skip
    excused = pr_outcomes(duplicate).binary()
    assert (excused[M.MERGED], excused[M.NO_UNRESOLVED_THREADS]) == (None, None)
    assert (excused[M.FIRST_CI_GREEN], excused[M.NO_REVIEW_FIX]) == (False, True)
    silent = grade(state=GradeState.CLOSED_UNMERGED, close_reason=CloseReason.NO_REASON)
    assert pr_outcomes(silent).binary()[M.MERGED] is False
    merged = pr_outcomes(grade(unresolved_threads=2, first_ci="passed", reverted=True))
    assert merged == PullOutcomes(
        True, 0, merged.hours_to_merge, None, unresolved_threads=2, first_ci="passed", reverted=True
    )
    assert merged.binary()[M.NOT_REVERTED] is False
    assert merged.binary()[M.NO_UNRESOLVED_THREADS] is False


def test_each_run_and_metric_is_folded_once_and_marks_leave_with_the_window() -> None:
    effects = EffectBook()
    policy = EffectPolicy()
    merged = grade(unresolved_threads=0, merge_sha="a" * 40)
    assert fold_pull_outcomes(effects, {}, [merged], policy) == {"L"}
    assert fold_pull_outcomes(effects, {}, [merged], policy) == set()
    stats = effects.lessons["L"].metrics
    assert stats[M.MERGED].strata["acme/widgets|unknown"] == [1, 1, 0, 0]
    assert M.NOT_REVERTED not in stats
    assert fold_pull_outcomes(effects, {}, [merged.model_copy(update={"reverted": False})], policy)
    assert stats[M.NOT_REVERTED].strata["acme/widgets|unknown"] == [1, 1, 0, 0]
    assert stats[M.MERGED].strata["acme/widgets|unknown"] == [1, 1, 0, 0]
    assert effects.lessons["L"].applicable == 0  # the run is counted by its record
    assert len(effects.pull_folded["b-7"]) == 5  # settled, first CI unknown included
    fold_pull_outcomes(effects, {}, [], policy)  # the grade left the window
    assert effects.pull_folded == {}


def test_not_reverted_is_decided_only_after_30_days_without_a_revert() -> None:
    from agent_loop_distiller import regrade

    merged = grade(merge_sha="a" * 40, merged_at=T0)
    stored = {merged.target.ref: merged}

    def settled(now: datetime, commits: list[PathCommit] | None) -> Grade:
        result = regrade(stored, [], {}, set(), {}, now, commits, "acme/widgets")
        return {g.target.ref: g for g in result.current}[merged.target.ref]

    assert settled(T0 + timedelta(days=10), []).reverted is None
    assert settled(T0 + timedelta(days=31), None).reverted is None  # not listed this tick
    assert settled(T0 + timedelta(days=31), []).reverted is False
    revert = commit("r", f"This reverts commit {'a' * 40}.", T0 + timedelta(days=29))
    found = settled(T0 + timedelta(days=31), [revert])
    assert (found.reverted, found.revert_sha) == (True, "r")
