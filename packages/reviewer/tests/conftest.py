"""Fixtures for the reviewer's tests: an emulated repository, settings, a runtime over the
in-process emulator, and scripted models installed with `use_model`.

Tests get one `kit` fixture (pytest's importlib mode keeps conftest helpers out of
reach of a plain import, so they travel as attributes).
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Generator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import pytest
from flyte.ai.agents import LLMCallable, LLMMessage

from agent_loop_common.memory import MemoryLocation
from agent_loop_common.records import Role, RunRecord
from agent_loop_common.runtime import use_model
from agent_loop_common.settings import Settings
from agent_loop_common.testing import (
    GitHubEmulator,
    ModelSlot,
    ScriptedModel,
    emulator_client,
    emulator_runtime,
    emulator_settings,
    stored_record,
)

BRANCH = "agent-loop/issue-1-add"
CALC = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"


@pytest.fixture
def emulator() -> GitHubEmulator:
    emu = GitHubEmulator()
    emu.seed_files({"README.md": "# widgets\n", "src/calc.py": "def add(a, b):\n    pass\n"})
    emu.add_user("alice", permission="write")
    emu.add_user("mallory", permission="read")
    return emu


async def _open_pr(
    emu: GitHubEmulator,
    *,
    branch: str = BRANCH,
    files: Mapping[str, str] | None = None,
    token: str | None = None,
    author: str | None = None,
) -> int:
    """Push `branch` and open a PR from it, as the bot unless `author`/`token` say otherwise."""
    emu.push(
        branch,
        dict(files or {"src/calc.py": CALC, "tests/test_calc.py": TEST}),
        author=author or emu.bot,
        message="Add add()",
    )
    async with emulator_client(emu, token=token) as gh:
        pull = await gh.create_pull(
            title="Add add()", body="Implements #1: add two numbers.", head=branch, base="main"
        )
    return pull.number


@pytest.fixture
def settings(emulator: GitHubEmulator, tmp_path: pathlib.Path) -> Settings:
    return emulator_settings(emulator, tmp_path / "home", max_tries=2)


class Hooked:
    """A `call_llm` that runs `action` once, just before the first call whose system
    prompt contains `marker` (a person acting while the run is between two steps)."""

    def __init__(self, inner: ScriptedModel, marker: str, action: Callable[[], object]) -> None:
        self.inner = inner
        self.marker = marker
        self.action = action
        self.fired = False

    async def __call__(
        self, model: str, system: str, messages: list[dict[str, Any]], tools: Any
    ) -> LLMMessage:
        if not self.fired and self.marker in system:
            self.fired = True
            self.action()
        return await self.inner(model, system, messages, tools)


@dataclass
class Kit:
    """Everything a reviewer test drives."""

    emulator: GitHubEmulator
    settings: Settings
    tmp_path: pathlib.Path
    slot: ModelSlot = field(default_factory=ModelSlot)
    installed: ExitStack = field(default_factory=ExitStack)
    slot_in_use: bool = False

    BRANCH = BRANCH
    CALC = CALC
    FIXED = FIXED
    TEST = TEST

    async def open_pr(self, **kwargs: Any) -> int:
        return await _open_pr(self.emulator, **kwargs)

    def runtime(self, settings: Settings | None = None) -> Any:
        return emulator_runtime(
            settings or self.settings,
            self.emulator,
            Role.REVIEWER,
            memory_root=self.tmp_path / "mem",
        )

    def install(self, model: ScriptedModel, wrapper: LLMCallable | None = None) -> None:
        """Answer every later run of this test with `model` (usage recorded on the run)."""
        if not self.slot_in_use:  # nothing answers until the test scripts a model
            self.installed.enter_context(use_model(self.slot))
            self.slot_in_use = True
        self.slot.put(model, via=wrapper)

    def stored(self, run_id: str, location: MemoryLocation | None = None) -> RunRecord:
        memory = location or self.settings.memory_location(str(self.tmp_path / "mem"))
        return stored_record(memory, run_id)

    def hooked(self, model: ScriptedModel, marker: str, action: Callable[[], object]) -> Hooked:
        return Hooked(model, marker, action)


@pytest.fixture
def kit(emulator: GitHubEmulator, settings: Settings, tmp_path: pathlib.Path) -> Generator[Kit]:
    made = Kit(emulator, settings, tmp_path)
    with made.installed:
        yield made
