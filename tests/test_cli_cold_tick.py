"""A tick with no work, in its own process as cron runs it, never imports litellm.

`import litellm` costs seconds; a tick that finds nothing to do (or that the GitHub
rate-limit reserve holds back) must not pay it. Each case runs `agent-loop run builder`
in a fresh interpreter against the emulator served on loopback, with a litellm model
configured (`openai/...`, no in-process model), and asks the child what it imported.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from agent_loop_testing import GitHubEmulator

pytestmark = pytest.mark.slow

_CHILD = (
    "import sys\n"
    "from agent_loop.cli import main\n"
    "code = main(['run', 'builder', '--json'])\n"
    "print(json.dumps({'code': code, 'litellm': 'litellm' in sys.modules}), file=sys.stderr)\n"
)


def _tick(
    emulator: GitHubEmulator, home: pathlib.Path
) -> tuple[dict[str, object], dict[str, object]]:
    """Run one builder tick in a child process: its summary and what it imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
    with emulator.serve() as github_url:
        env.update(
            {
                "GITHUB_API_URL": github_url,
                "GITHUB_TOKEN": emulator.bot_token,
                "AGENT_LOOP_REPO": emulator.full_name,
                "AGENT_LOOP_HOME": str(home),
                "AGENT_LOOP_MODEL": "openai/never-called",
                "AGENT_LOOP_API_BASE": "http://127.0.0.1:9/v1",
                "AGENT_LOOP_SANDBOX": "off",
                "OPENAI_API_KEY": "sk-test-not-a-key",
            }
        )
        done = subprocess.run(
            [sys.executable, "-c", "import json\n" + _CHILD],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
    facts = json.loads(done.stderr.strip().splitlines()[-1])
    assert facts["code"] == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), facts


def test_an_idle_tick_never_imports_litellm(tmp_path: pathlib.Path) -> None:
    summary, facts = _tick(GitHubEmulator(), tmp_path / "home")
    assert summary["outcome"] == "idle"
    assert facts["litellm"] is False


def test_a_tick_paused_by_the_rate_limit_reserve_never_imports_litellm(
    tmp_path: pathlib.Path,
) -> None:
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "# widgets\n"})
    number = emulator.add_issue("Add a colour", "Widgets need a colour.")
    emulator.set_rate_limit_remaining(emulator.bot, 300)
    summary, facts = _tick(emulator, tmp_path / "home")
    assert summary["outcome"] == "paused"
    assert "reserve of 500" in str(summary["note"])
    assert facts["litellm"] is False
    assert emulator.comments(number) == []
