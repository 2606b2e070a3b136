"""`distiller_tick` in Flyte local mode: the GitHub emulator served on loopback, memory
under AGENT_LOOP_HOME, a scripted model installed in-process, the report on disk."""

from __future__ import annotations

import asyncio
import json
import pathlib
from collections.abc import Generator
from typing import Any

import flyte
import pytest

from agent_loop_common.llm import Budget, UsageMeter
from agent_loop_common.memory import MemoryLocation, read_context, write_run_record
from agent_loop_common.records import Outcome, Role
from agent_loop_common.runtime import (
    TickSummary,
    local_memory,
    local_raw_data_path,
    run_tick,
    use_model,
)
from agent_loop_common.settings import Settings, load_settings
from agent_loop_distiller import estimate_tokens, run_once
from agent_loop_distiller.env import distiller_tick
from agent_loop_testing import GitHubEmulator, ScriptedModel, call, serve_for_cli, turn

pytestmark = pytest.mark.slow

EVIL = "<script>alert('title')</script>"


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> Generator[GitHubEmulator]:
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "# widgets\n"})
    with serve_for_cli(
        monkeypatch,
        emulator,
        tmp_path / "home",
        AGENT_LOOP_RECORD_RETENTION_DAYS="2",
        AGENT_LOOP_DIGEST_TOKEN_BUDGET="300",
    ):
        yield emulator


@pytest.fixture
def settings(served: GitHubEmulator) -> Settings:
    return load_settings()


@pytest.fixture
def model() -> Generator[dict[str, ScriptedModel]]:
    holder = {"model": ScriptedModel([], name="no model")}

    def provide(role: Role, purpose: str, usage: UsageMeter, budget: Budget) -> Any:
        assert role is Role.DISTILLER
        current = holder["model"]
        current.usage, current.budget = usage, budget
        return current

    with use_model(provide):
        yield holder


def lesson_turns(run_id: str, text: str) -> list[Any]:
    return [
        turn(
            tool_calls=[
                call("add_lesson", text=text, evidence_run_ids=[run_id], roles=[]).expecting(
                    "Added"
                )
            ]
        ),
        turn(tool_calls=[call("finish", summary="One lesson.")]),
        turn("Done."),
    ]


def run_with_report(settings: Settings) -> tuple[TickSummary, str]:
    """Like `run_task`, keeping the run to read its report back."""
    flyte.init(
        org=settings.flyte_org,
        project=settings.flyte_project,
        domain=settings.flyte_domain,
        local_persistence=True,
    )
    raw = local_raw_data_path(settings)
    raw.mkdir(parents=True, exist_ok=True)
    run = flyte.with_runcontext(mode="local", raw_data_path=str(raw)).run(distiller_tick)
    reports = list(pathlib.Path(run.url).glob("*/report.html"))
    summary = TickSummary.model_validate(run.outputs()[0])
    return summary, reports[0].read_text() if reports else ""


def files_of(root: pathlib.Path) -> dict[str, int]:
    return {
        str(p): p.stat().st_mtime_ns
        for p in root.rglob("*")
        if p.is_file() and "-idle-" not in str(p) and "-etags-" not in str(p)
    }


def agent_pr(emulator: GitHubEmulator, issue: int, title: str) -> tuple[int, str]:
    branch = f"agent-loop/issue-{issue}"
    emulator.push(branch, {f"f{issue}.py": "x = 1\n"}, author=emulator.bot, message="fix")
    number = emulator.open_pull(branch, title=title, author=emulator.bot)
    return number, f"https://github.com/{emulator.full_name}/pull/{number}"


def record(run_id: str, **kw: Any) -> Any:
    from datetime import UTC, datetime, timedelta

    from agent_loop_common.records import Attempt, Links, RunRecord, Target, TargetKind

    finished = datetime.now(UTC) - timedelta(minutes=3)
    return RunRecord(
        run_id=run_id,
        role=kw.get("role", Role.BUILDER),
        target=Target(kind=TargetKind.ISSUE, number=kw.get("issue", 1), title=kw.get("title", "t")),
        outcome=kw.get("outcome", Outcome.OPENED_PR),
        started_at=finished - timedelta(minutes=1),
        finished_at=finished,
        attempts=[Attempt(number=1, verified=kw.get("verified", True), notes=kw.get("notes", ""))],
        links=Links(pr_url=kw.get("pr_url", "")),
    )


def test_records_become_lessons_then_an_idle_tick_costs_nothing(
    served: GitHubEmulator, settings: Settings, model: dict[str, ScriptedModel]
) -> None:
    location: MemoryLocation = local_memory(settings)
    _, url = agent_pr(served, 2, "Widget sizes")
    rejected = record(
        "b-rej", issue=1, title=EVIL, outcome=Outcome.REJECTED, verified=False, notes="No test."
    )
    asyncio.run(write_run_record(location, rejected))
    asyncio.run(write_run_record(location, record("b-pr", issue=2, pr_url=url)))
    model["model"] = ScriptedModel(lesson_turns("b-rej", "Add a test with every change."))

    summary, report = run_with_report(settings)

    model["model"].assert_finished()
    assert summary.outcome == Outcome.DISTILLED.value
    assert summary.details["ingested"] == "2"
    for tab in ("Metrics", "Lessons", "Runs", "Memory"):
        assert f">{tab}</li>" in report
    assert EVIL not in report
    assert "&lt;script&gt;alert(&#x27;title&#x27;)&lt;/script&gt;" in report
    context = asyncio.run(read_context(location))
    (lesson,) = context.lessons.lessons
    assert (lesson.source_run_ids, lesson.source_refs) == (["b-rej"], ["issue-1"])
    assert estimate_tokens(context.digest) <= settings.digest_token_budget
    assert "-> PR #" in context.digest

    before = files_of(local_raw_data_path(settings))
    model["model"] = ScriptedModel([], name="must not be called")
    assert run_once().idle
    assert model["model"].calls == []
    assert files_of(local_raw_data_path(settings)) == before


def test_failure_keeps_the_ledger_and_grading_reaches_the_metrics(
    served: GitHubEmulator, settings: Settings, model: dict[str, ScriptedModel]
) -> None:
    location = local_memory(settings)
    merged, merged_url = agent_pr(served, 1, "Sizes")
    closed, closed_url = agent_pr(served, 2, "Rename")
    asyncio.run(write_run_record(location, record("b-1", issue=1, pr_url=merged_url)))
    asyncio.run(write_run_record(location, record("b-2", issue=2, pr_url=closed_url)))
    model["model"] = ScriptedModel([turn(error=RuntimeError("provider down"))])

    failed = run_tick(settings, distiller_tick)

    assert failed.outcome == Outcome.ERROR.value
    assert "provider down" in failed.error
    ledger = pathlib.Path(location.remote_path(location.keys.ledger))
    assert not ledger.exists()

    model["model"] = ScriptedModel(lesson_turns("b-1", "Keep PRs small."))
    assert run_tick(settings, distiller_tick).outcome == Outcome.DISTILLED.value
    assert ledger.exists()

    served.merge_pull(merged)
    served.close_pull(closed)
    model["model"] = ScriptedModel(
        [
            turn(
                tool_calls=[call("finish", summary="Noted.")],
                expect_in_messages="closed WITHOUT merging",
            ),
            turn("Done."),
        ]
    )
    summary, report = run_with_report(settings)
    model["model"].assert_finished()
    assert summary.outcome == Outcome.DISTILLED.value
    assert "50.0%" in report  # merged / (merged + closed unmerged)
    assert "closed without merge" in asyncio.run(read_context(location)).digest


def test_two_ticks_at_once_distill_once(
    served: GitHubEmulator, settings: Settings, model: dict[str, ScriptedModel]
) -> None:
    location = local_memory(settings)
    asyncio.run(
        write_run_record(
            location, record("b-1", outcome=Outcome.REJECTED, verified=False, notes="No test.")
        )
    )
    model["model"] = ScriptedModel(lesson_turns("b-1", "Add tests."))
    flyte.init(org=settings.flyte_org, project=settings.flyte_project, domain=settings.flyte_domain)
    raw = str(local_raw_data_path(settings))

    async def both() -> list[Any]:
        runner = flyte.with_runcontext(mode="local", raw_data_path=raw)
        runs = await asyncio.gather(runner.run.aio(distiller_tick), runner.run.aio(distiller_tick))
        return [TickSummary.model_validate(r.outputs()[0]) for r in runs]

    summaries = asyncio.run(both())

    model["model"].assert_finished()
    outcomes = sorted(s.outcome for s in summaries)
    assert outcomes.count(Outcome.DISTILLED.value) == 1
    (lesson,) = asyncio.run(read_context(location)).lessons.lessons
    assert lesson.source_run_ids == ["b-1"]


def test_python_m_runs_one_tick_and_prints_its_summary(
    served: GitHubEmulator, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent_loop_distiller.__main__ import main

    assert main([]) == 0
    # An empty memory: the first tick ever sets the ledger's watermark, with no model.
    assert json.loads(capsys.readouterr().out)["details"] == {"tick": "bookkeeping"}
    assert main([]) == 0
    assert json.loads(capsys.readouterr().out)["details"] == {"tick": "idle"}
