"""Fixtures for the builder's tests: the emulator, settings, a runtime per tick, a model.

Every tick runs the real pipeline: githubkit over the emulator's in-process transport,
the real `Agent` loop driven by a `ScriptedModel` installed with `use_model` (the same
seam Flyte local mode uses), and a real `MemoryStore` under `tmp_path`.
"""

from __future__ import annotations

import pathlib
from collections.abc import Awaitable, Callable, Generator, MutableMapping
from typing import Any

import pytest

from agent_loop_builder import run_builder_tick
from agent_loop_common.records import Role, RunRecord
from agent_loop_common.runtime import use_model
from agent_loop_common.settings import Settings
from agent_loop_common.testing import (
    GitHubEmulator,
    ModelSlot,
    ScriptedModel,
    emulator_runtime,
    emulator_settings,
    quiet_logs,
    stored_record,
)

Tick = Callable[..., Awaitable[RunRecord | None]]


@pytest.fixture(autouse=True)
def captured_logs() -> Generator[list[MutableMapping[str, Any]]]:
    """Keep log events as data: rendering tracebacks of expected failures costs seconds."""
    with quiet_logs() as logs:
        yield logs


@pytest.fixture
def emulator() -> GitHubEmulator:
    emu = GitHubEmulator()
    emu.seed_files(
        {
            "README.md": "# widgets\n\nA tiny widget library.\n",
            "src/widgets/__init__.py": '"""Widgets."""\n',
            "src/widgets/core.py": "def make_widget(name):\n    return {'name': name}\n",
            "tests/test_core.py": "from widgets.core import make_widget\n",
        }
    )
    return emu


@pytest.fixture
def settings(emulator: GitHubEmulator, tmp_path: pathlib.Path) -> Settings:
    return emulator_settings(emulator, tmp_path / "home")


@pytest.fixture
def memory_root(tmp_path: pathlib.Path) -> str:
    return str(tmp_path / "mem")


@pytest.fixture
def tick(settings: Settings, emulator: GitHubEmulator, memory_root: str) -> Tick:
    """Run one builder tick in-process (fresh runtime each time, as a schedule would)."""

    async def run(issue: int | None = None, **overrides: object) -> RunRecord | None:
        config = settings.model_copy(update=overrides) if overrides else settings
        async with emulator_runtime(config, emulator, Role.BUILDER, memory_root=memory_root) as rt:
            return await run_builder_tick(rt, issue)

    return run


@pytest.fixture
def install() -> Generator[Callable[[ScriptedModel], ScriptedModel]]:
    """Install a scripted model for the test's next ticks (the latest installed answers)."""
    slot = ModelSlot()
    with use_model(slot):
        yield slot.put


@pytest.fixture
def stored(memory_root: str, settings: Settings) -> Callable[[RunRecord], RunRecord]:
    """Read a record back from memory, as the distiller will."""
    location = settings.memory_location(memory_root)

    def read(record: RunRecord) -> RunRecord:
        return stored_record(location, record.run_id, finished_at=record.finished_at)

    return read
