"""Sandbox start-up overhead per run, against a plain subprocess, and baseline runs per tick.

For each command (`/bin/true`, a tiny `python3 -c`, and the workspace's venv python named
by absolute path, which the sandbox must bind from its installation) it times N runs
of a bare `asyncio` subprocess and N runs of the whole sandbox path the agents take:
a private copy of a small tree (20 files) in a fresh workspace, bubblewrap with its
namespaces and rlimits (as root also `setpriv`, and an outer bubblewrap when a bind
source is only reachable by root), output capture, report parsing, and removal of the
workspace. "Added" is the sandbox's median and p95 minus the plain subprocess's. It
then prices the parts issue 22 added (`/bin/true` in bubblewrap without a control group,
with one, and with the setup step's own network through slirp4netns), and counts
baseline runs for K changes checked at one base SHA through the `BaselineCache` (the
target is exactly 1).

    uv run --frozen python bench/sandbox.py [--runs N] [--changes K]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from agent_loop_common.sandbox import (
    BaselineCache,
    BwrapSandbox,
    PlainSubprocessSandbox,
    RunResult,
    Sandbox,
    SandboxLimits,
    baseline_key,
    compare,
    write_tree,
)
from agent_loop_common.sandbox._cgroup import CgroupSupport

COMMANDS: list[tuple[str, list[str]]] = [
    ("/bin/true", ["/bin/true"]),
    ("python3 -c pass", ["python3", "-c", "pass"]),
    ("venv python -c pass", [sys.executable, "-c", "pass"]),
]


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


async def plain_run(argv: list[str], cwd: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={"PATH": "/usr/bin:/bin"},
    )
    await proc.communicate()


async def once_timed(run: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await run()
    return time.perf_counter() - started


def ms(value: float) -> str:
    return f"{value * 1000:.1f} ms"


async def overhead(runs: int, tree: Path) -> None:
    limits = SandboxLimits(wall_seconds=60)
    bwrap = BwrapSandbox(limits)
    sandboxes: list[Sandbox] = [bwrap, PlainSubprocessSandbox(limits)]
    works, why = await bwrap.probe()
    if not works:
        raise SystemExit(f"bubblewrap cannot run here: {why}")
    print(
        f"{runs} rounds per command after one warm-up round; each round times the plain "
        "subprocess and then each sandbox back to back, so 'added' is the median and p95 "
        "of the paired differences (robust to load from other work on the machine); "
        "tree of 20 files copied per sandboxed run\n"
    )
    print(
        "| command | backend | plain median | sandbox median | sandbox p95 "
        "| added median | added p95 |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for label, argv in COMMANDS:

        async def plain(argv: list[str] = argv) -> None:
            await plain_run(argv, tree)

        def boxed(
            sandbox: Sandbox, argv: list[str] = argv, label: str = label
        ) -> Callable[[], Awaitable[RunResult]]:
            async def run() -> RunResult:
                result = await sandbox.run(tree, argv)
                if not result.ok:
                    raise SystemExit(f"{label} failed in {sandbox.name}: {result.summary()}")
                return result

            return run

        runners = [boxed(sandbox) for sandbox in sandboxes]
        for warm in (plain, *runners):
            await warm()
        plain_times: list[float] = []
        boxed_times: list[list[float]] = [[] for _ in sandboxes]
        for _ in range(runs):
            plain_times.append(await once_timed(plain))
            for index, runner in enumerate(runners):
                boxed_times[index].append(await once_timed(runner))
        for sandbox, times in zip(sandboxes, boxed_times, strict=True):
            added = [t - p for t, p in zip(times, plain_times, strict=True)]
            print(
                f"| `{label}` | {sandbox.name} | {ms(statistics.median(plain_times))} "
                f"| {ms(statistics.median(times))} | {ms(p95(times))} "
                f"| {ms(statistics.median(added))} | {ms(p95(added))} |"
            )


class _NoCgroupSandbox(BwrapSandbox):
    """bubblewrap with rlimits only (what a host without control groups gets)."""

    def cgroups(self) -> CgroupSupport:
        return CgroupSupport(None, (), "switched off for the comparison")


async def parts(runs: int, tree: Path) -> None:
    limits = SandboxLimits(wall_seconds=60)
    plain, grouped = _NoCgroupSandbox(limits), BwrapSandbox(limits)
    variants: list[tuple[str, Callable[[], Awaitable[RunResult]]]] = [
        ("rlimits only", lambda: plain.run(tree, ["/bin/true"])),
        (
            f"+ control group ({grouped.cgroups().reason.split(' under ')[0]})",
            lambda: grouped.run(tree, ["/bin/true"]),
        ),
        (
            "+ control group + setup network (slirp4netns)",
            lambda: grouped.run(tree, ["/bin/true"], network=True),
        ),
    ]
    for _, run in variants:
        result = await run()
        if not result.ok:
            raise SystemExit(f"/bin/true failed: {result.error or result.summary()}")
    times: list[list[float]] = [[] for _ in variants]
    for _ in range(runs):
        for index, (_, run) in enumerate(variants):
            times[index].append(await once_timed(run))
    first = statistics.median(times[0])
    print("\n| `/bin/true` in bwrap | median | p95 | added to rlimits only (median) |")
    print("|---|---:|---:|---:|")
    for (label, _), values in zip(variants, times, strict=True):
        median = statistics.median(values)
        print(f"| {label} | {ms(median)} | {ms(p95(values))} | {ms(median - first)} |")


async def baseline_runs(changes: int, tree: Path) -> None:
    sandbox = BwrapSandbox(SandboxLimits(wall_seconds=60))
    cache = BaselineCache()
    argv = ["python3", "-c", "import pathlib; print(pathlib.Path('mod0.py').read_text())"]
    key = baseline_key("0123456789abcdef", argv)

    async def one_change(index: int) -> bool:
        base = await cache.get_or_run(key, lambda: sandbox.run(tree, argv))
        after = await sandbox.run(tree, argv, changes={"mod0.py": f"X = {index}\n"})
        return compare(base, after).passed

    verdicts = await asyncio.gather(*(one_change(i) for i in range(changes)))
    print("\n| changes at one base SHA | baseline runs | change runs | verdicts passed |")
    print("|---:|---:|---:|---:|")
    print(f"| {changes} | {cache.runs} | {changes} | {sum(verdicts)} |")
    if cache.runs != 1:
        raise SystemExit(f"expected 1 baseline run, got {cache.runs}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--changes", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tree = write_tree({f"mod{i}.py": f"X = {i}\n" for i in range(20)}, Path(tmp) / "tree")
        await overhead(args.runs, tree)
        await parts(args.runs, tree)
        await baseline_runs(args.changes, tree)


if __name__ == "__main__":
    asyncio.run(main())
