"""`distiller_tick` in Flyte local mode grades agent PRs from GitHub over HTTP (the
emulator served on loopback) and folds their outcomes into the effect of the lesson
their builder runs saw, each exactly once across ticks:

- PR A merged with a review thread left unresolved and its first check failed, then
  reverted through a revert PR merged 3 days later;
- PR B closed as a duplicate by a maintainer (not the run's failure);
- PR C closed by the owner after a stranger's "duplicate" comment (untrusted: a failure).
"""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_loop_common.llm import Budget, UsageMeter
from agent_loop_common.memory import EFFECTS_PATH, month_of, read_grades, write_run_record
from agent_loop_common.records import (
    Attempt,
    CloseReason,
    Grade,
    LessonExposure,
    Links,
    Outcome,
    OutcomeMetric,
    Role,
    RunRecord,
    Target,
    TargetKind,
    WorkKind,
)
from agent_loop_common.runtime import local_memory, run_tick, use_model
from agent_loop_common.settings import Settings, load_settings
from agent_loop_distiller import DISTILLER_MARKER, EffectBook
from agent_loop_distiller.env import distiller_tick
from agent_loop_testing import GitHubEmulator, ScriptedModel, call, serve_for_cli, turn

pytestmark = pytest.mark.slow

M = OutcomeMetric


@pytest.fixture
def emulator() -> GitHubEmulator:
    emu = GitHubEmulator(start=datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1))
    emu.seed_files({"README.md": "# widgets\n"})
    emu.add_user("maria", permission="maintain")
    emu.add_user("sam", permission="read")
    return emu


@pytest.fixture
def settings(
    emulator: GitHubEmulator, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> Generator[Settings]:
    with serve_for_cli(
        monkeypatch, emulator, tmp_path / "home", AGENT_LOOP_RECORD_RETENTION_DAYS="2"
    ):
        yield load_settings()


def _tick(settings: Settings) -> str:
    model = ScriptedModel(
        routes={DISTILLER_MARKER: [turn(tool_calls=[call("finish", summary="Nothing.")]),
                                   turn("Done.")]},
        name="distiller",
    )  # fmt: skip

    def provide(role: Role, purpose: str, usage: UsageMeter, budget: Budget) -> Any:
        model.usage, model.budget = usage, budget
        return model

    with use_model(provide):
        return run_tick(settings, distiller_tick).outcome


def test_local_ticks_grade_pr_outcomes_and_fold_each_once(
    settings: Settings, emulator: GitHubEmulator
) -> None:
    lesson = f"{settings.repo}#L-0000aaaa"
    location = local_memory(settings)
    prs: dict[str, int] = {}
    heads: dict[str, str] = {}
    for n, name in enumerate("ABC", start=1):
        branch = f"agent-loop/issue-{n}"
        heads[name] = emulator.push(branch, {f"fix_{n}.py": "X = 1\n"}, author=emulator.bot,
                                    message="fix")  # fmt: skip
        prs[name] = emulator.open_pull(branch, title=f"Fix {n}", author=emulator.bot)
        finished = datetime.now(UTC) - timedelta(minutes=3)
        record = RunRecord(
            run_id=f"b-{name}", role=Role.BUILDER,
            target=Target(kind=TargetKind.ISSUE, number=n, title=f"Issue {n}"),
            outcome=Outcome.OPENED_PR, started_at=finished - timedelta(minutes=1),
            finished_at=finished, attempts=[Attempt(number=1, verified=True)],
            repo=settings.repo, work_kind=WorkKind.BUG,
            links=Links(pr_url=f"https://github.com/{settings.repo}/pull/{prs[name]}"),
            exposures=[LessonExposure(lesson_id=lesson, applicable=True, shown=True, holdout=0.2)],
        )  # fmt: skip
        asyncio.run(write_run_record(location, record))
    emulator.set_check_run(heads["A"], "ci", conclusion="failure")
    emulator.add_review(prs["A"], author="maria", comments=[("fix_1.py", 1, "Rename X.")])
    merge = emulator.merge_pull(prs["A"], by="maria")
    emulator.add_comment(prs["B"], "Duplicate of #9.", author="maria")
    emulator.close_pull(prs["B"], by="maria")
    emulator.add_comment(prs["C"], "duplicate!!", author="sam")
    emulator.close_pull(prs["C"], by=emulator.owner)

    def grades() -> dict[str, Grade]:
        month = month_of(datetime.now(UTC).date())
        by_number = {g.target.number: g for g in asyncio.run(read_grades(location, month))}
        return {name: by_number[n] for name, n in prs.items()}

    def counts() -> dict[M, list[int]]:
        ledger = pathlib.Path(location.remote_path(location.keys.ledger))
        book = EffectBook.model_validate_json((ledger / EFFECTS_PATH).read_text())
        metrics = book.lessons[lesson].metrics
        return {m: s.strata[f"{settings.repo}|bug"] for m, s in metrics.items()}

    assert _tick(settings) == Outcome.DISTILLED.value
    graded = grades()
    a = graded["A"]
    assert (a.unresolved_threads, a.first_ci, a.merge_sha, a.reverted) == (1, "failed", merge, None)
    assert (graded["B"].close_reason, graded["B"].closed_by) == (CloseReason.DUPLICATE, "maria")
    assert graded["C"].close_reason is CloseReason.NO_REASON
    first = counts()
    assert first[M.MERGED] == [2, 1, 0, 0]  # A merged, C failed; B is not counted
    assert first[M.NO_UNRESOLVED_THREADS] == [2, 1, 0, 0]  # A left one open; B excused
    assert first[M.FIRST_CI_GREEN] == [1, 0, 0, 0]  # B and C had no CI: no outcome
    assert M.NOT_REVERTED not in first

    # Three days later a maintainer reverts A through a revert PR; ticks see it open,
    # then merged.
    emulator.advance_clock(timedelta(days=3))
    emulator.push(
        "revert-a", {"fix_1.py": None}, author="maria",
        message=f'Revert "Fix 1"\n\nThis reverts commit {merge}.',
    )  # fmt: skip
    revert_pr = emulator.open_pull("revert-a", title='Revert "Fix 1"', author="maria")
    _tick(settings)
    assert grades()["A"].reverted is None
    emulator.merge_pull(revert_pr, by="maria")
    assert _tick(settings) == Outcome.DISTILLED.value
    assert grades()["A"].reverted is True
    second = counts()
    assert second[M.NOT_REVERTED] == [1, 0, 0, 0]
    assert {m: c for m, c in second.items() if m is not M.NOT_REVERTED} == first
