"""The distiller's own fixtures: its seeded repository and settings, `tick`, the runtimes
its ticks used, and what its tests put in memory and on GitHub before a tick
(`make_record`, `write_record`, `agent_pr`, `pr_url`, `issue_url`) or read back
afterwards (`key_files`, `memory_snapshot`).

The rest (`memory_root`, `memory`, `install`, `stored`, `agent_runtime`, `quiet_logs`)
comes from agent-loop-testing's pytest plugin. Every tick runs the real pipeline:
githubkit over the emulator's in-process transport, the real `Agent` loop driven by a
`ScriptedModel` put in with `install`, and real `MemoryStore` keys under `tmp_path`.
Records are written the way builder and reviewer runs write them (`write_run_record`).
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from agent_loop_common.memory import MemoryLocation, write_run_record
from agent_loop_common.records import (
    Attempt,
    Links,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
    TraceStep,
    Usage,
)
from agent_loop_common.runtime import Runtime
from agent_loop_common.settings import Settings
from agent_loop_distiller import DistillerOptions, TickResult, run_distiller_tick
from agent_loop_testing import GitHubEmulator, emulator_settings
from agent_loop_testing.pytest_plugin import AgentRuntime

Tick = Callable[..., Awaitable[TickResult]]


@pytest.fixture(autouse=True)
def _quiet(quiet_logs: object) -> None:
    """Every distiller test keeps its log events as data (see the plugin's `quiet_logs`)."""


@pytest.fixture
def emulator() -> GitHubEmulator:
    emu = GitHubEmulator()
    emu.seed_files({"README.md": "# widgets\n", "src/widgets/core.py": "X = 1\n"})
    return emu


@pytest.fixture
def settings(emulator: GitHubEmulator, tmp_path: pathlib.Path) -> Settings:
    return emulator_settings(
        emulator,
        tmp_path / "home",
        digest_token_budget=400,
        record_retention_days=2,  # a first tick scans the whole window: keep tests quick
    )


@pytest.fixture
def runtimes() -> list[Runtime]:
    """Every runtime a test's ticks used, in order (for their I/O meters and stats)."""
    return []


@pytest.fixture
def tick(settings: Settings, agent_runtime: AgentRuntime, runtimes: list[Runtime]) -> Tick:
    """`tick(options=None, *, clock=None, **settings_overrides)`: one distiller tick
    in-process, with a fresh runtime as a schedule would start it (kept in `runtimes`)."""

    async def run(
        options: DistillerOptions | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        **overrides: object,
    ) -> TickResult:
        config = settings.model_copy(update=overrides) if overrides else settings
        async with agent_runtime(Role.DISTILLER, settings=config, clock=clock) as rt:
            runtimes.append(rt)
            return await run_distiller_tick(rt, options)

    return run


def _make_record(
    run_id: str,
    *,
    role: Role = Role.BUILDER,
    kind: TargetKind = TargetKind.ISSUE,
    number: int | None = 1,
    title: str = "An issue",
    outcome: Outcome = Outcome.OPENED_PR,
    notes: Sequence[tuple[bool, str]] = ((True, "ok"),),
    pr_url: str = "",
    issue_urls: Sequence[str] = (),
    lesson_ids: Sequence[str] = (),
    ago: timedelta = timedelta(minutes=5),
    trace: Sequence[TraceStep] = (),
    error: str = "",
    cost: float = 0.01,
) -> RunRecord:
    finished = datetime.now(UTC) - ago
    return RunRecord(
        run_id=run_id,
        role=role,
        target=Target(kind=kind, number=number, title=title),
        outcome=outcome,
        started_at=finished - timedelta(minutes=2),
        finished_at=finished,
        attempts=[
            Attempt(number=i + 1, verified=ok, notes=text) for i, (ok, text) in enumerate(notes)
        ],
        usage=Usage(tokens_in=1000, tokens_out=200, llm_calls=3, cost_usd=cost),
        links=Links(pr_url=pr_url, issue_urls=list(issue_urls)),
        lesson_ids=list(lesson_ids),
        trace=list(trace),
        error=error,
    )


@pytest.fixture
def make_record() -> Callable[..., RunRecord]:
    """`make_record(run_id, **fields)`: a record as a builder or reviewer run writes it
    (a builder run that opened a PR, finished `ago` = 5 minutes before now, by default)."""
    return _make_record


@pytest.fixture
def write_record(memory: MemoryLocation) -> Callable[[RunRecord], Awaitable[RunRecord]]:
    """`await write_record(record)`: write it into memory the way agent runs do; returns it."""

    async def write(record: RunRecord) -> RunRecord:
        await write_run_record(memory, record)
        return record

    return write


@pytest.fixture
def agent_pr(emulator: GitHubEmulator) -> Callable[[int, str], int]:
    """`agent_pr(issue, title)`: an agent PR for `issue`, opened by the bot from its branch."""

    def open_(issue: int, title: str) -> int:
        branch = f"agent-loop/issue-{issue}"
        emulator.push(
            branch, {f"src/fix_{issue}.py": "FIXED = True\n"}, author=emulator.bot, message="fix"
        )
        return emulator.open_pull(branch, title=title, author=emulator.bot)

    return open_


@pytest.fixture
def pr_url(emulator: GitHubEmulator) -> Callable[[int], str]:
    """The URL a record links for pull request `number` of the emulated repository."""
    return lambda number: f"https://github.com/{emulator.full_name}/pull/{number}"


@pytest.fixture
def issue_url(emulator: GitHubEmulator) -> Callable[[int], str]:
    """The URL a record links for issue `number` of the emulated repository."""
    return lambda number: f"https://github.com/{emulator.full_name}/issues/{number}"


@pytest.fixture
def key_files(memory: MemoryLocation) -> Callable[[str], dict[str, str]]:
    """`key_files(key)`: `path -> text` of every file of a memory key."""

    def read(key: str) -> dict[str, str]:
        base = pathlib.Path(memory.remote_path(key))
        return {str(p.relative_to(base)): p.read_text() for p in base.rglob("*") if p.is_file()}

    return read


@pytest.fixture
def memory_snapshot(memory_root: str) -> Callable[[], dict[str, int]]:
    """`memory_snapshot()`: `path -> mtime_ns` of every memory file under `memory_root`,
    except the idle counters and ETags (which an idle tick may touch)."""
    skip = ("-idle-", "-etags-")

    def snapshot() -> dict[str, int]:
        out: dict[str, int] = {}
        for dirpath, _dirs, names in os.walk(memory_root):
            if any(s in dirpath for s in skip):
                continue
            for name in names:
                path = os.path.join(dirpath, name)
                out[path] = os.stat(path).st_mtime_ns
        return out

    return snapshot
