"""Wall time of one tick in its own process, as a cron job runs it.

Each tick is a fresh `agent-loop run builder --json` process (the installed console
script, no `uv run` in front) against the GitHub emulator served on loopback, with the
model reached through litellm over HTTP (an OpenAI-compatible server on loopback that a
`ScriptedModel` answers at once), so the times are the loop's own: interpreter start,
imports, Flyte local mode, GitHub requests, memory, the model library. The sandbox is
off (`AGENT_LOOP_SANDBOX=off`, a draft PR): the repository's tests are not the loop's
cost. The kinds of tick, each the median over RUNS (default 3) fresh homes:

- first idle: a repository with no issue and a fresh home; the tick looks, finds
  nothing, counts itself idle and leaves its proof (the full path: Flyte local mode);
- steady idle: the next STEADY (3) ticks in the same home, nothing changed: the lean
  path proves each idle with conditional reads before Flyte starts (builder, reviewer);
- issue -> PR: one fresh issue; the tick claims it, builds with 3 model turns, has the
  verifier check it (1 turn), opens the PR and records the run.

`billed` is what the emulator's rate limit says the ticks used (304s are free). `CPU` is
the user + system time of the tick's process (`getrusage` of the children): on a shared
machine the wall time moves with the load, the CPU time hardly.

Bytecode: a cron job on a normal machine imports from cached `.pyc` files after its
first run (and Flyte's image builder compiles them into agent images), but with
`PYTHONDONTWRITEBYTECODE=1` in the environment (as on CI machines) every process compiles
every module from source again: seconds of `compile`. The children therefore write their
caches under a private `PYTHONPYCACHEPREFIX`, and one uncounted issue -> PR tick fills it
first; its time is shown as the first tick of a fresh install.

- issue -> PR with the tests in the sandbox (`--sandboxed` runs only this kind): the
  zero-configuration calc sample (`ZERO_CONFIG_CALC`, pip from a local wheelhouse) in
  bubblewrap, with a model that answers at once (`InstantModel` behind the same
  OpenAI-compatible server): the tests' part of the tick (the default environment's
  build, the run on the base commit, the run on the change) against the conversation's.
  The builder starts the baseline (the environment's build and the run on the base) as
  its checks open, right after the claim, as the `baseline` stage beside `build`; the
  `test` stage is what the tests still cost once the change is submitted: the wait for
  the baseline, if it is not done, and the change's own run (copying the tree and the
  environment in, then the test command, whose own time is the record's `tests.after`).
  Again with a model that takes PACE seconds per call: when the conversation outlasts
  the environment's build, as a real model's does, `test` is the change's run alone.

Run with `uv run --frozen python bench/tick_time.py [RUNS] [--sandboxed]`; it prints
Markdown tables.
`python -X importtime` on the same command shows what the imports cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from flyte.ai.agents import LLMCallable, LLMMessage

from agent_loop_common.llm import ALLOW_MODEL_REQUESTS_ENV
from agent_loop_common.records import RunRecord
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    ZERO_CONFIG_CALC,
    GitHubEmulator,
    InstantModel,
    ScriptedModel,
    bwrap_works,
    call,
    serve_chat_model,
    turn,
    wheelhouse,
)

CLI = str(Path(sys.executable).with_name("agent-loop"))
CORE = "def make_widget(name, colour='blue'):\n    return {'name': name, 'colour': colour}\n"


def _model() -> ScriptedModel:
    return ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="src/widgets/core.py", content=CORE)]),
            turn(tool_calls=[call("submit_implementation", title="Colour", body="b", summary="s")]),
            turn("Done."),
        ],
        routes={VERIFIER_MARKER: [turn('{"verified": true, "notes": "Matches the issue."}')]},
    )


def _emulator() -> GitHubEmulator:
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "# widgets\n", "src/widgets/core.py": "x = 1\n"})
    return emulator


CPU: dict[str, list[float]] = {}
"""CPU seconds (user + system) of each kind of tick's processes, by `_tick`'s `kind`."""


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _tick(
    env: dict[str, str], agent: str = "builder", kind: str = ""
) -> tuple[float, dict[str, object]]:
    """One tick in a fresh process: its wall time and its summary (its CPU time goes to
    `CPU[kind]`: unlike the wall time, it hardly moves with the machine's load)."""
    began, cpu = time.perf_counter(), _cpu()
    done = subprocess.run(
        [CLI, "run", agent, "--json"], env=env, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - began
    CPU.setdefault(kind, []).append(_cpu() - cpu)
    if done.returncode != 0:
        raise SystemExit(f"tick failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return seconds, json.loads(done.stdout.splitlines()[-1])


def _stages(home: Path, run_id: str) -> dict[str, float]:
    """The run's seconds per stage, from its record in the local memory."""
    found = next(home.glob(f"flyte-data/**/runs/{run_id}.json"))
    return dict(json.loads(found.read_text())["stage_seconds"])


_PYCACHE = Path(tempfile.mkdtemp(prefix="tick-time-pycache-"))
"""The children's bytecode cache (see the module docstring)."""


def _env(home: Path, github_url: str, api_base: str, emulator: GitHubEmulator) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GITHUB_", "AGENT_LOOP_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        {
            "PYTHONPYCACHEPREFIX": str(_PYCACHE),
            "GITHUB_API_URL": github_url,
            "GITHUB_TOKEN": emulator.bot_token,
            "AGENT_LOOP_REPO": emulator.full_name,
            "AGENT_LOOP_HOME": str(home),
            "AGENT_LOOP_MODEL": "openai/scripted",
            "AGENT_LOOP_API_BASE": api_base,
            "AGENT_LOOP_SANDBOX": "off",
            "OPENAI_API_KEY": "sk-bench-not-a-key",
            ALLOW_MODEL_REQUESTS_ENV: "1",
        }
    )
    return env


PACE = 5.0
"""Seconds the paced model takes per call (a real model takes longer, and many more turns)."""

STEADY = 3
"""Idle ticks measured after the first, in the same home."""


def _billed(emulator: GitHubEmulator, before: int) -> int:
    return before - emulator.rate_limit_remaining(emulator.bot)


def _idle_series(
    tmp: Path, i: int, agent: str, first: list[float], steady: list[float], billed: dict[str, int]
) -> None:
    """One fresh home: the first idle tick of `agent`, then `STEADY` more."""
    emulator = _emulator()
    with emulator.serve() as github_url, serve_chat_model(_model()) as api_base:
        env = _env(Path(tmp) / f"idle-{agent}-{i}", github_url, api_base, emulator)
        for n in range(1 + STEADY):
            before = emulator.rate_limit_remaining(emulator.bot)
            key = f"{agent} first" if n == 0 else f"{agent} steady"
            seconds, summary = _tick(env, agent, key)
            if summary["outcome"] != "idle":
                raise SystemExit(f"expected an idle tick, got {summary}")
            (first if n == 0 else steady).append(seconds)
            billed[key] = billed.get(key, 0) + _billed(emulator, before)


def _record(home: Path, run_id: str) -> RunRecord:
    found = next(home.glob(f"flyte-data/**/runs/{run_id}.json"))
    return RunRecord.model_validate_json(found.read_text())


def _seconds_of(run: str) -> float:
    """`exit 0: 2 passed (0.61 s)` -> 0.61."""
    match = re.search(r"\(([\d.]+) s\)\s*$", run)
    return float(match.group(1)) if match else float("nan")


_TIMED_CHILD = """\
import json, sys, time
from agent_loop_common.sandbox import Sandbox
untimed = Sandbox.run
async def timed(self, tree, argv, **kw):
    started = time.perf_counter()
    try:
        return await untimed(self, tree, argv, **kw)
    finally:
        spent = time.perf_counter() - started
        line = {"sandbox_run": spent, "change": kw.get("changes") is not None}
        print(json.dumps(line), file=sys.stderr, flush=True)
Sandbox.run = timed
from agent_loop.cli import main
sys.exit(main(sys.argv[1:]))
"""
"""The CLI, printing the wall time of each sandbox run on stderr (the change's own run
has no stage of its own: it is the end of the `test` stage)."""


def _timed_tick(env: dict[str, str], kind: str) -> tuple[float, dict[str, object], float]:
    """A builder tick through `_TIMED_CHILD`: its wall time, summary, and the wall time
    of its last sandbox run on a change."""
    began, cpu = time.perf_counter(), _cpu()
    argv = [sys.executable, "-c", _TIMED_CHILD, "run", "builder", "--json"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - began
    CPU.setdefault(kind, []).append(_cpu() - cpu)
    if done.returncode != 0:
        raise SystemExit(f"tick failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    runs = [
        json.loads(line) for line in done.stderr.splitlines() if line.startswith('{"sandbox_run"')
    ]
    change = [float(r["sandbox_run"]) for r in runs if r["change"]]
    return seconds, json.loads(done.stdout.splitlines()[-1]), change[-1] if change else 0.0


def _paced(seconds: float) -> LLMCallable:
    """`InstantModel` answering each call after `seconds`, as a real model takes time."""
    instant = InstantModel()

    async def answer(
        model: str, system: str, messages: list[dict[str, Any]], tools: Any
    ) -> LLMMessage:
        await asyncio.sleep(seconds)
        return await instant.answer(model, system, messages, tools)

    return answer


def sandboxed(runs: int, pace: float = 0.0) -> None:
    """Issue -> PR ticks with the tests in bubblewrap (see the module docstring)."""
    works, why = bwrap_works()
    if not works:
        print(f"Issue -> PR with the tests in the sandbox: skipped ({why}).")
        return
    walls: list[float] = []
    stages: dict[str, list[float]] = {}
    change_runs: list[float] = []
    commands: list[float] = []
    kind = f"sandboxed {pace:g}"
    with tempfile.TemporaryDirectory() as tmp, wheelhouse() as wheels:
        for i in range(runs + 1):  # the first fills the bytecode cache: not counted
            emulator = GitHubEmulator()
            emulator.seed_files(ZERO_CONFIG_CALC)
            emulator.add_issue("Add subtract()", "We need `subtract(a, b)` in calc.")
            model = _paced(pace) if pace else InstantModel().answer
            with emulator.serve() as github_url, serve_chat_model(model) as api:
                home = Path(tmp) / f"sandboxed-{i}"
                env = _env(home, github_url, api, emulator)
                env.update(
                    {
                        "AGENT_LOOP_SANDBOX": "bwrap",
                        "AGENT_LOOP_SANDBOX_READONLY_PATHS": str(wheels),
                        "AGENT_LOOP_PIP_OPTIONS": f"--no-index --find-links {wheels}",
                    }
                )
                seconds, summary, change_run = _timed_tick(env, kind)
            if summary["outcome"] != "opened_pr":
                raise SystemExit(f"expected a pull request, got {summary}")
            if i == 0:
                continue
            record = _record(home, str(summary["run_id"]))
            walls.append(seconds)
            for stage, spent in record.stage_seconds.items():
                stages.setdefault(stage, []).append(spent)
            commands.append(_seconds_of(record.tests.after if record.tests else ""))
            change_runs.append(change_run)
    model = f"a model answering each call in {pace:g} s" if pace else "an instant model"
    print(
        f"Issue -> PR with the tests in the sandbox (bubblewrap, default setup, {model}), "
        f"{runs} ticks each in its own process, median:\n"
    )
    print("| part | median | each |")
    print("|---|---:|---|")
    rows = [("tick, wall", walls), *((f"stage `{k}`", v) for k, v in stages.items())]
    rows.append(("the change's own run in the sandbox (copy, environment, command)", change_runs))
    rows.append(("of which the test command (its record's `tests.after`)", commands))
    rows.append(("CPU of the tick's processes", CPU[kind][1:]))
    for label, values in rows:
        each = ", ".join(f"{v:.2f}" for v in values)
        print(f"| {label} | {statistics.median(values):.2f} s | {each} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Wall and CPU time of idle and issue -> PR ticks, each `agent-loop run` "
        "in its own process against the emulator; prints Markdown tables.",
        epilog="Without --sandboxed: the idle ticks, the issue -> PR tick without tests, "
        "then the sandboxed ticks. Several minutes at RUNS=3 on 2 cores.",
    )
    parser.add_argument(
        "runs", nargs="?", type=int, default=3, metavar="RUNS", help="fresh homes per kind (3)"
    )
    parser.add_argument(
        "--sandboxed",
        action="store_true",
        help="only the issue -> PR ticks with the tests in bubblewrap (instant model, then "
        f"a model taking {PACE:g} s a call)",
    )
    args = parser.parse_args()
    runs = int(args.runs)
    if args.sandboxed:
        sandboxed(runs)
        sandboxed(runs, pace=PACE)
        return
    first: dict[str, list[float]] = {"builder": [], "reviewer": []}
    steady: dict[str, list[float]] = {"builder": [], "reviewer": []}
    billed: dict[str, int] = {}
    built: list[float] = []
    stages: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        emulator = _emulator()
        emulator.add_issue("Add a colour", "Widgets need a colour.")
        with emulator.serve() as github_url, serve_chat_model(_model()) as api_base:
            fresh, _ = _tick(_env(Path(tmp) / "first", github_url, api_base, emulator))
        for i in range(runs):
            for agent in ("builder", "reviewer"):
                _idle_series(Path(tmp), i, agent, first[agent], steady[agent], billed)
            emulator = _emulator()
            model = _model()
            with emulator.serve() as github_url, serve_chat_model(model) as api_base:
                emulator.add_issue("Add a colour", "Widgets need a colour.")
                home = Path(tmp) / f"build-{i}"
                env = _env(home, github_url, api_base, emulator)
                seconds, summary = _tick(env, "builder", "builder issue -> PR")
                if summary["outcome"] != "opened_pr":
                    raise SystemExit(f"expected a pull request, got {summary}")
                model.assert_finished()
                built.append(seconds)
                for stage, spent in _stages(home, str(summary["run_id"])).items():
                    stages.setdefault(stage, []).append(spent)
    shutil.rmtree(_PYCACHE, ignore_errors=True)
    print(f"First issue -> PR tick of a fresh install (compiles every module): {fresh:.2f} s\n")
    print(f"Each tick in its own process (`agent-loop run AGENT`), {runs} fresh homes:\n")
    print("| tick | median wall | median CPU | billed requests per tick | wall of each run |")
    print("|---|---:|---:|---:|---|")
    rows: list[tuple[str, list[float], str]] = []
    for agent in ("builder", "reviewer"):
        rows.append((f"{agent} idle, first (full path)", first[agent], f"{agent} first"))
        label = f"{agent} idle, steady (lean path, {STEADY} per home)"
        rows.append((label, steady[agent], f"{agent} steady"))
    rows.append(("builder issue -> PR", built, "builder issue -> PR"))
    for label, values, key in rows:
        shown = ", ".join(f"{v:.2f}" for v in values)
        per_tick = f"{billed[key] / len(values):g}" if key in billed else "-"
        cpu = statistics.median(CPU[key])
        wall = statistics.median(values)
        print(f"| {label} | {wall:.2f} s | {cpu:.2f} s | {per_tick} | {shown} |")
    print("\nStages of the issue -> PR tick (its record's `stage_seconds`), median:\n")
    print("| stage | median |")
    print("|---|---:|")
    for stage, values in stages.items():
        print(f"| {stage} | {statistics.median(values):.2f} s |")
    print()
    sandboxed(runs)
    sandboxed(runs, pace=PACE)


if __name__ == "__main__":
    main()
