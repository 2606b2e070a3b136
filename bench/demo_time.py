"""How long `agent-loop demo` takes, end to end and per tick.

Runs the demo's whole story (10 ticks of the real agents in Flyte local mode against the
served emulator, replayed model) a few times in this process and prints a Markdown
table: wall time of each run, and the median time of each tick across runs. The first
run pays the imports (flyte, the agent packages) and the first Flyte local run; later
runs show the steady state. Run with `uv run --frozen python bench/demo_time.py [RUNS]`.
"""

from __future__ import annotations

import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agent_loop_common.logs import configure_logging

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 3


def main() -> None:
    configure_logging("console", "WARNING")
    started = time.perf_counter()
    from agent_loop.demo import run_demo  # imports flyte and the agents: part of a first run

    import_seconds = time.perf_counter() - started
    totals: list[float] = []
    ticks: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(RUNS):
            out = io.StringIO()
            began = time.perf_counter()
            result = run_demo(Path(tmp) / f"run-{i}", out=out)
            totals.append(time.perf_counter() - began)
            if not result.ok:
                raise SystemExit(f"run {i} did not go as scripted: {result.problems}")
            for (agent, tick), seconds in zip(result.ticks, result.tick_seconds, strict=True):
                label = f"{agent} {tick.target or 'idle'}: {tick.outcome or 'idle'}"
                ticks.setdefault(label, []).append(seconds)
    print(f"imports (flyte, agent packages): {import_seconds:.1f} s\n")
    print("| run | wall time |")
    print("|---:|---:|")
    for i, total in enumerate(totals, start=1):
        print(f"| {i} | {total:.1f} s |")
    print(f"\nmedian {statistics.median(totals):.1f} s over {RUNS} run(s)\n")
    print("| tick | median |")
    print("|---|---:|")
    for label, values in ticks.items():
        print(f"| {label} | {statistics.median(values):.2f} s |")


if __name__ == "__main__":
    main()
