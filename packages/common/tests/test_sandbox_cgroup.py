"""Attack (issue 30, item 5): the sandbox-wide memory bound dropped or its kills unrecorded.

Two shapes from the review, each run for real:

- the cgroup OOM killer kills the test command's children while the command itself
  exits 0 (a test runner that ignores a worker's death): the run read as `exit 0` and a
  pass, with nothing recorded. Now every run reads the group's OOM kill count
  (`memory.events`, or `memory.oom_control` on cgroup v1) and a run with kills hit the
  memory limit: never a pass;
- no usable cgroup (Docker's and Kubernetes' read-only `/sys/fs/cgroup`, simulated here
  by a cgroup mount where no group can be made): the sandbox either refuses
  (`AGENT_LOOP_SANDBOX_REQUIRE_CGROUP`) or every result says the limits were per process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from agent_loop_common.checks import CheckReport
from agent_loop_common.sandbox import (
    BwrapSandbox,
    ProtectedPaths,
    RunResult,
    SandboxLimits,
    SandboxUnavailable,
    _select,
    compare,
    open_sandbox,
    write_tree,
)
from agent_loop_common.sandbox._cgroup import CgroupSupport, cgroup_support
from agent_loop_common.settings import Settings
from agent_loop_testing import bwrap_works, proc_without_cgroup

WORKS, WHY = bwrap_works()
needs_bwrap = pytest.mark.skipif(not WORKS, reason=f"bubblewrap cannot run here: {WHY}")

# Four workers of 150 MB each under a 256 MB sandbox; the runner ignores how they end and
# prints a pytest-shaped summary, as a runner whose worker died silently would.
KILLED_WORKERS = """
import subprocess, sys
hog = "b = bytearray(150 * 1024 * 1024)\\nfor i in range(0, len(b), 4096): b[i] = 1\\nimport time; time.sleep(2)"
kids = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(4)]
print("workers", [k.wait() for k in kids])
print("2 passed in 0.10s")
"""


def _settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(
        repo="o/r",
        github_token=SecretStr("unused"),
        home=tmp_path / "home",
        sandbox="bwrap",
        **values,  # pyright: ignore[reportArgumentType]
    )


def test_a_read_only_cgroupfs_gives_no_cgroup_and_says_why(tmp_path: Path) -> None:
    support = cgroup_support(proc=proc_without_cgroup(tmp_path))
    assert support.version is None
    assert "no control group can be created here" in support.reason
    assert list((tmp_path / "cgroupfs" / "agent").iterdir()) == []  # the probe cleaned up


@needs_bwrap
async def test_children_killed_by_the_oom_killer_are_recorded_and_never_a_pass(
    tmp_path: Path,
) -> None:
    support = cgroup_support()
    if support.version is None:
        pytest.skip(f"no control groups here: {support.reason}")
    limits = SandboxLimits(wall_seconds=60, memory_mb=256, max_processes=32, max_file_mb=8)
    sandbox = BwrapSandbox(limits, protected=ProtectedPaths.current(agent_home=tmp_path / "s"))
    tree = write_tree({"README.md": "x"}, tmp_path / "repo")
    result = await sandbox.run(tree, ["python3", "-c", KILLED_WORKERS])
    assert result.exit_code == 0, result.output.text  # the runner itself exited 0
    assert "2 passed" in result.output.text
    assert result.oom_kills >= 1, result.output.text
    assert result.limit == "memory"
    assert not result.ok
    assert "killed by the kernel for memory" in result.summary()
    base = RunResult(backend="bwrap", argv=("python3",), exit_code=0)
    verdict = compare(base, result)
    assert verdict.status == "failed"
    assert any("memory" in reason for reason in verdict.reasons), verdict.reasons
    # What the pull request and the run record keep of it.
    report = CheckReport(
        command=None,
        setup=None,
        backend="bwrap",
        isolated=True,
        verdict=verdict,
        base=base,
        after=result,
    )
    assert report.rejects
    assert report.evidence(runs=2).oom_kills == result.oom_kills


@needs_bwrap
async def test_a_run_within_its_memory_reads_no_kills(tmp_path: Path) -> None:
    sandbox = BwrapSandbox(
        SandboxLimits(wall_seconds=30, memory_mb=256, max_processes=32, max_file_mb=8),
        protected=ProtectedPaths.current(agent_home=tmp_path / "s"),
    )
    tree = write_tree({"README.md": "x"}, tmp_path / "repo")
    result = await sandbox.run(tree, ["python3", "-c", "print('fine')"])
    assert result.ok
    assert (result.oom_kills, result.limit) == (0, None)


@needs_bwrap
async def test_without_a_cgroup_the_sandbox_refuses_when_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = proc_without_cgroup(tmp_path)
    monkeypatch.setattr(BwrapSandbox, "cgroups", lambda self: cgroup_support(proc=proc))
    _select.clear_probe_cache()
    try:
        with pytest.raises(SandboxUnavailable) as refused:
            await open_sandbox(_settings(tmp_path, sandbox_require_cgroup=True))
    finally:
        _select.clear_probe_cache()
    message = str(refused.value)
    assert "AGENT_LOOP_SANDBOX_REQUIRE_CGROUP" in message
    assert "no control group can be created here" in message
    assert "per process" in message


@needs_bwrap
async def test_without_a_cgroup_every_result_says_the_limits_were_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = proc_without_cgroup(tmp_path)
    monkeypatch.setattr(BwrapSandbox, "cgroups", lambda self: cgroup_support(proc=proc))
    _select.clear_probe_cache()
    try:
        sandbox = await open_sandbox(
            _settings(
                tmp_path,
                sandbox_require_cgroup=False,
                sandbox_memory_mb=256,
                sandbox_max_processes=32,
            )
        )
    finally:
        _select.clear_probe_cache()
    tree = write_tree({"README.md": "x"}, tmp_path / "repo")
    result = await sandbox.run(tree, ["true"], setup=["true"])
    assert result.ok
    for run in (result, result.setup):
        assert run is not None
        assert run.per_process_limits
        assert any(
            note.startswith("limits per process:") and "up to 8,192 MB in total" in note
            for note in run.notes
        ), run.notes


def test_the_requirement_is_on_by_default_only_where_deployed() -> None:
    from agent_loop_common.sandbox import cgroup_required

    assert cgroup_required(None, deployed=True)
    assert not cgroup_required(None, deployed=False)
    assert cgroup_required(True, deployed=False)
    assert not cgroup_required(False, deployed=True)


def test_support_is_a_plain_value() -> None:
    none = CgroupSupport(None, (), "why")
    assert (none.version, none.parents, none.reason) == (None, (), "why")
