"""Wall time of one tick in its own process, as a cron job runs it.

Each tick is a fresh `agent-loop run builder --json` process (the installed console
script, no `uv run` in front) against the GitHub emulator served on loopback, with the
model reached through litellm over HTTP (an OpenAI-compatible server on loopback that a
`ScriptedModel` answers at once), so the times are the loop's own: interpreter start,
imports, Flyte local mode, GitHub requests, memory, the model library. The sandbox is
off (`AGENT_LOOP_SANDBOX=off`, a draft PR): the repository's tests are not the loop's
cost. Two kinds of tick, each the median of RUNS (default 3):

- idle: a repository with no issue; the tick looks, finds nothing, counts itself idle;
- issue -> PR: one fresh issue; the tick claims it, builds with 3 model turns, has the
  verifier check it (1 turn), opens the PR and records the run.

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


def _tick(env: dict[str, str]) -> tuple[float, dict[str, object]]:
    """One tick in a fresh process: its wall time and its summary."""
    began = time.perf_counter()
    done = subprocess.run(
        [CLI, "run", "builder", "--json"], env=env, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - began
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


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    idle: list[float] = []
    built: list[float] = []
    stages: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        emulator = _emulator()
        emulator.add_issue("Add a colour", "Widgets need a colour.")
        with emulator.serve() as github_url, serve_chat_model(_model()) as api_base:
            first, _ = _tick(_env(Path(tmp) / "first", github_url, api_base, emulator))
        for i in range(runs):
            emulator = _emulator()
            model = _model()
            with emulator.serve() as github_url, serve_chat_model(model) as api_base:
                env = _env(Path(tmp) / f"idle-{i}", github_url, api_base, emulator)
                seconds, summary = _tick(env)
                if summary["outcome"] != "idle":
                    raise SystemExit(f"expected an idle tick, got {summary}")
                idle.append(seconds)
                emulator.add_issue("Add a colour", "Widgets need a colour.")
                home = Path(tmp) / f"build-{i}"
                seconds, summary = _tick(_env(home, github_url, api_base, emulator))
                if summary["outcome"] != "opened_pr":
                    raise SystemExit(f"expected a pull request, got {summary}")
                model.assert_finished()
                built.append(seconds)
                for stage, spent in _stages(home, str(summary["run_id"])).items():
                    stages.setdefault(stage, []).append(spent)
    shutil.rmtree(_PYCACHE, ignore_errors=True)
    print(f"First issue -> PR tick of a fresh install (compiles every module): {first:.2f} s\n")
    print(f"Each tick in its own process (`agent-loop run builder`), median of {runs}:\n")
    print("| tick | median | runs |")
    print("|---|---:|---|")
    for label, values in (("idle", idle), ("issue -> PR", built)):
        runs = ", ".join(f"{v:.2f}" for v in values)
        print(f"| {label} | {statistics.median(values):.2f} s | {runs} |")
    print("\nStages of the issue -> PR tick (its record's `stage_seconds`), median:\n")
    print("| stage | median |")
    print("|---|---:|")
    for stage, values in stages.items():
        print(f"| {stage} | {statistics.median(values):.2f} s |")


if __name__ == "__main__":
    main()
