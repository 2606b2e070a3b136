"""The shared test harness: settings and a runtime over the emulator, a swappable model
slot, records read back from memory, and logs kept as data then given back."""

from __future__ import annotations

import logging
import pathlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import structlog
from flyte.ai.agents import LLMMessage

from agent_loop_common.llm import Budget, UsageMeter
from agent_loop_common.logs import configure_logging
from agent_loop_common.memory import MemoryLocation, write_run_record
from agent_loop_common.records import Outcome, Role, RunRecord, Target, TargetKind
from agent_loop_common.runtime import use_model
from agent_loop_testing import (
    GitHubEmulator,
    ModelSlot,
    ScriptedModel,
    emulator_runtime,
    emulator_settings,
    quiet_logs,
    stored_record,
    turn,
)
from agent_loop_testing._facade import EMULATOR_BASE_URL

MOMENT = datetime(2026, 3, 10, 14, 30, tzinfo=UTC)


def _record(run_id: str) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        role=Role.BUILDER,
        target=Target(kind=TargetKind.ISSUE, number=1, title="t"),
        outcome=Outcome.OPENED_PR,
        started_at=MOMENT - timedelta(minutes=1),
        finished_at=MOMENT,
    )


def test_settings_act_as_the_bot_on_the_emulated_repo(
    emulator: GitHubEmulator, tmp_path: pathlib.Path
) -> None:
    settings = emulator_settings(emulator, tmp_path / "home", max_tries=2)
    assert settings.repo == emulator.full_name
    assert settings.github_token is not None
    assert settings.github_token.get_secret_value() == emulator.bot_token
    assert settings.github_api_url == EMULATOR_BASE_URL
    assert settings.home == tmp_path / "home"
    assert settings.max_tries == 2


async def test_the_runtime_talks_to_the_emulator_and_keeps_the_clock(
    emulator: GitHubEmulator, tmp_path: pathlib.Path
) -> None:
    number = emulator.add_issue("Add a widget", "please")
    settings = emulator_settings(emulator, tmp_path / "home")
    async with emulator_runtime(
        settings, emulator, Role.REVIEWER, memory_root=tmp_path / "mem", clock=lambda: MOMENT
    ) as rt:
        issues = await rt.github.list_issues()
        assert [i.number for i in issues] == [number]
        assert rt.role is Role.REVIEWER
        assert rt.clock() == MOMENT
        assert rt.memory.root == str(tmp_path / "mem")


async def test_the_slot_answers_with_the_latest_model_and_meters_it(
    emulator: GitHubEmulator, tmp_path: pathlib.Path
) -> None:
    settings = emulator_settings(emulator, tmp_path / "home")
    slot = ModelSlot()
    first = ScriptedModel([turn("one")], name="first")
    second = ScriptedModel([turn("two", prompt_tokens=7)], name="second")
    seen: list[str] = []

    async def watching(
        model: str, system: str, messages: list[dict[str, Any]], tools: Any
    ) -> LLMMessage:
        seen.append(system)
        return await second(model, system, messages, tools)

    with use_model(slot):
        async with emulator_runtime(settings, emulator, Role.BUILDER, memory_root=tmp_path) as rt:
            with pytest.raises(LookupError, match="no model put"):
                rt.call_llm()
            assert slot.put(first) is first
            reply = await rt.call_llm()("m", "sys", [{"role": "user", "content": "hi"}], None)
            assert reply.content == "one"
            assert first.usage is rt.usage
            assert first.budget is rt.budget
            slot.put(second, via=watching)
            reply = await rt.call_llm("verifier")("m", "check", [], None)
            assert reply.content == "two"
            assert second.usage is rt.usage
    assert seen == ["check"]
    assert rt.usage.llm_calls == 2
    first.assert_finished()
    second.assert_finished()


def test_a_slot_with_a_default_model_answers_before_anything_is_put() -> None:
    idle = ScriptedModel([], name="no model")
    usage, budget = UsageMeter(), Budget(max_tokens=10)
    assert ModelSlot(idle)(Role.DISTILLER, "agent", usage, budget) is idle
    assert idle.usage is usage
    assert idle.budget is budget


async def test_stored_record_reads_back_what_a_run_wrote(
    emulator: GitHubEmulator, tmp_path: pathlib.Path
) -> None:
    location = MemoryLocation.from_settings(
        emulator_settings(emulator, tmp_path / "home"), str(tmp_path)
    )
    here, elsewhere = _record("run-here"), _record("run-late")
    await write_run_record(location, here, now=MOMENT)
    await write_run_record(location, elsewhere, now=MOMENT + timedelta(hours=2))

    assert stored_record(location, "run-here", finished_at=MOMENT) == here
    assert stored_record(location, "run-here") == here
    assert stored_record(location, "run-late") == elsewhere
    with pytest.raises(FileNotFoundError):
        stored_record(location, "run-late", finished_at=MOMENT)
    with pytest.raises(LookupError, match="in 0 runs buckets"):
        stored_record(location, "never-ran")


def test_quiet_logs_keeps_events_and_gives_the_configuration_back() -> None:
    before = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    with quiet_logs() as logs:
        structlog.get_logger("t").warning("expected failure", why="testing")
        configure_logging("json", "DEBUG")  # what `python -m` does to the process
    assert logs == [{"event": "expected failure", "why": "testing", "log_level": "warning"}]
    assert structlog.get_config() == before
    assert root.handlers == handlers
    assert root.level == level


def test_serve_for_cli_replaces_the_developers_environment_with_the_emulators(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    import os

    import httpx

    from agent_loop_testing import GitHubHost, serve_for_cli

    monkeypatch.setenv("AGENT_LOOP_REPO", "someone/real-repo")
    monkeypatch.setenv("AGENT_LOOP_MAX_TRIES", "9")
    monkeypatch.setenv("GITHUB_APP_ID", "123")
    emulator = GitHubEmulator()
    with serve_for_cli(monkeypatch, emulator, tmp_path / "home", AGENT_LOOP_SANDBOX="off") as url:
        assert os.environ["GITHUB_API_URL"] == url
        assert os.environ["GITHUB_TOKEN"] == emulator.bot_token
        assert os.environ["AGENT_LOOP_REPO"] == emulator.full_name
        assert os.environ["AGENT_LOOP_HOME"] == str(tmp_path / "home")
        assert os.environ["AGENT_LOOP_SANDBOX"] == "off"
        assert "AGENT_LOOP_MAX_TRIES" not in os.environ
        assert "GITHUB_APP_ID" not in os.environ
        answer = httpx.get(f"{url}/repos/{emulator.full_name}", headers={
            "Authorization": f"token {emulator.bot_token}"})  # fmt: skip
        assert answer.json()["full_name"] == emulator.full_name

    host = GitHubHost(["acme/api", "acme/web"])
    with serve_for_cli(monkeypatch, host, tmp_path / "home"):
        assert os.environ["AGENT_LOOP_REPOS"] == "acme/api,acme/web"
        assert "AGENT_LOOP_REPO" not in os.environ
    with serve_for_cli(monkeypatch, emulator, tmp_path / "home", repo_variable="AGENT_LOOP_REPOS"):
        assert os.environ["AGENT_LOOP_REPOS"] == emulator.full_name
        assert "AGENT_LOOP_REPO" not in os.environ
