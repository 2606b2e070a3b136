"""What checking the lessons' citations costs a run, in time and GitHub requests.

Runs `stale_lessons` (what the builder and reviewer call before showing lessons) through
the real `RepoSnapshot` and `GitHub` facade against the in-process emulator, for books of
0 to 30 lessons citing paths, symbols and commands, in a repository of 200 or 2,000
files. "after tree" counts the requests beyond the tree listing the run reads anyway;
the symbol search reads the commit's tarball, which the sandbox downloads for the tests
anyway. Median of 5. Run with `uv run --frozen python bench/citations.py`.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from datetime import UTC, datetime

from agent_loop_common.records import Citation, Lesson
from agent_loop_common.repo import RepoSnapshot, stale_lessons
from agent_loop_testing import GitHubEmulator, emulator_client

NOW = datetime(2026, 12, 3, tzinfo=UTC)


def _book(n: int, *, symbols: bool) -> list[Lesson]:
    out: list[Lesson] = []
    for i in range(n):
        cites = [Citation(kind="path", value=f"src/pkg{i % 10}/mod{i}.py")]
        if symbols:
            cites.append(Citation(kind="command", value="make lint"))
            cites.append(Citation(kind="symbol", value=f"func_{i}"))
        out.append(Lesson(id=f"L-{i}", text="t", created_at=NOW, updated_at=NOW, citations=cites))
    return out


async def _measure(
    files: int, lessons: int, *, symbols: bool, warm: bool
) -> tuple[float, int, int]:
    emu = GitHubEmulator()
    seed = {
        f"src/pkg{i % 10}/mod{i}.py": f"def func_{i}():\n    return {i}\n" for i in range(files)
    }
    emu.seed_files(seed | {"Makefile": "lint:\n\ttrue\n"})
    times: list[float] = []
    extra = total = 0
    for _ in range(5):
        async with emulator_client(emu) as gh:
            sha = await gh.get_ref("heads/main")
            assert sha is not None
            snapshot = RepoSnapshot(gh, sha, "main")
            await snapshot.paths()  # the run lists the tree anyway
            if warm:
                await snapshot.search_index()  # the tarball the sandbox downloads anyway
            before = gh.stats.total
            start = time.perf_counter()
            stale = await stale_lessons(snapshot, _book(lessons, symbols=symbols))
            times.append((time.perf_counter() - start) * 1000)
            extra, total = gh.stats.total - before, gh.stats.total
            assert not stale
    return statistics.median(times), extra, total


async def main() -> None:
    print(
        "| files | lessons | citations each | tarball already read | ms (median of 5) "
        "| requests after tree |"
    )
    print("|---:|---:|---|---|---:|---:|")
    for files in (200, 2_000):
        for lessons, symbols, warm in (
            (30, False, False), (30, True, False), (30, True, True)
        ):  # fmt: skip
            ms, extra, _ = await _measure(files, lessons, symbols=symbols, warm=warm)
            kinds = "path, command, symbol" if symbols else "path"
            read = "yes" if warm else "no"
            print(f"| {files:,} | {lessons} | {kinds} | {read} | {ms:.1f} | {extra} |")


if __name__ == "__main__":
    asyncio.run(main())
