"""Start-up time of the `agent-loop` CLI: `--help` and each subcommand's `--help`.

Each measurement is a fresh process of the installed console script (no `uv run` in
front), so the time is what a person waits: interpreter start, the CLI's imports, the
parser, the help text. The commands are read from the CLI's own parser, so a new
subcommand is measured without editing this file. The target is under 0.5 s each on the
project's 2-core machines: the CLI imports only the standard library before its
arguments parse, and each command imports what it uses when it runs (Flyte, githubkit,
pydantic and the agents cost seconds; `python -X importtime -c "import agent_loop.cli"`
shows what is left).

Bytecode is cached first (one uncounted run each, under a private
`PYTHONPYCACHEPREFIX`), as on any machine after the first command.

Run with `uv run --frozen python bench/cli_time.py [RUNS]` (default 5); it prints a
Markdown table of the median, the fastest and the slowest run of each command.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent_loop.cli import build_parser

CLI = str(Path(sys.executable).with_name("agent-loop"))
TARGET_SECONDS = 0.5


def commands() -> list[list[str]]:
    """`[]` and every subcommand path of the CLI's parser (`run builder`, `sandbox run`...)."""
    found: list[list[str]] = [[]]

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found.append([*path, name])
                    walk(sub, [*path, name])

    walk(build_parser(), [])
    return found


def _time(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [CLI, *argv, "--help"], env=env, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"agent-loop {' '.join(argv)} --help failed: {proc.stderr}")
    return elapsed


def main(runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="cli-time-") as cache:
        env = {**os.environ, "PYTHONPYCACHEPREFIX": cache}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        rows: list[tuple[str, float, float, float]] = []
        for argv in commands():
            _time(argv, env)  # uncounted: fills the bytecode cache
            times = [_time(argv, env) for _ in range(runs)]
            rows.append((" ".join(["agent-loop", *argv, "--help"]), *_stats(times)))
    print(f"CLI start-up, {runs} runs each, own process per run (target < {TARGET_SECONDS} s)\n")
    print("| command | median s | min s | max s | under target |")
    print("|---|---:|---:|---:|---|")
    for name, median, low, high in rows:
        ok = "yes" if median < TARGET_SECONDS else "NO"
        print(f"| `{name}` | {median:.3f} | {low:.3f} | {high:.3f} | {ok} |")


def _stats(times: list[float]) -> tuple[float, float, float]:
    return statistics.median(times), min(times), max(times)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
