"""The loop over many repositories: GitHub requests and tick time at scale.

Serves `--repos` emulated repositories (`GitHubHost`, one API root over real HTTP on
loopback, one token, one shared rate limit) with `--issues` eligible issues each, and
runs builder ticks as `agent-loop run builder` runs them (Flyte local mode,
`AGENT_LOOP_REPOS=bench/*` listed through the API each tick, the stateless
`InstantModel`, no sandbox). For each parallelism K it runs `--ticks` ticks on a fresh
host and prints Markdown tables:

- requests per issue -> PR (the run's own, from its record) and writes (non-GET
  requests) per PR, billed requests per tick (everything counted against the rate
  limit: the `owner/*` listing, scouting every repository, the runs);
- tick wall time with K = 1, 2, 4 over all the repositories;
- billed requests of the second idle tick (nothing eligible anywhere);
- the total rate limit used.

Run with `uv run --frozen python bench/scale.py [--repos 20] [--issues 10] [--ticks 3]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from agent_loop_common.logs import configure_logging
from agent_loop_common.records import Outcome
from agent_loop_common.runtime import TickSummary, use_model
from agent_loop_common.settings import load_settings
from agent_loop_testing import GitHubHost, InstantModel

OWNER = "bench"


@dataclass
class Figures:
    """What one K measured."""

    k: int
    tick_seconds: list[float] = field(default_factory=list[float])
    prs: int = 0
    run_requests: list[int] = field(default_factory=list[int])
    writes: int = 0
    billed: int = 0


def _host(repos: int, issues: int) -> GitHubHost:
    host = GitHubHost([f"{OWNER}/repo-{i:02d}" for i in range(repos)])
    for em in host:
        em.seed_files({"README.md": "# bench\n"})
        for n in range(issues):
            em.add_issue(f"Task {n}", body="Write the note.")
    return host


@contextmanager
def _configured(host: GitHubHost, home: Path, k: int) -> Iterator[None]:
    """The environment of `agent-loop run builder` for this host, restored afterwards."""
    saved = dict(os.environ)
    with host.serve() as url:
        os.environ.update(
            {
                "GITHUB_API_URL": url,
                "GITHUB_TOKEN": host.bot_token,
                "AGENT_LOOP_REPOS": f"{OWNER}/*",
                "AGENT_LOOP_HOME": str(home),
                "AGENT_LOOP_SANDBOX": "off",
                "AGENT_LOOP_BUILDER_PARALLEL": str(k),
                "AGENT_LOOP_LOG_LEVEL": "WARNING",
            }
        )
        os.environ.pop("AGENT_LOOP_REPO", None)
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)


def _tick() -> tuple[TickSummary, float]:
    from agent_loop_builder import run_once

    began = time.perf_counter()
    summary = run_once(settings=load_settings())
    return summary, time.perf_counter() - began


def _writes(host: GitHubHost) -> int:
    return sum(1 for em in host for r in em.requests if r.method != "GET")


def measure(k: int, repos: int, issues: int, ticks: int, tmp: Path) -> Figures:
    host = _host(repos, issues)
    figures = Figures(k)
    with _configured(host, tmp / f"k{k}", k):
        for _ in range(ticks):
            summary, seconds = _tick()
            figures.tick_seconds.append(seconds)
            for run in summary.runs or [summary]:
                if run.outcome == Outcome.OPENED_PR:
                    figures.prs += 1
                    figures.run_requests.append(run.github_requests)
    figures.writes = _writes(host)
    figures.billed = host.requests_used()
    return figures


def idle_ticks(repos: int, tmp: Path) -> tuple[int, int]:
    """Billed and total requests of the second of two idle ticks."""
    host = _host(repos, 0)
    with _configured(host, tmp / "idle", 1):
        _tick()
        billed, sent = host.requests_used(), sum(len(em.requests) for em in host)
        _tick()
    return host.requests_used() - billed, sum(len(em.requests) for em in host) - sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=20)
    parser.add_argument("--issues", type=int, default=10)
    parser.add_argument("--ticks", type=int, default=3)
    parser.add_argument("--k", default="1,2,4", help="parallelisms to measure")
    args = parser.parse_args()
    configure_logging("console", "WARNING")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with tempfile.TemporaryDirectory() as folder, use_model(InstantModel(), label="instant"):
        tmp = Path(folder)
        results = [
            measure(int(k), args.repos, args.issues, args.ticks, tmp) for k in args.k.split(",")
        ]
        idle_billed, idle_sent = idle_ticks(args.repos, tmp)
    print(
        f"{args.repos} repositories x {args.issues} eligible issues, {args.ticks} builder "
        "ticks per K, InstantModel, Flyte local mode, emulator over HTTP\n"
    )
    print(
        "| K | median tick | PRs opened | requests per issue -> PR (run, median) "
        "| writes per PR | billed per tick (all repos) | rate limit used |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for f in results:
        per_run = statistics.median(f.run_requests) if f.run_requests else 0
        print(
            f"| {f.k} | {statistics.median(f.tick_seconds):.2f} s | {f.prs} | {per_run:.0f} "
            f"| {f.writes / max(f.prs, 1):.1f} | {f.billed / max(len(f.tick_seconds), 1):.0f} "
            f"| {f.billed} |"
        )
    print(
        f"\nSecond idle tick over {args.repos} repositories: {idle_billed} billed requests "
        f"({idle_sent} sent; 304 answers are free)."
    )


if __name__ == "__main__":
    main()
