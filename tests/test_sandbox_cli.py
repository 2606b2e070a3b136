"""`agent-loop sandbox check|run`: the agents' sandbox from a terminal, driven through `main`."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_loop import cli
from agent_loop_common.sandbox import BwrapSandbox, SandboxLimits, _select, write_tree
from agent_loop_common.sandbox._docker import DockerSandbox

_GITHUB_AND_LOOP = ("GITHUB_", "AGENT_LOOP_")


def _bwrap_works() -> tuple[bool, str]:
    async def probe() -> tuple[bool, str]:
        return await BwrapSandbox(SandboxLimits()).probe()

    return asyncio.run(probe())


WORKS, WHY = _bwrap_works()
needs_bwrap = pytest.mark.skipif(not WORKS, reason=f"bubblewrap cannot run here: {WHY}")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No setting from the machine running the tests leaks into these; no credentials needed.
    Probes faked by a test are forgotten afterwards, so later tests probe for real."""
    for key in list(os.environ):
        if key.startswith(_GITHUB_AND_LOOP) and key != "AGENT_LOOP_ALLOW_MODEL_REQUESTS":
            monkeypatch.delenv(key)
    _select.clear_probe_cache()
    yield
    _select.clear_probe_cache()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_tree({"app.py": "print('from the app')\n"}, tmp_path / "project")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _no_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    async def fails(self: object) -> tuple[bool, str]:
        return False, "not here"

    monkeypatch.setattr(BwrapSandbox, "probe", fails)
    monkeypatch.setattr(DockerSandbox, "probe", fails)


@needs_bwrap
def test_check_says_which_backend_works(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["sandbox", "check"], capsys)
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "yes" in lines["bwrap"]
    assert "no" in lines["flyte"]
    assert "plain-subprocess" in out
    assert "not isolated" in out
    assert "AGENT_LOOP_SANDBOX=auto: the agents run tests in bwrap." in out


def test_check_without_any_backend_exits_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_backend(monkeypatch)
    code, out, _ = _run(["sandbox", "check"], capsys)
    assert code == cli.EXIT_CONFIG
    assert "no sandbox can run tests here" in out
    assert "apt-get install -y bubblewrap" in out


@needs_bwrap
def test_run_prints_the_output_and_mirrors_the_exit_code(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(["sandbox", "run", "--dir", str(folder), "--", "python3", "app.py"], capsys)
    assert code == 0
    assert "from the app" in out
    assert "-- bwrap: exit 0" in out
    script = "import sys; print('failing'); sys.exit(3)"
    code, out, _ = _run(
        ["sandbox", "run", "--dir", str(folder), "--", "python3", "-c", script], capsys
    )
    assert code == 3
    assert "-- bwrap: exit 3" in out


@needs_bwrap
def test_run_times_out_with_124(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["sandbox", "run", "--dir", str(folder), "--time-limit", "1", "--", "sleep", "30"]
    code, out, _ = _run(argv, capsys)
    assert code == 124
    assert "timed out" in out


@needs_bwrap
def test_run_of_a_missing_program_exits_127(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(["sandbox", "run", "--dir", str(folder), "--", "no-such-tool"], capsys)
    assert code == 127
    assert "command not found in the sandbox" in out


@needs_bwrap
def test_run_without_a_command_runs_the_detected_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = write_tree(
        {"AGENTS.md": "Test command: `python3 check.py`\n", "check.py": "print('checked')\n"},
        tmp_path / "project",
    )
    monkeypatch.setenv("AGENT_LOOP_SETUP_COMMAND", "python3 -c \"open('ready','w').write('1')\"")
    code, out, _ = _run(["sandbox", "run", "--dir", str(project)], capsys)
    assert code == 0
    assert "python3 check.py (from AGENTS.md)" in out
    assert "-- setup: python3 -c" in out
    assert "checked" in out
    assert not (project / "ready").exists()  # the setup ran on the copy


@needs_bwrap
def test_run_json(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        ["sandbox", "run", "--json", "--dir", str(folder), "--", "python3", "app.py"], capsys
    )
    assert code == 0
    result = json.loads(out)
    assert result["backend"] == "bwrap"
    assert result["exit_code"] == 0
    assert result["output"]["head"] == "from the app\n"


def test_run_without_a_command_or_detection_exits_2(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(["sandbox", "run", "--dir", str(folder)], capsys)
    assert code == cli.EXIT_CONFIG
    assert "no command given and none detected" in err


def test_a_shell_test_command_is_a_configuration_error(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LOOP_TEST_COMMAND", "pytest && rm -rf /")
    code, out, err = _run(["sandbox", "run", "--dir", str(folder)], capsys)
    assert code == cli.EXIT_CONFIG
    assert out == ""
    assert "AGENT_LOOP_TEST_COMMAND" in err
    assert "shell syntax" in err


def test_off_runs_nothing(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LOOP_SANDBOX", "off")
    code, _, err = _run(["sandbox", "run", "--dir", str(folder), "--", "true"], capsys)
    assert code == cli.EXIT_CONFIG
    assert "the sandbox is off" in err


def test_no_backend_exits_2_with_the_ways_out(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_backend(monkeypatch)
    code, out, err = _run(["sandbox", "run", "--dir", str(folder), "--", "true"], capsys)
    assert code == cli.EXIT_CONFIG
    assert out == ""
    assert "no sandbox can run the repository's tests here" in err
    assert "AGENT_LOOP_SANDBOX=off" in err


@needs_bwrap
def test_a_home_folder_is_never_copied(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["sandbox", "run", "--dir", str(Path.home()), "--", "true"], capsys)
    assert code == cli.EXIT_CONFIG
    assert "home folder" in err


def test_a_missing_folder_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["sandbox", "run", "--dir", str(tmp_path / "nope"), "--", "true"], capsys)
    assert code == cli.EXIT_CONFIG
    assert "not a folder" in err


def test_sandbox_needs_an_action(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["sandbox"])
    assert exited.value.code == 2


def test_check_states_the_real_bound_and_the_setup_network(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22: RLIMIT_AS bounds each process, so the check names the sandbox's total."""
    monkeypatch.setenv("AGENT_LOOP_SANDBOX_MEMORY_MB", "256")
    monkeypatch.setenv("AGENT_LOOP_SANDBOX_MAX_PROCESSES", "256")
    _, out, _ = _run(["sandbox", "check"], capsys)
    assert "256 MB of address space per process" in out
    from agent_loop_common.sandbox._cgroup import cgroup_support

    if cgroup_support().version is None:  # only rlimits here: the product is the bound
        assert "up to 65,536 MB in total" in out
    else:
        assert "256 MB of memory and 256 processes for the whole sandbox (cgroup v" in out
    assert "--pids-limit 256 bound the whole container" in out
    assert "bwrap setup steps:" in out


@needs_bwrap
def test_run_never_copies_git_and_says_what_it_left_out(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 22: a token in `.git/config` stays out; issue 24: a `.venv` is not copied silently."""
    secret = "ghp_" + "S" * 36
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text(
        f'[remote "origin"]\n\turl = https://x:{secret}@github.com/o/r\n'
    )
    (folder / ".venv" / "bin").mkdir(parents=True)
    (folder / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (folder / "sub").mkdir()
    (folder / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    code, out, _ = _run(["sandbox", "run", "--dir", str(folder), "--", "find", "."], capsys)
    assert code == 0
    listed = out.split("-- bwrap")[0]
    assert "./app.py" in listed
    assert ".git" not in listed
    assert ".venv" not in listed
    assert "-- note: not copied: .git (git's metadata is never copied" in out
    assert "-- note: not copied: .venv (an environment built on this host" in out
    assert secret not in out


@needs_bwrap
def test_check_tries_the_setup_network(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_loop_common.sandbox._setup_net import SetupNetwork

    monkeypatch.setattr(
        BwrapSandbox,
        "setup_network",
        lambda self: SetupNetwork("/usr/bin/unshare", "/nonexistent/slirp4netns", "ip", True),
    )
    _, out, _ = _run(["sandbox", "check"], capsys)
    assert "bwrap setup steps: cannot run here, the setup step's network needs slirp4netns" in out


@needs_bwrap
def test_a_run_that_exits_0_but_is_not_a_pass_exits_1(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hard rules a tick applies: a printed failure under exit 0 is no pass."""
    script = "print('1 failed, 1 passed in 0.10s')"
    code, out, _ = _run(
        ["sandbox", "run", "--dir", str(folder), "--", "python3", "-c", script], capsys
    )
    assert code == 1
    assert "-- bwrap: exit 0: 1 failed, 1 passed" in out
    assert (
        "-- verdict: failed: inconsistent evidence: the command exited 0 but a printed "
        "test summary reports 1 failing"
    ) in out
