"""`agent-loop run --json` prints only JSON lines on stdout, even when litellm answered:
one per progress event, then the tick's summary as the last line.

A real tick through the real CLI: the GitHub emulator served on loopback, and the model
reached through litellm over HTTP (`AGENT_LOOP_MODEL=openai/scripted`,
`AGENT_LOOP_API_BASE` pointing at an OpenAI-compatible server on loopback that a
`ScriptedModel` answers). litellm used to print `LiteLLM completion() model=...` on
stdout for every call, and each of its warnings twice in two formats.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from agent_loop import cli
from agent_loop_common.llm import ALLOW_MODEL_REQUESTS_ENV
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import GitHubEmulator, ScriptedModel, call, serve_chat_model, turn

pytestmark = pytest.mark.slow

CORE = "def make_widget(name, colour='blue'):\n    return {'name': name, 'colour': colour}\n"


@contextmanager
def fresh_process_logging() -> Iterator[None]:
    """The root logger as a new process has it (pytest's capture handlers set aside), so
    records below WARNING reach the handlers the CLI installs, as they do for a user."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    root.handlers.clear()
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def test_a_json_tick_that_called_the_model_through_litellm_prints_only_json_lines(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, capfd: pytest.CaptureFixture[str]
) -> None:
    for key in list(os.environ):
        if key.startswith(("GITHUB_", "AGENT_LOOP_")):
            monkeypatch.delenv(key)
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "# widgets\n", "src/widgets/core.py": "x = 1\n"})
    number = emulator.add_issue("Add a colour", "Widgets need a colour.")
    model = ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="src/widgets/core.py", content=CORE)]),
            turn(tool_calls=[call("submit_implementation", title="Colour", body="b", summary="s")]),
            turn("Done."),
        ],
        routes={VERIFIER_MARKER: [turn('{"verified": true, "notes": "Matches the issue."}')]},
    )
    with emulator.serve() as github_url, serve_chat_model(model) as api_base:
        monkeypatch.setenv("GITHUB_API_URL", github_url)
        monkeypatch.setenv("GITHUB_TOKEN", emulator.bot_token)
        monkeypatch.setenv("AGENT_LOOP_REPO", emulator.full_name)
        monkeypatch.setenv("AGENT_LOOP_HOME", str(tmp_path / "home"))
        monkeypatch.setenv("AGENT_LOOP_MODEL", "openai/scripted")
        monkeypatch.setenv("AGENT_LOOP_API_BASE", api_base)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
        # This one test lets the model call leave the process: to a server on loopback,
        # which the hermetic network guard (still active) allows and nothing else.
        monkeypatch.setenv(ALLOW_MODEL_REQUESTS_ENV, "1")
        with fresh_process_logging():
            code = cli.main(["run", "builder", "--issue", str(number), "--json"])
    out, err = capfd.readouterr()

    model.assert_finished()
    assert len(model.calls) == 4  # three builder turns and the verifier, all over HTTP
    assert code == 0, err
    *events, summary = [json.loads(line) for line in out.splitlines()]
    assert events, out
    assert all(isinstance(e, dict) and "event" in e for e in events)
    assert isinstance(summary, dict)
    assert summary["event"] == "tick.summary"  # keyed like the events, told apart by it
    assert summary["outcome"] == "opened_pr"
    assert summary["llm_calls"] == 4
    report = pathlib.Path(summary["report"])
    assert report == tmp_path / "home" / "reports" / f"builder-{summary['run_id']}.html"
    assert "<th>Model</th><td>openai/scripted</td>" in report.read_text()
    assert "LiteLLM" not in out
    assert "LiteLLM completion()" not in err  # below WARNING: not shown at all
