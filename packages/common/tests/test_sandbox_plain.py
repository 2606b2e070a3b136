"""The plain subprocess: the same limits and a scrubbed environment, and honest about the rest."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from agent_loop_common.sandbox import PlainSubprocessSandbox, SandboxLimits, write_tree

LIMITS = SandboxLimits(wall_seconds=30, memory_mb=1024, max_processes=32, max_file_mb=8)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree({"app.py": "VALUE = 1\n"}, tmp_path / "tree")


async def test_it_says_it_is_not_isolated(tree: Path) -> None:
    sandbox = PlainSubprocessSandbox(LIMITS)
    assert not sandbox.isolated
    result = await sandbox.run(tree, ["python3", "-c", "print('hi')"])
    assert result.ok
    assert result.backend == "plain-subprocess (not isolated)"
    assert result.network
    assert result.notes[0].startswith("not isolated")


async def test_the_environment_is_scrubbed(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "canary-" + secrets.token_hex(8)
    monkeypatch.setenv("GITHUB_TOKEN", canary)
    script = "import os; print(sorted(os.environ)); print(os.getcwd())"
    result = await PlainSubprocessSandbox(LIMITS).run(tree, ["python3", "-c", script])
    assert "['HOME', 'LANG', 'PATH', 'SANDBOX_JUNIT', 'TMPDIR']" in result.output.text
    assert canary not in result.output.text
    assert str(tree) not in result.output.text  # it ran on a copy


async def test_limits_apply(tree: Path) -> None:
    sandbox = PlainSubprocessSandbox(LIMITS)
    big = await sandbox.run(tree, ["python3", "-c", "open('f', 'wb').write(b'x' * 64 * 2**20)"])
    assert big.limit == "file_size"
    memory = await sandbox.run(tree, ["python3", "-c", "bytearray(4 * 1024**3)"])
    assert memory.limit == "memory"


def _running(marker: str) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    return True
            except OSError:
                continue
    return False


async def test_the_time_limit_kills_background_children_too(tree: Path) -> None:
    seconds = f"300.{secrets.randbelow(10**9):09d}"  # a unique command line for sleep
    script = (
        "import subprocess, sys, time; subprocess.Popen(['sleep', sys.argv[1]]); time.sleep(300)"
    )
    result = await PlainSubprocessSandbox(LIMITS).run(
        tree, ["python3", "-c", script, seconds], time_limit=1
    )
    assert result.timed_out
    assert not _running(seconds)


async def test_a_missing_program_is_a_result(tree: Path) -> None:
    result = await PlainSubprocessSandbox(LIMITS).run(tree, ["no-such-program"])
    assert result.exit_code == 127
    assert "command not found" in result.error
