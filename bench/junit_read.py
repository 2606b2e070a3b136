"""How reading a large JUnit report costs: time, peak memory, event-loop stalls.

The report is written by code under test (issue 22): the sandbox reads it after every
run. This prints, for reports of growing size, the streaming reader
(`read_junit`: `iterparse`, each finished element dropped) against keeping the whole
element tree (what an `iterparse` that only clears test cases still does), and the
longest stall of an event loop that awaits the read in a thread.

Run: `uv run --frozen python bench/junit_read.py`
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import tracemalloc
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from agent_loop_common.sandbox._reports import read_junit

CASE = (
    '<testcase classname="tests.test_big.TestMany" name="test_{}" time="0.001">'
    "<system-out>{}</system-out></testcase>"
)


def _write(path: Path, cases: int, properties: int = 0) -> int:
    """A report of `cases` test cases, after `properties` elements that are not cases
    (which a reader clearing only test cases keeps)."""
    with path.open("w") as handle:
        handle.write('<?xml version="1.0"?><testsuites><testsuite name="pytest">')
        handle.write('<property name="p" value="v"/>' * properties)
        for i in range(cases):
            handle.write(CASE.format(i, "x" * 300))
        handle.write("</testsuite></testsuites>")
    return path.stat().st_size


def _keep_tree(path: Path) -> int:
    count = 0
    for _, element in ET.iterparse(path, events=("end",)):  # noqa: S314 - our own file
        if element.tag == "testcase":
            count += 1
            element.clear()
    return count


def _measure(fn: Callable[[], object]) -> tuple[float, float]:
    """Seconds (untraced), then peak traced memory in MB (a second, traced call)."""
    started = time.perf_counter()
    fn()
    seconds = time.perf_counter() - started
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak / 1024 / 1024


async def _loop_stall(path: Path) -> float:
    """The longest gap between 1 ms ticks of the loop while the read runs in a thread."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.to_thread(read_junit, path)
    done.set()
    await ticker
    return max(gaps) * 1000


def main() -> None:
    rows: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        for cases, properties in ((5_000, 0), (20_000, 0), (45_000, 0), (1_000, 400_000)):
            path = Path(folder) / f"junit-{cases}-{properties}.xml"
            size = _write(path, cases, properties) / 1024 / 1024
            stream_s, stream_mb = _measure(lambda p=path: read_junit(p))
            tree_s, tree_mb = _measure(lambda p=path: _keep_tree(p))
            stall = asyncio.run(_loop_stall(path))
            rows.append(
                f"| {cases:,} | {properties:,} | {size:.1f} MB | {stream_s * 1000:.0f} ms | {stream_mb:.1f} MB "
                f"| {tree_s * 1000:.0f} ms | {tree_mb:.1f} MB | {stall:.1f} ms |"
            )
    print(
        "| test cases | other elements | report | streaming read | its peak "
        "| clearing only cases | its peak | loop stall |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
