"""Entry points: `python -m agent_loop_reviewer`, the task's summary and its HTML report."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from agent_loop_common.records import Outcome, Role, RunRecord, Target, TargetKind, TraceStep
from agent_loop_common.report import run_report_html
from agent_loop_common.runtime import summarize
from agent_loop_reviewer.__main__ import main
from agent_loop_reviewer.env import IDLE_NOTE, SCHEDULE, env, reviewer_tick
from agent_loop_testing import GitHubEmulator


def test_a_config_error_exits_2_naming_the_variable(monkeypatch, capsys) -> None:
    for name in ("AGENT_LOOP_REPO", "GITHUB_TOKEN", "GITHUB_APP_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir("/")  # no .env file around
    assert main([]) == 2
    assert "AGENT_LOOP_REPO" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.usefixtures("quiet_logs")  # `main` configures logging for the process
def test_one_idle_tick_from_the_command_line(
    emulator: GitHubEmulator, tmp_path, monkeypatch, capsys
) -> None:
    with emulator.serve() as url:
        monkeypatch.setenv("GITHUB_API_URL", url)
        monkeypatch.setenv("GITHUB_TOKEN", emulator.bot_token)
        monkeypatch.setenv("AGENT_LOOP_REPO", emulator.full_name)
        monkeypatch.setenv("AGENT_LOOP_HOME", str(tmp_path / "home"))
        assert main([]) == 0
        assert json.loads(capsys.readouterr().out)["outcome"] == "idle"
        # Named, so not idle: says why (as the builder does); a PR that is not there was
        # never reached, which exits 2 (nothing was attempted).
        assert main(["--pr", "999"]) == 2
    summary = json.loads(capsys.readouterr().out)
    assert summary["outcome"] == "preflight_failed"
    assert summary["error"] == f"PR #999 does not exist in {emulator.full_name}"


def test_the_environment_and_schedule() -> None:
    assert env.name == "reviewer"
    (trigger,) = reviewer_tick.triggers
    assert trigger.name == "reviewer_schedule"
    assert trigger.automation.expression == SCHEDULE == "*/5 * * * *"  # type: ignore[union-attr]
    assert set(trigger.inputs or {}) == {"trigger_time"}
    assert reviewer_tick.report
    assert "AGENT_LOOP_HOME" not in (env.env_vars or {})  # local paths never travel


def test_summary_and_report_escape_what_others_wrote() -> None:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    record = RunRecord(
        run_id="20260301T120000Z-0123abcd",
        role=Role.REVIEWER,
        target=Target(kind=TargetKind.PR, number=7, title="<script>x</script>", url="https://g/7"),
        outcome=Outcome.ERROR,
        started_at=now,
        finished_at=now,
        trace=[TraceStep(tool="read_file", args='{"path": "<b>"}', ok=False, ms=3)],
        error="<img src=x>",
    )
    out = summarize(Role.REVIEWER, record, idle=IDLE_NOTE)
    assert out.outcome == "error"
    assert out.target == "pr#7"
    assert out.error == "<img src=x>"
    assert summarize(Role.REVIEWER, None, idle=IDLE_NOTE).idle
    html = run_report_html(record, heading="Reviewer", idle="Idle: nothing claimed.")
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert "<img" not in html
    assert "&lt;b&gt;" in html
    assert "nothing claimed" in run_report_html(
        None, heading="Reviewer", idle="Idle: nothing claimed."
    )
