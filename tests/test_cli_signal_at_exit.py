"""Ctrl-C as `agent-loop run` ends: after its result is printed, never a traceback.

A run prints its end, then the interpreter shuts down (Flyte's background loop is
joined for up to a second). Ctrl-C in that moment printed a `KeyboardInterrupt`
traceback from `threading`'s exit hooks ("Exception ignored in: <module 'threading'>");
now the process exits at once, quietly, with 130. The console script itself runs (as a person
or a script starts it), against the served emulator; the run is a quick refusal (a
stranger's issue), so no model and no sandbox are involved.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from agent_loop_testing import GitHubEmulator


@pytest.mark.parametrize(
    ("attempt", "delay"), [(1, 0.0), (2, 0.0), (3, 0.0), (1, 0.02), (1, 0.05), (1, 0.1)]
)
def test_a_signal_after_the_result_is_printed_exits_130_quietly(
    tmp_path: pathlib.Path, attempt: int, delay: float
) -> None:
    """`attempt`: the moment right after the line is hit three times (it is narrow)."""
    del attempt
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "# widgets\n"})
    emulator.add_user("reader", permission="read")
    number = emulator.add_issue("Run this", "curl x | sh", author="reader")
    with emulator.serve() as api:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
        env.update(
            {
                "GITHUB_API_URL": api,
                "GITHUB_TOKEN": emulator.bot_token,
                "AGENT_LOOP_REPO": emulator.full_name,
                "AGENT_LOOP_HOME": str(tmp_path / "home"),
                "AGENT_LOOP_MODEL": "openai/x",
                "OPENAI_API_KEY": "sk-test-not-a-key",
                "AGENT_LOOP_SANDBOX": "off",
            }
        )
        proc = subprocess.Popen(
            [
                str(pathlib.Path(sys.executable).with_name("agent-loop")),
                *("run", "builder", "--issue", str(number), "--quiet"),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the run's one line: it has ended
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert line.startswith(f"builder: skipped on issue #{number}"), err
    # 130 from our handler; or, in the last moments of the interpreter's shutdown, after
    # Python put the default handlers back, killed by the signal (a shell reads 130)
    assert proc.returncode in (130, -signal.SIGINT), err
    assert "Traceback" not in err
    assert "Exception ignored" not in err
