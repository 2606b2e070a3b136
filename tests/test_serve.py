"""`agent-loop serve` end to end over real HTTP: a GitHub action becomes a run, no cron tick.

The emulator is served on loopback and delivers signed webhooks to the gateway, served
by uvicorn on loopback with the local runner: each run is `run_agent_once` in Flyte
local mode (the path of `agent-loop run`), with a scripted model. The test acts only
as people do on GitHub (file an issue, comment) and waits for what they would see.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from agent_loop import cli
from agent_loop.serve import LocalRunner, local_app
from agent_loop_common.records import Role
from agent_loop_common.runtime import use_model
from agent_loop_common.settings import Settings, load_settings
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_gateway import Gateway
from agent_loop_testing import (
    GitHubEmulator,
    HeldCall,
    ScriptedModel,
    call,
    serve_asgi,
    serve_chat_model,
    turn,
)

pytestmark = pytest.mark.slow

SECRET = "serve-test-secret"
CALC = "def add(a, b):\n    return a + b\n"
CALC_SUB = CALC + "\n\ndef subtract(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
VERIFIED = '{"verified": true, "notes": "Checked against the request."}'


@dataclass
class Served:
    emulator: GitHubEmulator
    settings: Settings
    runner: LocalRunner
    gateway: Gateway
    models: dict[Role, ScriptedModel]

    def provider(self, role: Role, purpose: str, usage: object, budget: object) -> ScriptedModel:
        return self.models[role]


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> Iterator[Served]:
    for key in list(os.environ):
        if key.startswith(("GITHUB_", "AGENT_LOOP_")) and key != "AGENT_LOOP_ALLOW_MODEL_REQUESTS":
            monkeypatch.delenv(key)
    emulator = GitHubEmulator()
    emulator.seed_files({"src/calc.py": CALC, "tests/test_calc.py": TESTS})
    with emulator.serve() as api:
        monkeypatch.setenv("GITHUB_API_URL", api)
        monkeypatch.setenv("GITHUB_TOKEN", emulator.bot_token)
        monkeypatch.setenv("AGENT_LOOP_REPO", emulator.full_name)
        monkeypatch.setenv("AGENT_LOOP_HOME", str(tmp_path / "home"))
        monkeypatch.setenv("AGENT_LOOP_WEBHOOK_SECRET", SECRET)
        monkeypatch.setenv("AGENT_LOOP_WEBHOOK_COALESCE_SECONDS", "0.2")
        settings = load_settings()
        runner = LocalRunner(settings)
        app = local_app(settings, runner)
        with serve_asgi(app, lifespan="on") as url:
            emulator.add_webhook(f"{url}/webhook", SECRET)
            yield Served(emulator, settings, runner, app.state.gateway, {})
        runner.close()


def _until(what: str, predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait for state the test can observe (a run ended, a delivery was answered)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting until {what}")
        time.sleep(0.02)


def _builder() -> ScriptedModel:
    return ScriptedModel(
        [
            turn(
                tool_calls=[call("read_file", path="src/calc.py").expecting("def add")],
                expect_in_messages="Title: Add subtract()",
            ),
            turn(tool_calls=[call("stage_file", path="src/calc.py", content=CALC_SUB)]),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title="Add subtract()",
                        body="Adds `subtract(a, b)`.",
                        summary="subtract().",
                    )
                ]
            ),
            turn("Submitted."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED)]},
        name="builder",
    )


def _reviewer() -> ScriptedModel:
    return ScriptedModel(
        [
            turn(tool_calls=[call("get_diff").expecting("subtract")]),
            turn(tool_calls=[call("no_changes", reason="subtract() is right.")]),
            turn("Reviewed."),
        ],
        name="reviewer",
    )


def test_github_actions_start_runs_through_the_gateway(served: Served) -> None:
    emu, runner = served.emulator, served.runner
    served.models[Role.BUILDER] = _builder()
    served.models[Role.REVIEWER] = _reviewer()
    with use_model(served.provider):
        # ---- an issue from the owner: the builder opens a PR, with no cron tick at all
        issue = emu.add_issue("Add subtract()", "We need `subtract(a, b)` in calc.")
        [built] = runner.wait_for(1, timeout=90)
        assert (built.agent, built.target, built.error) == ("builder", issue, None)
        tick = built.summary
        assert tick is not None
        assert tick.outcome == "opened_pr"
        [pr] = tick.made
        pull = emu.pull(pr)
        assert pull.author == emu.bot
        assert pull.head_ref.startswith(f"agent-loop/issue-{issue}-")
        first = emu.deliveries[0]
        assert (first.event, first.action, first.status) == ("issues", "opened", 202)
        served.models[Role.BUILDER].assert_finished()

        # ---- the owner asks for a review on the agent PR: a reviewer pass starts
        ask = emu.add_comment(pr, "/agent-loop review", author=emu.owner)
        runs = runner.wait_for(2, timeout=90)
        assert (runs[1].agent, runs[1].target, runs[1].error) == ("reviewer", pr, None)
        assert runs[1].summary is not None
        assert runs[1].summary.outcome in ("reviewed_clean", "commented")
        assert emu.reactions(ask) == [(emu.bot, "rocket")]
        served.models[Role.REVIEWER].assert_finished()

        # ---- stop: an event for the issue starts nothing until resume
        stop = emu.add_comment(issue, "/agent-loop stop", author=emu.owner)
        _until("the stop is acknowledged", lambda: emu.reactions(stop) == [(emu.bot, "+1")])
        emu.assign_issue(issue, emu.bot)
        history = served.gateway.dispatcher.history
        _until("the run is refused", lambda: any(r.refused for r in list(history)))
        assert len(runner.finished) == 2
        emu.add_comment(issue, "/agent-loop resume", author=emu.owner)
        runs = runner.wait_for(3, timeout=90)
        assert (runs[2].agent, runs[2].target, runs[2].error) == ("builder", issue, None)
        # the issue already has its agent PR: the builder leaves it, and opens nothing new
        assert runs[2].summary is not None
        assert runs[2].summary.outcome in ("idle", "skipped")
        assert len(emu.refs("refs/heads/agent-loop/")) == 1

    # ---- every delivery was answered; the agents' own actions never woke them
    deliveries = emu.wait_for_deliveries()
    assert all(d.status in (202, 204) for d in deliveries)
    own = [d for d in deliveries if d.payload["sender"]["login"] == emu.bot]
    assert own
    assert {d.status for d in own} == {204}


def test_serve_refuses_to_start_without_a_webhook_secret(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgets")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    monkeypatch.delenv("AGENT_LOOP_WEBHOOK_SECRET", raising=False)
    assert cli.main(["serve", "--port", "8099"]) == cli.EXIT_CONFIG
    assert "AGENT_LOOP_WEBHOOK_SECRET is not set" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_the_gateway_and_its_run_released_and_recorded(
    tmp_path: pathlib.Path, sig: signal.Signals
) -> None:
    """Ctrl-C (or SIGTERM) on `agent-loop serve` while a webhook's run works: the run
    stops at its next safe point, its claim released and the run recorded, and the
    gateway exits 128 + the signal. Before, uvicorn's handler shut the server while the
    run went on in its thread, then the process died under it (the re-raised SIGTERM,
    or the second SIGINT `uv run` hands on): the claim stayed 30 minutes, no record."""
    emulator = GitHubEmulator()
    emulator.seed_files({"src/calc.py": CALC, "tests/test_calc.py": TESTS})
    held = HeldCall(ScriptedModel([], name="builder"), at=1)
    port = _free_port()
    home = tmp_path / "home"
    with emulator.serve() as api, serve_chat_model(held) as model_api, held:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
        env.update(
            {
                "GITHUB_API_URL": api,
                "GITHUB_TOKEN": emulator.bot_token,
                "AGENT_LOOP_REPO": emulator.full_name,
                "AGENT_LOOP_HOME": str(home),
                "AGENT_LOOP_WEBHOOK_SECRET": SECRET,
                "AGENT_LOOP_WEBHOOK_COALESCE_SECONDS": "0.2",
                "AGENT_LOOP_MODEL": "openai/scripted",
                "AGENT_LOOP_API_BASE": model_api,
                "AGENT_LOOP_MODEL_KEY_ENV": "none",
                "AGENT_LOOP_ALLOW_MODEL_REQUESTS": "1",  # the model is on loopback
                "AGENT_LOOP_SANDBOX": "off",
            }
        )
        agent_loop = str(pathlib.Path(sys.executable).with_name("agent-loop"))
        proc = subprocess.Popen(
            [agent_loop, "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _until("the gateway listens", lambda: _listening(port), timeout=120)
            emulator.add_webhook(f"http://127.0.0.1:{port}/webhook", SECRET)
            issue = emulator.add_issue("Add subtract()", "We need `subtract(a, b)` in calc.")
            _until("the run's model call", held.reached.is_set, timeout=120)
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 128 + sig, err
    assert f"{sig.name}: claim on {emulator.full_name} issue #{issue} released" in err
    assert emulator.refs("refs/agent-loop/") == {}
    (claim,) = [c for c in emulator.comments(issue) if "agent-loop:dibs" in c.body]
    assert f"stopped by the operator ({sig.name})" in claim.body
    assert emulator.pulls() == []
    status = subprocess.run(
        [agent_loop, "status", "--json", "--home", str(home)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    runs = json.loads(status.stdout)["records"]
    assert [(r["outcome"], r["target"]["number"]) for r in runs] == [("interrupted", issue)]
