"""The README's "Try it against a local GitHub" walk-through, run as written.

Each `uv run agent-loop ...` line of the block between the `walkthrough` markers runs as
its own process of the installed `agent-loop` (what `uv run` starts), in order: the
emulator in the background (its printed `export` lines become the next commands'
environment, as a person pastes them), `run builder --issue 1`, `status`, and the
gateway (`serve`), which must come up. The ports of the block are swapped for free ones
on 127.0.0.1. The person's model is a scripted one served as an OpenAI-compatible API on
loopback (`serve_chat_model`), configured the way the block says a local server is.
"""

from __future__ import annotations

import os
import pathlib
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import ScriptedModel, call, serve_chat_model, turn

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLI = str(pathlib.Path(sys.executable).with_name("agent-loop"))
STOCK = "src/widgets/colour.py"


def _block() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- walkthrough:start", 1)[1].split("<!-- walkthrough:end -->", 1)[0]
    return [
        line.split("#", 1)[0].strip()
        for line in block.splitlines()
        if line.startswith("uv run agent-loop ")
    ]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _argv(line: str, ports: dict[str, str]) -> list[str]:
    for old, new in ports.items():
        line = line.replace(old, new)
    words = shlex.split(line)
    assert words[:3] == ["uv", "run", "agent-loop"]
    return [CLI, *words[3:]]


def _model() -> ScriptedModel:
    return ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path=STOCK, content="COLOURS = ('red',)\n")]),
            turn(
                tool_calls=[call("submit_implementation", title="Colours", body="b", summary="s")]
            ),
            turn("Done."),
        ],
        routes={VERIFIER_MARKER: [turn('{"verified": true, "notes": "Matches the issue."}')]},
    )


@pytest.fixture
def shell(tmp_path: pathlib.Path) -> dict[str, str]:
    """A person's shell: no agent-loop or GitHub setting of this machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
    env["HOME"] = str(tmp_path / "user")
    return env


def _exports(proc: subprocess.Popen[str], deadline: float) -> Iterator[tuple[str, str]]:
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        name, _, value = shlex.split(line.removeprefix("export "), comments=True)[0].partition("=")
        yield name, value
        if name == "EMULATOR_STRANGER_TOKEN":  # the last of them
            return
    raise AssertionError(f"the emulator printed no exports: {proc.stderr and proc.stderr.read()}")


def _wait_for(url: str, deadline: float) -> httpx.Response:
    while True:
        try:
            return httpx.get(url, timeout=2)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_the_readme_walkthrough_works_as_written(
    tmp_path: pathlib.Path, shell: dict[str, str]
) -> None:
    lines = _block()
    assert [shlex.split(line)[3] for line in lines] == ["emulator", "run", "status", "serve"]
    ports = {"8765": str(_free_port()), "8080": str(_free_port())}
    procs: list[subprocess.Popen[str]] = []
    model = _model()
    try:
        emulator = subprocess.Popen(
            _argv(lines[0], ports),
            env=shell,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        procs.append(emulator)
        exported = dict(_exports(emulator, time.monotonic() + 120))
        assert exported["GITHUB_API_URL"] == f"http://127.0.0.1:{ports['8765']}"
        assert exported["AGENT_LOOP_REPO"] == "acme/widgets"
        with serve_chat_model(model) as api_base:
            env = {
                **shell,
                **exported,
                "AGENT_LOOP_MODEL": "openai/scripted",
                "AGENT_LOOP_API_BASE": api_base,
                "AGENT_LOOP_MODEL_KEY_ENV": "none",
                "AGENT_LOOP_ALLOW_MODEL_REQUESTS": "1",  # the model is on loopback
                "AGENT_LOOP_SANDBOX": "off",  # the sample's tests are not what is tried here
            }
            built = subprocess.run(
                _argv(lines[1], ports),
                env=env,
                capture_output=True,
                text=True,
                cwd=tmp_path,
                check=False,
                timeout=300,
            )
            assert built.returncode == 0, built.stdout + built.stderr
            assert re.search(
                r"^builder: opened_pr on issue #1 -> http://127\.0\.0\.1", built.stdout, re.M
            ), built.stdout
            model.assert_finished()
            pulls = httpx.get(f"{exported['GITHUB_API_URL']}/repos/acme/widgets/pulls").json()
            assert [p["number"] for p in pulls] != []

            status = subprocess.run(
                _argv(lines[2], ports),
                env=env,
                capture_output=True,
                text=True,
                cwd=tmp_path,
                check=False,
                timeout=120,
            )
            assert status.returncode == 0, status.stderr
            assert "opened_pr" in status.stdout

            gateway = subprocess.Popen(
                _argv(lines[3], ports),
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=tmp_path,
            )
            procs.append(gateway)
            health = _wait_for(f"http://127.0.0.1:{ports['8080']}/healthz", time.monotonic() + 120)
            assert health.status_code == 200
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    assert emulator.returncode == 0  # stopped cleanly on SIGTERM
