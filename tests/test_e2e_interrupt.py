"""Ctrl-C and SIGTERM stop a real `agent-loop run builder` cleanly (issue 31).

Each case starts the console script in its own process, as a user or a cluster does:
settings from the environment, Flyte local mode, githubkit over HTTP to the served
emulator, the model through litellm to a scripted model served as an OpenAI-compatible
API, the sample project's tests in the real bubblewrap sandbox. The process is signalled
at a phase it is provably in (never after a sleep): while the model call is in flight
(the served model holds it: `HeldCall`), or while the tests run (the staged test writes
a file in the sandbox's `/tmp`, then waits). Then: the process exits 130 / 143, the
claim is gone (no claim ref, the claim comment released), the run is recorded
`interrupted`, and a rerun takes the issue at once and opens its pull request. The
same holds when the signal comes twice at once (what `uv run` hands its child when its
process group is signalled without a terminal), and a signal before the tick starts
(in its sandbox preflight, held: `HeldProgram`) stops the command there, claiming
nothing, even when the process started with SIGINT ignored (a shell's background job).
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import pytest

from agent_loop import cli
from agent_loop.demo import demo_test_command
from agent_loop_common.claims import parse_dibs
from agent_loop_common.records import Outcome, Role
from agent_loop_common.runtime import TickSummary
from agent_loop_common.sandbox import _select
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    CALC_ISSUE,
    CALC_REPO,
    CALC_SUB,
    TESTS_SUB,
    VERIFIED,
    CliLoop,
    GitHubEmulator,
    HeldCall,
    HeldProgram,
    ScriptedModel,
    bwrap_e2e_marks,
    call,
    serve_chat_model,
    serve_for_cli,
    submit_subtract,
    subtract_try,
    turn,
)

pytestmark = bwrap_e2e_marks()

MARKER = "agent-loop-e2e-tests-running"
"""What the staged test writes in the sandbox's `/tmp` before it waits."""

TESTS_WAITING = TESTS_SUB + (
    "\n\ndef test_waits_for_the_signal():\n"
    "    import pathlib\n"
    "    import time\n"
    f"    pathlib.Path('/tmp/{MARKER}').write_text('running')\n"
    "    time.sleep(300)\n"
)
"""The sample's tests plus one that says it runs, then waits for the signal."""


def _agent_loop() -> str:
    """The installed console script, next to this interpreter."""
    return str(pathlib.Path(sys.executable).with_name("agent-loop"))


def _environ(
    url: str, emulator: GitHubEmulator, tmp: pathlib.Path, api_base: str
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
    env.update(
        {
            "GITHUB_API_URL": url,
            "GITHUB_TOKEN": emulator.bot_token,
            "AGENT_LOOP_REPO": emulator.full_name,
            "AGENT_LOOP_HOME": str(tmp / "home"),
            "AGENT_LOOP_MODEL": "openai/scripted",
            "AGENT_LOOP_API_BASE": api_base,
            "OPENAI_API_KEY": "sk-test-not-a-key",
            "AGENT_LOOP_SANDBOX": "bwrap",
            "AGENT_LOOP_TEST_COMMAND": demo_test_command(),
            "AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS": "120",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
    )
    return env


def _markers(pid: int) -> list[pathlib.Path]:
    """MARKER files in the sandbox workspaces of process `pid` (their `/tmp` is a folder
    of the workspace, `agent-loop-sandbox-<pid>-*` in the system's temporary folder)."""
    found: list[pathlib.Path] = []
    for folder in pathlib.Path(tempfile.gettempdir()).glob(f"agent-loop-sandbox-{pid}-*"):
        # os.walk skips what vanishes meanwhile (the sandbox makes and removes folders)
        found += [pathlib.Path(d, MARKER) for d, _, files in os.walk(folder) if MARKER in files]
    return found


def _wait_for(found: object, what: str, proc: subprocess.Popen[str], timeout: float = 180) -> None:
    """Wait until `found()` is true (observable state), failing early if `proc` ended."""
    deadline = time.monotonic() + timeout
    while not found():  # type: ignore[operator]
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"agent-loop ended ({proc.returncode}) before {what}:\n{out}\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no {what} within {timeout} s")
        time.sleep(0.05)


@pytest.fixture
def emulator() -> Iterator[GitHubEmulator]:
    _select.clear_probe_cache()
    em = GitHubEmulator()
    em.seed_files(CALC_REPO)
    em.add_issue(*CALC_ISSUE)
    yield em
    _select.clear_probe_cache()


def _interrupted(
    emulator: GitHubEmulator,
    tmp_path: pathlib.Path,
    model: ScriptedModel,
    *,
    sig: signal.Signals,
    during: str,
    echo: bool = False,
) -> tuple[subprocess.CompletedProcess[str], TickSummary, int]:
    """Run `agent-loop run builder --json` and signal it `during` the model call or the
    tests (`echo`: twice, 200 ms apart, as `uv run` delivers a signal sent to its process
    group when no terminal did); its exit, printed summary and process id."""
    held = HeldCall(model, at=1 if during == "model" else 10_000)
    with emulator.serve() as url, serve_chat_model(held) as api_base, held:
        env = _environ(url, emulator, tmp_path, api_base)
        proc = subprocess.Popen(
            [_agent_loop(), "run", "builder", "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if during == "model":
            _wait_for(held.reached.is_set, "the model call", proc)
        else:
            _wait_for(lambda: _markers(proc.pid), "the tests running", proc)
        proc.send_signal(sig)
        if echo:  # uv run forwards the group's signal to its child, 200 ms later
            time.sleep(0.2)
            proc.send_signal(sig)
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    summary = TickSummary.model_validate_json(out.strip().splitlines()[-1])
    return done, summary, proc.pid


def _model_then_tests() -> ScriptedModel:
    """A try whose staged tests include one that waits (the verifier is never reached)."""
    return ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="src/calc.py", content=CALC_SUB)]),
            turn(tool_calls=[call("stage_file", path="tests/test_calc.py", content=TESTS_WAITING)]),
            turn(tool_calls=[submit_subtract()]),
            turn("Submitted."),
        ],
        name="builder",
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("during", ["model", "tests"])
def test_a_signal_releases_the_claim_records_the_run_and_a_rerun_works_at_once(
    emulator: GitHubEmulator,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sig: signal.Signals,
    during: str,
) -> None:
    model = _model_then_tests() if during == "tests" else ScriptedModel([], name="builder")
    done, summary, pid = _interrupted(emulator, tmp_path, model, sig=sig, during=during)
    _assert_stopped_cleanly(emulator, done, summary, sig)
    if during == "tests":  # the sandbox's test process went with the run, its folder too
        assert not _markers(pid)
    _assert_rerun_works(emulator, tmp_path, monkeypatch, capsys, summary, sig)


def test_one_signal_delivered_twice_at_once_is_one_ctrl_c(
    emulator: GitHubEmulator,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`uv run agent-loop run ...` signalled as a process group without a terminal
    (`kill -INT -PGID`, a CI runner's cancel) hands its child the signal twice, 200 ms
    apart: that is one Ctrl-C, not the second one that exits at once leaving the claim."""
    model = ScriptedModel([], name="builder")
    sig = signal.SIGINT
    done, summary, _ = _interrupted(emulator, tmp_path, model, sig=sig, during="model", echo=True)
    _assert_stopped_cleanly(emulator, done, summary, sig)
    _assert_rerun_works(emulator, tmp_path, monkeypatch, capsys, summary, sig)


def _assert_stopped_cleanly(
    emulator: GitHubEmulator,
    done: subprocess.CompletedProcess[str],
    summary: TickSummary,
    sig: signal.Signals,
) -> None:
    assert done.returncode == 128 + sig, done.stderr
    assert summary.outcome == Outcome.INTERRUPTED
    assert summary.target == "issue#1"
    assert f"{sig.name}: claim on {emulator.full_name} issue #1 released" in done.stderr
    # The claim is gone: no claim ref, and the claim comment carries its release.
    assert emulator.refs("refs/agent-loop/") == {}
    (claim,) = [c for c in emulator.comments(1) if "agent-loop:dibs" in c.body]
    markers = parse_dibs(claim.body)
    assert [m.op for m in markers] == ["claim", "release"]
    assert {m.run for m in markers} == {summary.run_id}
    assert f"stopped by the operator ({sig.name})" in claim.body
    assert emulator.pulls() == []


def _assert_rerun_works(
    emulator: GitHubEmulator,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    summary: TickSummary,
    sig: signal.Signals,
) -> None:
    """The run is recorded; a rerun, at once, takes the issue and opens the pull request
    (in process and without the sandbox: what is proven is that nothing blocks it)."""
    with serve_for_cli(monkeypatch, emulator, tmp_path / "home", AGENT_LOOP_SANDBOX="off"):
        loop = CliLoop(emulator, cli.main, capsys)
        record = loop.record(summary.run_id)
        assert record.outcome is Outcome.INTERRUPTED
        assert record.error == f"stopped by the operator ({sig.name}) at a safe point"
        again = ScriptedModel(
            subtract_try(CALC_SUB), routes={VERIFIER_MARKER: [turn(VERIFIED)]}, name="again"
        )
        rerun = loop.run(Role.BUILDER, again, "--issue", "1")
    assert rerun.outcome == Outcome.OPENED_PR


def test_a_signal_before_the_tick_starts_stops_it_there_even_with_sigint_ignored(
    emulator: GitHubEmulator, tmp_path: pathlib.Path
) -> None:
    """A shell script's background job starts with SIGINT ignored, and a script stops it
    with `kill -INT`: from the command's first moment (here: its sandbox preflight,
    held), a signal is a stop request, honoured before anything is claimed."""
    with (
        HeldProgram("bwrap") as held,
        emulator.serve() as url,
        serve_chat_model(ScriptedModel([], name="builder")) as api,
    ):
        env = _environ(url, emulator, tmp_path, api)
        env["PATH"] = held.path(env.get("PATH", os.defpath))
        proc = subprocess.Popen(
            [_agent_loop(), "run", "builder", "--issue", "1"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
        try:
            _wait_for(held.reached, "the sandbox preflight", proc)
            proc.send_signal(signal.SIGINT)
        finally:
            held.release()
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, f"{out}\n{err}"
    assert "SIGINT: stopped before the tick started: nothing was claimed" in err
    assert "Traceback" not in err
    assert emulator.comments(1) == []
    assert emulator.refs("refs/agent-loop/") == {}
    assert not (tmp_path / "home" / "reports").exists() or not any(
        (tmp_path / "home" / "reports").iterdir()
    )


@pytest.mark.parametrize("mode", ["text", "quiet"])
def test_a_signal_after_the_tick_started_and_before_the_claim_says_nothing_was_claimed(
    emulator: GitHubEmulator, tmp_path: pathlib.Path, mode: str
) -> None:
    """Ctrl-C while the tick checks who wrote its issue, before it claims it: the summary's
    headline says nothing was claimed (it read `builder: interrupted on ?`), and nothing
    was."""
    holder: list[subprocess.Popen[str]] = []
    # The trust check of issue #1's author (before any claim), answered only after the
    # signal reached the process.
    emulator.inject_fault(
        "GET",
        r"/repos/acme/widgets/collaborators/[^/]+/permission$",
        status=None,
        before=lambda: holder[0].send_signal(signal.SIGINT),
    )
    with emulator.serve() as url, serve_chat_model(ScriptedModel([], name="builder")) as api:
        env = _environ(url, emulator, tmp_path, api)
        quiet = ["--quiet"] if mode == "quiet" else []
        proc = subprocess.Popen(
            [_agent_loop(), "run", "builder", "--issue", "1", *quiet],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        holder.append(proc)
        out, err = proc.communicate(timeout=180)
    assert proc.returncode == 130, f"{out}\n{err}"
    headline = next(line for line in out.splitlines() if line.startswith("builder: "))
    assert headline.startswith("builder: interrupted before it claimed anything"), out
    assert "?" not in headline
    assert "SIGINT: stopped before claiming anything: nothing to release" in err
    assert emulator.comments(1) == []
    assert emulator.refs("refs/agent-loop/") == {}
