"""Fixtures for the distiller's tests: emulator, settings, memory, records, a tick runner.

Every pass runs the real pipeline: githubkit over the emulator's in-process transport,
the real `Agent` loop driven by a `ScriptedModel` installed with `use_model` (the seam
Flyte local mode uses too), and real `MemoryStore` keys under `tmp_path`. Records are
written the way builder and reviewer runs write them (`write_run_record`).
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
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
from agent_loop_common.runtime import Runtime, use_model
from agent_loop_common.settings import Settings
from agent_loop_common.testing import (
    GitHubEmulator,
    ModelSlot,
    ScriptedModel,
    emulator_runtime,
    emulator_settings,
    quiet_logs,
)
from agent_loop_distiller import DistillerOptions, TickResult, run_distiller_tick

Pass = Callable[..., Awaitable[TickResult]]


@pytest.fixture(autouse=True)
def _restore_logging() -> Generator[None]:
    """Keep log events as data (rendering expected failures costs time), and give the
    next test the logging configuration back after `python -m` set it for the process."""
    with quiet_logs():
        yield


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
def memory_root(tmp_path: pathlib.Path) -> str:
    return str(tmp_path / "mem")


@pytest.fixture
def location(settings: Settings, memory_root: str) -> MemoryLocation:
    return settings.memory_location(memory_root)


@pytest.fixture
def runtimes() -> list[Runtime]:
    """Every runtime a test's passes used, in order (for their I/O meters and stats)."""
    return []


@pytest.fixture
def run_pass(
    settings: Settings, emulator: GitHubEmulator, memory_root: str, runtimes: list[Runtime]
) -> Pass:
    """One distiller tick in-process, with a fresh runtime as a schedule would start."""

    async def run(
        *,
        clock: Callable[[], datetime] | None = None,
        options: DistillerOptions | None = None,
        **overrides: object,
    ) -> TickResult:
        config = settings.model_copy(update=overrides) if overrides else settings
        async with emulator_runtime(
            config, emulator, Role.DISTILLER, memory_root=memory_root, clock=clock
        ) as rt:
            runtimes.append(rt)
            return await run_distiller_tick(rt, options)

    return run


@pytest.fixture
def install() -> Generator[Callable[[ScriptedModel], ScriptedModel]]:
    """Install a scripted model for the next ticks (the latest installed answers)."""
    slot = ModelSlot(ScriptedModel([], name="no model"))
    with use_model(slot):
        yield slot.put


def make_record(
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
    """A record as a builder or reviewer run writes it (finished `ago` before now)."""
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


def snapshot(root: str, skip: Sequence[str] = ("-idle-", "-etags-")) -> dict[str, int]:
    """`path -> mtime_ns` of every memory file, except the keys named by `skip`."""
    out: dict[str, int] = {}
    for dirpath, _dirs, names in os.walk(root):
        if any(s in dirpath for s in skip):
            continue
        for name in names:
            path = os.path.join(dirpath, name)
            out[path] = os.stat(path).st_mtime_ns
    return out


@dataclass
class Kit:
    """Helpers bound to the test's emulator and memory (tests cannot import conftest)."""

    emulator: GitHubEmulator
    location: MemoryLocation
    root: str

    record = staticmethod(make_record)
    snapshot = staticmethod(snapshot)

    async def write(self, record: RunRecord) -> RunRecord:
        """Write a record into memory the way agent runs do."""
        await write_run_record(self.location, record)
        return record

    def agent_pr(self, issue: int, title: str) -> int:
        """An agent PR for `issue`, opened by the bot from its branch."""
        emu = self.emulator
        branch = f"agent-loop/issue-{issue}"
        emu.push(branch, {f"src/fix_{issue}.py": "FIXED = True\n"}, author=emu.bot, message="fix")
        return emu.open_pull(branch, title=title, author=emu.bot)

    def pr_url(self, number: int) -> str:
        return f"https://github.com/{self.emulator.full_name}/pull/{number}"

    def issue_url(self, number: int) -> str:
        return f"https://github.com/{self.emulator.full_name}/issues/{number}"

    def key_files(self, key: str) -> dict[str, str]:
        """`path -> text` of every file of a memory key."""
        base = pathlib.Path(self.location.remote_path(key))
        return {str(p.relative_to(base)): p.read_text() for p in base.rglob("*") if p.is_file()}


@pytest.fixture
def kit(emulator: GitHubEmulator, location: MemoryLocation, memory_root: str) -> Kit:
    return Kit(emulator, location, memory_root)
