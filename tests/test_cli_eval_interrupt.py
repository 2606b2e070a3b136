"""Ctrl-C in the middle of `agent-loop eval run`: exit 130, one line saying that nothing
was written and what to do, no traceback, and no results file that looks complete.

The command runs as its own process (the installed `agent-loop`), in its own session
with SIGINT at its default as a terminal's foreground job has it; the signal goes to
its whole process group, as a terminal's Ctrl-C does, while the instance is in flight
(its model never answers and its tests would take a minute).
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

from flyte.ai.agents import LLMMessage

from agent_loop_eval import Instance
from agent_loop_testing import (
    GitHubEmulator,
    bwrap_e2e_marks,
    serve_chat_model,
    serve_for_cli,
)

pytestmark = bwrap_e2e_marks()

CLI = str(pathlib.Path(sys.executable).with_name("agent-loop"))


async def _never_answers(
    model: str, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> LLMMessage:
    del model, system, messages, tools
    await asyncio.sleep(120)
    raise AssertionError("the run was to be interrupted before the model answered")


def test_ctrl_c_mid_run_exits_130_and_leaves_no_results(
    tmp_path: pathlib.Path, monkeypatch: Any
) -> None:
    emulator = GitHubEmulator()
    sha = emulator.seed_files({"README.md": "# calc\n", "tests/test_x.py": "def test(): pass\n"})
    file = tmp_path / "instances.jsonl"
    instance = Instance(
        instance_id="acme__widgets-5",
        repo=emulator.full_name,
        base_commit=sha,
        problem_statement="Add subtract()",
        FAIL_TO_PASS=["tests/test_x.py::test"],
        created_at=datetime.now(UTC),
        test_command="sleep 60",
    )
    file.write_text(instance.model_dump_json() + "\n")
    out = tmp_path / "runs" / "a"
    with (
        serve_for_cli(monkeypatch, emulator, tmp_path / "home", AGENT_LOOP_SANDBOX="bwrap"),
        serve_chat_model(_never_answers) as api_base,
    ):
        env = {
            **os.environ,
            "HOME": str(tmp_path / "user"),
            "AGENT_LOOP_MODEL": "openai/scripted",
            "AGENT_LOOP_API_BASE": api_base,
            "AGENT_LOOP_MODEL_KEY_ENV": "none",
            "AGENT_LOOP_ALLOW_MODEL_REQUESTS": "1",
        }
        proc = subprocess.Popen(
            [CLI, "eval", "run", str(file), "--out", str(out)],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            assert proc.stdout is not None
            header = proc.stdout.readline()
            assert header.startswith("agent-loop eval run: 1 instance(s)"), header
            time.sleep(3)  # in flight: the base downloaded, its tests or the model waiting
            os.killpg(proc.pid, signal.SIGINT)
            rest, err = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert proc.returncode == 130, (rest, err)
    assert "Traceback" not in err
    assert err.splitlines() == [
        f"agent-loop eval run: interrupted; nothing written to {out} (the files are written "
        "when every instance is done: run it again, with --limit or --instances for fewer)"
    ]
    assert "results:" not in rest
    assert not out.exists()
