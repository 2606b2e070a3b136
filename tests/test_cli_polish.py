"""The CLI's small promises: version, help that shows the options, a status that points
at the demo, and a summary whose fields always come in the same order."""

from __future__ import annotations

import io
import os
import pathlib
from importlib import metadata

import pytest

from agent_loop import cli
from agent_loop.demo import DEMO_MARKER
from agent_loop.live import print_end
from agent_loop_common.records import Outcome, Role
from agent_loop_common.runtime import Pause, TickSummary, summarize, summarize_many


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith(("GITHUB_", "AGENT_LOOP_")) and key != "AGENT_LOOP_ALLOW_MODEL_REQUESTS":
            monkeypatch.delenv(key)


def _exit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 0
    return capsys.readouterr().out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit(["--version"], capsys) == f"agent-loop {metadata.version('agent-loop')}\n"


def test_run_help_shows_every_agents_options(capsys: pytest.CaptureFixture[str]) -> None:
    out = _exit(["run", "--help"], capsys)
    for option in ("--issue N", "--pr N", "--json", "--remote", "--config FILE", "--home DIR"):
        assert option in out, option
    builder = next(line for line in out.splitlines() if line.startswith("  builder    --"))
    assert "--issue N" in builder
    assert "--pr" not in builder


def test_run_agent_help_documents_home_and_config(capsys: pytest.CaptureFixture[str]) -> None:
    out = " ".join(_exit(["run", "reviewer", "--help"], capsys).split())  # argparse wraps
    assert "sets AGENT_LOOP_HOME" in out
    assert "infra/flyte/remote.yaml" in out
    assert "--repo OWNER/NAME work in this repository only" in out


def test_deploy_help_describes_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    out = _exit(["deploy", "--help"], capsys)
    assert "Deploy one agent on its own" in out
    assert "--dry-run" in out
    assert "--config infra/flyte/remote.yaml" in " ".join(out.split())


def test_status_without_runs_points_at_the_demos_memory(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["status"]) == 0
    assert "--home .agent-loop/demo" not in capsys.readouterr().out  # no demo ran here
    demo = tmp_path / ".agent-loop" / "demo"
    demo.mkdir(parents=True)
    (demo / DEMO_MARKER).write_text("")
    assert cli.main(["status"]) == 0
    out = capsys.readouterr().out
    assert "No runs recorded yet" in out
    assert "agent-loop status --home .agent-loop/demo" in out


def test_the_summary_prints_its_fields_in_a_fixed_order() -> None:
    tick = TickSummary(
        role=Role.DISTILLER,
        outcome=Outcome.DISTILLED,
        report="/home/u/.agent-loop/reports/distiller-r9.html",
        github_requests=4,
        tokens=300,
        llm_calls=2,
        tries=1,
        note="ingested 3 record(s)",
        error="",
        run_id="r9",
        target="repo",
        details={"tick": "distilled", "ingested": "3"},
    )
    out = io.StringIO()
    cli._print_summary("distiller", tick, out)  # pyright: ignore[reportPrivateUsage]
    keys = [line.split(":")[0].strip() for line in out.getvalue().splitlines()[1:]]
    empty = ("error", "tests")  # empty fields are not printed
    assert keys == [*(k for k in cli.SUMMARY_FIELDS if k not in empty), "tick", "ingested"]
    # and every field of the summary has its place
    shown_elsewhere = {"event", "role", "outcome", "target", "pr_url", "issue_urls", "details"}
    shown_elsewhere |= {"repo", "runs"}  # the runs of a tick that worked several, each a line
    # on the last line, with the duration (agent_loop.live.totals_line): the cached share
    # next to the tokens, the model calls next to the cost
    shown_elsewhere |= {"tokens", "tokens_cache_read", "cost_usd", "llm_calls"}
    assert set(TickSummary.model_fields) - shown_elsewhere == set(cli.SUMMARY_FIELDS)


def test_the_text_summary_states_tokens_and_model_calls_once() -> None:
    """The summary block printed `tokens:`, `tokens_cache_read:` and `llm_calls:`, and the
    last line said the same again: `took ... · 1,234 tokens · $0.01 (4 model calls)`.
    The last line (the one docs/watch.md shows) is the only one now."""
    tick = TickSummary(
        role=Role.BUILDER,
        outcome=Outcome.OPENED_PR,
        run_id="r1",
        target="issue#5",
        pr_url="http://x/pull/6",
        tries=1,
        llm_calls=4,
        tokens=1234,
        tokens_cache_read=900,
        cost_usd=0.0123,
        github_requests=12,
    )
    out = io.StringIO()
    summary = cli._print_summary  # pyright: ignore[reportPrivateUsage]
    print_end("builder", tick, "text", 23.4, full=summary, out=out)
    lines = out.getvalue().splitlines()
    last = "  took 23.4s · 1,234 tokens (900 cached) · $0.01 (4 model calls)"
    assert [line for line in lines if "token" in line or "call" in line] == [last]
    assert lines[-1] == last


def test_a_tick_of_several_runs_prints_one_line_per_run() -> None:
    def run(repo: str, n: int, outcome: Outcome, error: str = "") -> TickSummary:
        return TickSummary(
            role=Role.BUILDER,
            outcome=outcome,
            run_id=f"r{n}",
            target=f"issue#{n}",
            repo=repo,
            error=error,
            github_requests=10,
        )

    tick = summarize_many(
        Role.BUILDER,
        [run("a/x", 1, Outcome.OPENED_PR), run("a/y", 2, Outcome.ERROR, "NotFound")],
        idle="no eligible issue",
    )
    assert tick.github_requests == 20
    assert tick.failed
    out = io.StringIO()
    cli._print_summary("builder", tick, out)  # pyright: ignore[reportPrivateUsage]
    lines = out.getvalue().splitlines()
    assert lines[0] == "builder: opened_pr on issue #1"
    assert lines[-2:] == ["  - a/x issue #1: opened_pr", "  - a/y issue #2: error (NotFound)"]


def test_a_tick_held_back_by_the_reserve_says_why_next_to_the_others() -> None:
    held = summarize(
        Role.BUILDER,
        None,
        idle="no eligible issue",
        paused=Pause(note="GitHub rate limit: 90 of 5000 left", until=None),
    )
    failed = TickSummary(
        role=Role.BUILDER, outcome=Outcome.ERROR, target="repo", repo="a/gone", error="NotFound"
    )
    assert summarize_many(Role.BUILDER, [held], idle="x") is held
    assert summarize_many(Role.BUILDER, [held, held], idle="x").paused

    tick = summarize_many(Role.BUILDER, [failed, held], idle="no eligible issue")
    assert tick.failed
    assert tick.note == "1 run (a/gone repo: error)"
    out = io.StringIO()
    cli._print_summary("builder", tick, out)  # pyright: ignore[reportPrivateUsage]
    assert out.getvalue().splitlines()[-1] == "  - paused: GitHub rate limit: 90 of 5000 left"
