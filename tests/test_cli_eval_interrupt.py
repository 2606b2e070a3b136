"""Ctrl-C in the middle of `agent-loop eval run`: exit 130, no traceback, and no results
file that looks complete: before any instance finished, one line saying that nothing was
written and what to do; after some did (`eval score`), their results kept in the run's
files, marked partial everywhere they are read (`"complete": false` in results.json, the
report, the summary, `eval compare`). In the middle of `eval mine`: exit 130, and the
pull requests decided so far kept (each is a whole line, written as it is decided),
which the line says.

The command runs as its own process (the installed `agent-loop`), in its own session
with SIGINT at its default as a terminal's foreground job has it; the signal goes to
its whole process group, as a terminal's Ctrl-C does, while the instance is in flight
(its model never answers and its tests would take a minute).
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from flyte.ai.agents import LLMMessage

from agent_loop import cli
from agent_loop_eval import Instance, diff_files, read_results, read_skipped
from agent_loop_testing import (
    GitHubEmulator,
    HistoryIssue,
    HistoryPull,
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


def test_ctrl_c_before_any_instance_finished_exits_130_and_leaves_no_results(
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
        f"agent-loop eval run: interrupted before any instance finished; nothing written to "
        f"{out} (run it again, with --limit or --instances for fewer)"
    ]
    assert "results:" not in rest
    assert not out.exists()


def _interrupted(
    argv: list[str], env: dict[str, str], cwd: pathlib.Path, ready: str
) -> tuple[int, str, str]:
    """Run `agent-loop argv`, Ctrl-C it once a line of its output holds `ready`."""
    proc = subprocess.Popen(
        [CLI, *argv],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    printed: list[str] = []
    try:
        assert proc.stdout is not None
        while ready not in (line := proc.stdout.readline()):
            assert line, "".join(printed)
            printed.append(line)
        printed.append(line)
        time.sleep(2)
        os.killpg(proc.pid, signal.SIGINT)
        rest, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, "".join(printed) + rest, err


def test_ctrl_c_mid_mine_keeps_what_was_decided_and_says_so(
    tmp_path: pathlib.Path, monkeypatch: Any
) -> None:
    emulator = GitHubEmulator("acme", "calc")
    emulator.seed_files({"README.md": "x\n"})
    history: list[HistoryIssue | HistoryPull] = []
    for name in ("one", "two"):
        history += [
            HistoryIssue(f"issue-{name}", f"Need {name}()", wait=timedelta(days=1)),
            HistoryPull(
                name,
                f"Add {name}()",
                {f"src/{name}.py": "x = 1\n", f"tests/test_{name}.py": "def test(): pass\n"},
                closes=(f"issue-{name}",),
            ),
        ]
    emulator.seed_history(history)
    out = tmp_path / "instances.jsonl"
    # `one` is decided at once (no test outcomes: setup_failed); `two`'s base holds
    # `one`'s code, and its tests there take a minute: the Ctrl-C comes then.
    slow = "sh -c 'test -f src/one.py && sleep 60; true'"
    with serve_for_cli(
        monkeypatch,
        emulator,
        tmp_path / "home",
        AGENT_LOOP_SANDBOX="bwrap",
        AGENT_LOOP_TEST_COMMAND=slow,
    ):
        env = {**os.environ, "HOME": str(tmp_path / "user")}
        code, printed, err = _interrupted(
            ["eval", "mine", "--out", str(out)], env, tmp_path, "Add one(): skipped"
        )
    assert code == 130, (printed, err)
    assert "Traceback" not in err
    assert err.splitlines()[-1] == (
        f"agent-loop eval mine: interrupted; the pull requests decided so far are kept in "
        f"{out} and instances.skipped.jsonl, and the next run goes on from there"
    )
    assert [s.title for s in read_skipped(out.with_name("instances.skipped.jsonl"))] == [
        "Add one()"
    ]


def test_ctrl_c_after_an_instance_finished_keeps_it_marked_partial(
    tmp_path: pathlib.Path, monkeypatch: Any, capsys: Any
) -> None:
    """An hour of model spend was lost to a Ctrl-C near a run's end; the finished
    instances are now kept, and nothing reading the files can take them for a run."""
    emulator = GitHubEmulator()
    sha = emulator.seed_files({"README.md": "# calc\n", "tests/test_x.py": "def test(): pass\n"})
    patch = diff_files({}, {"src/x.py": "x = 1\n"})
    file = tmp_path / "instances.jsonl"
    lines = [
        Instance(
            instance_id=f"acme__widgets-{n}",
            repo=emulator.full_name,
            base_commit=sha,
            problem_statement="Add x",
            patch=patch,
            FAIL_TO_PASS=["tests/test_x.py::test"],
            created_at=datetime.now(UTC),
            test_command=command,
        ).model_dump_json()
        for n, command in ((5, "true"), (6, "sleep 60"))
    ]
    file.write_text("".join(f"{line}\n" for line in lines))
    out = tmp_path / "runs" / "gold"
    with serve_for_cli(monkeypatch, emulator, tmp_path / "home", AGENT_LOOP_SANDBOX="bwrap"):
        env = {**os.environ, "HOME": str(tmp_path / "user")}
        argv = ["eval", "score", str(file), "--gold", "--out", str(out)]
        code, printed, err = _interrupted(argv, env, tmp_path, "[1/2] acme__widgets-5")
    assert code == 130, (printed, err)
    assert "Traceback" not in err
    assert err.splitlines()[-1] == (
        f"agent-loop eval score: interrupted; the 1 finished instance(s) of 2 are kept in "
        f'{out}, marked partial ("complete": false in results.json; eval compare warns of '
        "it); to run the rest: --instances acme__widgets-6, into another --out"
    )
    assert "interrupted after 1 of 2 instances; not a complete run\n" in printed
    assert f"results:     {out / 'results.json'}" in printed
    data = json.loads((out / "results.json").read_text())
    assert {k: v for k, v in data.items() if k != "results"} == {
        "complete": False,
        "instances": 2,
        "finished": 1,
        "unfinished": ["acme__widgets-6"],
    }
    run = read_results(out)
    assert (run.complete, [r.instance_id for r in run.results]) == (False, ["acme__widgets-5"])
    predictions = (out / "predictions.jsonl").read_text().splitlines()
    assert [json.loads(x)["instance_id"] for x in predictions] == ["acme__widgets-5"]
    report = (out / "report.html").read_text()
    assert "interrupted after 1 of 2 instances; not a complete run" in report
    assert "Not run: acme__widgets-6" in report

    # `eval compare` pairs what it finished, and says first that it is no whole run
    capsys.readouterr()
    assert cli.main(["eval", "compare", str(out), str(out)]) == 0
    shown = capsys.readouterr().out.splitlines()
    warning = (
        "is a partial run (interrupted after 1 of 2 instances; not a complete run): only "
        "the instances it finished are paired, the first to finish, not a fair sample; "
        "compare complete runs for a verdict"
    )
    assert shown[2:5] == [f"warning: A {warning}", f"warning: B {warning}", "1 instance(s) paired"]
    assert cli.main(["eval", "compare", str(out), str(out), "--json"]) == 0
    printed_json, err = capsys.readouterr()
    assert json.loads(printed_json)["partial_a"] == (
        "interrupted after 1 of 2 instances; not a complete run"
    )
    assert f"agent-loop eval compare: warning: A ({out}) is a partial run" in err

    # its predictions, scored again, say where they come from; the rest are `missing`
    again = tmp_path / "runs" / "again"
    with serve_for_cli(monkeypatch, emulator, tmp_path / "home", AGENT_LOOP_SANDBOX="bwrap"):
        predictions = out / "predictions.jsonl"
        code = cli.main(["eval", "score", str(file), str(predictions), "--out", str(again)])
    shown = capsys.readouterr().out
    assert code == 0, shown
    assert (
        f"  note: {predictions} is a partial run's (interrupted after 1 of 2 instances; not "
        "a complete run): the instances it did not finish have no prediction in it\n"
    ) in shown
    assert "  acme__widgets-6: no prediction (missing, not resolved)\n" in shown
    assert read_results(again).complete
