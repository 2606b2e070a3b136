"""The scheduled task end to end in Flyte local mode: real HTTP to the emulator, durable
write actions, the record in the local MemoryStore, the same path as `python -m`."""

from __future__ import annotations

import pathlib

import pytest

from agent_loop_builder import run_once
from agent_loop_builder.__main__ import main
from agent_loop_common.records import Outcome
from agent_loop_common.runtime import local_memory
from agent_loop_common.settings import load_settings
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import GitHubEmulator, ScriptedModel, call, turn
from agent_loop_testing.pytest_plugin import Install, Stored

pytestmark = pytest.mark.slow

CORE = "def make_widget(name, colour='blue'):\n    return {'name': name, 'colour': colour}\n"
TEST = "def test_colour():\n    assert True\n"


def _model() -> ScriptedModel:
    return ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="src/widgets/core.py", content=CORE)]),
            turn(tool_calls=[call("submit_implementation", title="Colour", body="b", summary="s")]),
            turn("Done."),
            turn(
                tool_calls=[call("stage_file", path="tests/test_colour.py", content=TEST)],
                expect_in_messages="Add a test.",
            ),
            turn(tool_calls=[call("submit_implementation", title="Colour", body="b", summary="s")]),
            turn("Done."),
        ],
        routes={
            VERIFIER_MARKER: [
                turn('{"verified": false, "notes": "Add a test."}'),
                turn('{"verified": true, "notes": "Tested now."}'),
            ]
        },
    )


def test_builder_tick_in_local_mode(
    emulator: GitHubEmulator,
    install: Install,
    stored: Stored,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    number = emulator.add_issue("Add a colour", "Widgets need a colour.")
    model = install(_model())

    with emulator.serve() as url:
        monkeypatch.setenv("GITHUB_API_URL", url)
        monkeypatch.setenv("GITHUB_TOKEN", emulator.bot_token)
        monkeypatch.setenv("AGENT_LOOP_REPO", emulator.full_name)
        monkeypatch.setenv("AGENT_LOOP_HOME", str(tmp_path / "home"))
        settings = load_settings()
        summary = run_once(target=number, settings=settings)
        idle = run_once(settings=settings)

    model.assert_finished()
    assert summary.outcome == "opened_pr"
    assert summary.target == f"issue#{number}"
    assert idle.idle
    branch = "agent-loop/issue-1-add-a-colour"
    assert emulator.file_at(branch, "src/widgets/core.py") == CORE.encode()
    assert emulator.file_at(branch, "tests/test_colour.py") == TEST.encode()
    pull = emulator.pull(int(summary.pr_url.rsplit("/", 1)[1]))
    assert "Tested now." in (pull.body or "")
    record = stored(summary.run_id, memory=local_memory(settings))  # in exactly one bucket
    assert record.outcome is Outcome.OPENED_PR
    assert [a.verified for a in record.attempts] == [False, True]
    assert record.links.pr_url == summary.pr_url
    assert record.trace
    assert record.github.requests == summary.github_requests
    # the durable actions' own requests are merged into the tick's record
    assert record.github.by_route["POST /repos/{owner}/{repo}/pulls"] == 1
    assert record.github.by_route["POST /graphql (2 mutations)"] == 1  # branch and commit


def test_main_reports_configuration_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AGENT_LOOP_REPO", raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", "t")
    assert main([]) == 2
    assert "AGENT_LOOP_REPO" in capsys.readouterr().err
