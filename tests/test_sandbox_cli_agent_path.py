"""`agent-loop sandbox run --dir` is the agent's path (issue 31, item 5), as a user runs it.

On a zero-configuration Python project the command used to exit 127 ("python is not on
the sandbox's PATH") while the builder, on the same project, built its environment and
got "2 passed": the CLI ran the detected command without the setup a tick adds. Now both
take their setup and test command from one plan (`sandbox.plan_tests`): the default
Python setup (`.sandbox-venv`), the same environment cache under `AGENT_LOOP_HOME`, the
JUnit report for pytest, and the hard rules' verdict, printed as a line.

Each command runs `agent-loop` as a child process, as a user types it, in the real
bubblewrap sandbox; pip installs from a wheelhouse of this workspace's pytest (hermetic).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator

import pytest

from agent_loop_common.sandbox import write_tree
from agent_loop_testing import (
    CALC,
    CALC_SUB,
    TESTS_SUB,
    ZERO_CONFIG_CALC,
    bwrap_e2e_marks,
    wheelhouse,
)

pytestmark = [
    *bwrap_e2e_marks(),
    pytest.mark.skipif(
        not pathlib.Path("/usr/bin/python3").exists(), reason="no /usr/bin/python3 here"
    ),
]

CALC_WRONG = CALC + "\n\ndef subtract(a, b):\n    return b - a\n"
COMMAND = ".sandbox-venv/bin/python -m pytest -q --junitxml=$SANDBOX_JUNIT (from pyproject.toml)"
SETUP = (
    "-- setup: default Python environment (.sandbox-venv: uv when on the sandbox's PATH, "
    "else python3 -m venv + pip; install -e .[test] --no-index --find-links "
)


@pytest.fixture(scope="module")
def wheels() -> Iterator[pathlib.Path]:
    with wheelhouse() as directory:
        yield directory


@pytest.fixture
def project(tmp_path: pathlib.Path) -> pathlib.Path:
    """The calc sample with `subtract` and its test, nothing configured."""
    files = {**ZERO_CONFIG_CALC, "src/calc.py": CALC_SUB, "tests/test_calc.py": TESTS_SUB}
    return write_tree(files, tmp_path / "calc")


def _agent_loop(
    args: list[str], home: pathlib.Path, wheels: pathlib.Path
) -> subprocess.CompletedProcess[str]:
    """`agent-loop ARGS` in a child process with only what a user would set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
    env.update(
        {
            "AGENT_LOOP_HOME": str(home),
            "AGENT_LOOP_SANDBOX": "bwrap",
            "AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS": "300",
            "AGENT_LOOP_SANDBOX_READONLY_PATHS": str(wheels),
            "AGENT_LOOP_PIP_OPTIONS": f"--no-index --find-links {wheels}",
        }
    )
    return subprocess.run(
        [str(pathlib.Path(sys.executable).with_name("agent-loop")), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_a_zero_config_project_runs_as_a_tick_runs_it(
    project: pathlib.Path, tmp_path: pathlib.Path, wheels: pathlib.Path
) -> None:
    home = tmp_path / "home"
    first = _agent_loop(["sandbox", "run", "--dir", str(project)], home, wheels)
    out = first.stdout
    assert first.returncode == 0, out + first.stderr
    assert f"running the test command {COMMAND} in bwrap on a copy of {project}" in out
    assert SETUP in out
    assert "-- setup: exit 0" in out  # the setup ran, with its own line
    assert "-- bwrap: exit 0: 2 passed" in out
    assert "-- verdict: passed" in out
    assert not (project / ".sandbox-venv").exists()  # built in the copy only
    kept = list((home / "sandbox-envs").iterdir())
    assert len(kept) == 1  # the tick's cache, keyed by this folder

    # A change to the code (not to the dependencies): the kept environment is reused,
    # and the failing test is named, judged and mirrored in the exit code.
    (project / "src" / "calc.py").write_text(CALC_WRONG)
    second = _agent_loop(["sandbox", "run", "--dir", str(project)], home, wheels)
    out = second.stdout
    assert second.returncode == 1, out + second.stderr
    assert "-- note: setup: reused the environment" in out
    assert "-- setup: exit" not in out  # nothing was installed again
    assert "-- bwrap: exit 1: 1 failed, 1 passed" in out
    assert "-- failing: tests.test_calc::test_subtract" in out
    assert "-- verdict: failed: the command exited 1" in out
    assert list((home / "sandbox-envs").iterdir()) == kept

    # The whole result, with the counts from the JUnit report a tick reads too.
    third = _agent_loop(["sandbox", "run", "--json", "--dir", str(project)], home, wheels)
    assert third.returncode == 1, third.stdout + third.stderr
    result = json.loads(third.stdout)
    assert result["tests"]["source"] == "junit"
    assert (result["tests"]["passed"], result["tests"]["failed"]) == (1, 1)
    assert result["argv"][0] == ".sandbox-venv/bin/python"


def test_an_explicit_command_runs_as_given_without_the_setup(
    project: pathlib.Path, tmp_path: pathlib.Path, wheels: pathlib.Path
) -> None:
    done = _agent_loop(
        ["sandbox", "run", "--dir", str(project), "--", "python3", "-c", "print('as given')"],
        tmp_path / "home",
        wheels,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "as given" in done.stdout
    assert "-- setup:" not in done.stdout
    assert "-- verdict: passed" in done.stdout
    assert not (tmp_path / "home" / "sandbox-envs").exists()
