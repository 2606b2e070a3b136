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

Run with `uv run --frozen python bench/tick_time.py [RUNS]`; it prints a Markdown table.
`python -X importtime` on the same command shows what the imports cost.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent_loop_common.llm import ALLOW_MODEL_REQUESTS_ENV
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import GitHubEmulator, ScriptedModel, call, serve_chat_model, turn

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


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
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


if __name__ == "__main__":
    main()
