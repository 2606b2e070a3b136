"""`run_entry`: the shared body of `python -m agent_loop_<role>`."""

from __future__ import annotations

import argparse
import json

import pytest

from agent_loop_common.records import Outcome, Role
from agent_loop_common.runtime import TickSummary, run_entry, summarize
from agent_loop_common.settings import Settings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m agent_loop_test")
    parser.add_argument("--pr", type=int, default=None)
    return parser


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch, quiet_logs: object) -> None:
    """The minimum configuration; logs kept as data (run_entry configures logging for the
    process, which the plugin's `quiet_logs` gives back afterwards)."""
    monkeypatch.setenv("GITHUB_TOKEN", "t")
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgets")
    monkeypatch.delenv("GITHUB_APP_ID", raising=False)


@pytest.mark.usefixtures("configured")
def test_the_tick_gets_the_flags_and_settings_and_its_summary_is_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seen: list[tuple[int | None, str]] = []

    def tick(args: argparse.Namespace, settings: Settings) -> TickSummary:
        seen.append((args.pr, settings.repo))
        return TickSummary(role=Role.REVIEWER, run_id="r1", outcome=Outcome.PUSHED_FIX)

    assert run_entry(_parser(), tick, argv=["--pr", "7"]) == 0
    assert seen == [(7, "acme/widgets")]
    printed = json.loads(capsys.readouterr().out)
    assert (printed["run_id"], printed["outcome"]) == ("r1", "pushed_fix")


@pytest.mark.usefixtures("configured")
def test_an_idle_tick_prints_the_agents_idle_note(capsys: pytest.CaptureFixture[str]) -> None:
    idle = summarize(Role.REVIEWER, None, idle="Idle.")
    assert run_entry(_parser(), lambda args, settings: idle, argv=[]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["outcome"], printed["note"]) == ("idle", "Idle.")


def test_a_config_error_exits_2_before_any_tick(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AGENT_LOOP_REPO", "GITHUB_TOKEN", "GITHUB_APP_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir("/")  # no .env file around

    def tick(args: argparse.Namespace, settings: Settings) -> TickSummary:
        raise AssertionError("no tick without settings")

    assert run_entry(_parser(), tick, argv=[]) == 2
    captured = capsys.readouterr()
    assert "AGENT_LOOP_REPO" in captured.err
    assert captured.out == ""
