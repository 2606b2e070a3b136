"""No silent fallback (issue 30, item 5): a sandbox no control group bounds, as a user meets it.

Docker and Kubernetes mount `/sys/fs/cgroup` read-only by default; there the sandbox-wide
memory bound was dropped without a word (998 MB resident under a 256 MB setting), and
neither the result, the preflight nor the pull request said so. Now:

- with `AGENT_LOOP_SANDBOX_REQUIRE_CGROUP` on, the run refuses before it claims anything,
  naming the setting and the ways out (like no sandbox at all);
- with it off, every result and the pull request's `## Tests` section say the limits
  were per process, and the run record keeps it.

The real read-only cgroup file system (a mount namespace where every cgroup mount is
remounted read-only, what a container sees) drives `agent-loop sandbox` as a child
process; the ticks run in this process against the emulator with the cgroup file system
simulated (`proc_without_cgroup`), since their scripted model lives here.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator

import pytest

from agent_loop import cli
from agent_loop.status import read_snapshot
from agent_loop_common.records import Role
from agent_loop_common.runtime import local_memory, use_model
from agent_loop_common.sandbox import BwrapSandbox, _select
from agent_loop_common.sandbox._cgroup import cgroup_support
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    CALC_ISSUE,
    CALC_REPO,
    CALC_SUB,
    VERIFIED,
    CliLoop,
    GitHubEmulator,
    ScriptedModel,
    bwrap_e2e_marks,
    proc_without_cgroup,
    read_only_cgroupfs,
    read_only_cgroupfs_works,
    serve_for_cli,
    subtract_try,
    turn,
)

pytestmark = bwrap_e2e_marks()

TEST_COMMAND = (
    f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:agent_loop_hermetic "
    "--junitxml=$SANDBOX_JUNIT"
)

# The review's shape: memory spread over four processes, each under RLIMIT_AS.
SPREAD = """
import subprocess, sys
hog = "b = bytearray(150 * 1024 * 1024)\\nfor i in range(0, len(b), 4096): b[i] = 1\\nimport time; time.sleep(1.5)"
kids = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(4)]
codes = [k.wait() for k in kids]
print("ALL ALLOCATED" if all(c == 0 for c in codes) else f"stopped {codes}")
"""


@pytest.fixture
def loop(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> Iterator[CliLoop]:
    """The calc sample served to `agent-loop run`, on a host where no cgroup can be made."""
    proc = proc_without_cgroup(tmp_path)
    monkeypatch.setattr(BwrapSandbox, "cgroups", lambda self: cgroup_support(proc=proc))
    _select.clear_probe_cache()
    emulator = GitHubEmulator()
    emulator.seed_files(CALC_REPO)
    with serve_for_cli(
        monkeypatch,
        emulator,
        tmp_path / "home",
        AGENT_LOOP_SANDBOX="bwrap",
        AGENT_LOOP_TEST_COMMAND=TEST_COMMAND,
        AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS="120",
        AGENT_LOOP_SANDBOX_MEMORY_MB="512",
        AGENT_LOOP_SANDBOX_MAX_PROCESSES="64",
    ):
        yield CliLoop(emulator, cli.main, capsys)
    _select.clear_probe_cache()


def test_required_and_no_cgroup_the_run_exits_2_before_any_claim(
    loop: CliLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LOOP_SANDBOX_REQUIRE_CGROUP", "true")
    issue = loop.emulator.add_issue(*CALC_ISSUE)
    loop.models[Role.BUILDER] = ScriptedModel([], name="builder")
    with use_model(loop.provider):
        code = cli.main(["run", "builder"])
    err = loop.capture.readouterr().err
    assert code == cli.EXIT_CONFIG
    assert "no control group can be created here" in err
    assert "AGENT_LOOP_SANDBOX_REQUIRE_CGROUP is on" in err
    assert "AGENT_LOOP_SANDBOX_REQUIRE_CGROUP=false" in err  # a way out, named
    assert loop.emulator.comments(issue) == []  # nothing claimed, nothing written
    assert asyncio.run(read_snapshot(local_memory(loop.settings))).records == []


def test_not_required_the_pr_and_the_record_say_the_limits_were_per_process(
    loop: CliLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LOOP_SANDBOX_REQUIRE_CGROUP", "false")
    loop.emulator.add_issue(*CALC_ISSUE)
    model = ScriptedModel(
        subtract_try(CALC_SUB),
        routes={VERIFIER_MARKER: [turn(VERIFIED, expect_in_messages="2 passed (base: 1 passed)")]},
        name="builder",
    )
    built = loop.run(Role.BUILDER, model)
    assert built.outcome == "opened_pr"
    body = loop.emulator.pull(built.made[0]).body or ""
    assert "- Result: 2 passed (base: 1 passed)" in body
    assert (
        "- Limits: limits per process: no control group bounded this sandbox as a whole "
        "(no control group can be created here" in body
    ), body
    assert "512 MB of address space per process and 64 processes, so up to 32,768 MB" in body
    tests = loop.record(built.run_id).tests
    assert tests is not None
    assert tests.per_process_limits
    assert tests.oom_kills == 0


# ------------------------------------------------ a real read-only cgroupfs, through the CLI

RO_WORKS, RO_WHY = read_only_cgroupfs_works()
needs_read_only_cgroupfs = pytest.mark.skipif(not RO_WORKS, reason=RO_WHY)


def _sandbox_cli(
    args: list[str], tmp_path: pathlib.Path, **env: str
) -> subprocess.CompletedProcess[str]:
    """`agent-loop sandbox ARGS` in a child process that sees a read-only cgroupfs."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
    clean.update({"AGENT_LOOP_HOME": str(tmp_path / "home"), **env})
    program = pathlib.Path(sys.executable).with_name("agent-loop")
    return subprocess.run(
        read_only_cgroupfs([str(program), "sandbox", *args]),
        env=clean,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@needs_read_only_cgroupfs
def test_a_read_only_cgroupfs_is_refused_when_required(tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    done = _sandbox_cli(
        ["run", "--dir", str(folder), "--", "true"],
        tmp_path,
        AGENT_LOOP_SANDBOX="bwrap",
        AGENT_LOOP_SANDBOX_REQUIRE_CGROUP="true",
    )
    assert done.returncode == cli.EXIT_CONFIG, done.stdout + done.stderr
    assert "AGENT_LOOP_SANDBOX=bwrap cannot run here: no control group" in done.stderr
    assert "AGENT_LOOP_SANDBOX_REQUIRE_CGROUP is on" in done.stderr
    check = _sandbox_cli(["check"], tmp_path, AGENT_LOOP_SANDBOX_REQUIRE_CGROUP="true")
    assert check.returncode == cli.EXIT_CONFIG, check.stdout + check.stderr
    assert "AGENT_LOOP_SANDBOX_REQUIRE_CGROUP is on" in check.stdout
    assert "/sys/fs/cgroup writable" in check.stdout  # what to do about it


@needs_read_only_cgroupfs
def test_a_read_only_cgroupfs_not_required_runs_and_says_the_limits_are_per_process(
    tmp_path: pathlib.Path,
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    done = _sandbox_cli(
        ["run", "--dir", str(folder), "--", "python3", "-c", SPREAD],
        tmp_path,
        AGENT_LOOP_SANDBOX="bwrap",
        AGENT_LOOP_SANDBOX_REQUIRE_CGROUP="false",
        AGENT_LOOP_SANDBOX_MEMORY_MB="256",
        AGENT_LOOP_SANDBOX_MAX_PROCESSES="32",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ALL ALLOCATED" in done.stdout  # 600 MB under a 256 MB setting: per process
    assert (
        "-- note: limits per process: no control group bounded this sandbox as a whole "
        "(no control group can be created here" in done.stdout
    )
    assert "so up to 8,192 MB in total" in done.stdout
