"""The reviewer's own fixtures: its seeded repository, `tick`, and the pull request its
tests review (`open_pr`, from `pr_branch` with `pr_files`; `fixed_calc` is the fix).

The rest (`settings` is overridden here for `max_tries=2`; `memory`, `install`, `stored`,
`agent_runtime`, `quiet_logs`) comes from agent-loop-testing's pytest plugin. Every tick
runs the real pipeline over the emulator's in-process transport, the real `Agent` loop
driven by a `ScriptedModel` put in with `install`, and a real `MemoryStore`.
"""

from __future__ import annotations

import pathlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import pytest
from flyte.ai.agents import LLMCallable, LLMMessage

from agent_loop_common.records import Role, RunRecord
from agent_loop_common.settings import Settings
from agent_loop_reviewer import run_reviewer_tick
from agent_loop_testing import (
    GitHubEmulator,
    ScriptedModel,
    emulator_client,
    emulator_settings,
)
from agent_loop_testing.pytest_plugin import AgentRuntime

Tick = Callable[..., Awaitable[RunRecord | None]]


class OpenPr(Protocol):
    def __call__(
        self,
        *,
        branch: str | None = None,
        files: Mapping[str, str] | None = None,
        token: str | None = None,
        author: str | None = None,
    ) -> Awaitable[int]: ...


@pytest.fixture
def emulator() -> GitHubEmulator:
    emu = GitHubEmulator()
    emu.seed_files({"README.md": "# widgets\n", "src/calc.py": "def add(a, b):\n    pass\n"})
    emu.add_user("alice", permission="write")
    emu.add_user("mallory", permission="read")
    return emu


@pytest.fixture
def settings(emulator: GitHubEmulator, tmp_path: pathlib.Path) -> Settings:
    return emulator_settings(emulator, tmp_path / "home", max_tries=2)


@pytest.fixture
def tick(settings: Settings, agent_runtime: AgentRuntime) -> Tick:
    """`tick(pr=None, **settings_overrides)`: one reviewer tick in-process, with a fresh
    runtime as a schedule would start it; its record, or `None` when nothing was due."""

    async def run(pr: int | None = None, **overrides: object) -> RunRecord | None:
        config = settings.model_copy(update=overrides) if overrides else settings
        async with agent_runtime(Role.REVIEWER, settings=config) as rt:
            return await run_reviewer_tick(rt, pr)

    return run


@pytest.fixture
def pr_branch() -> str:
    """The agent branch `open_pr` opens its pull request from by default."""
    return "agent-loop/issue-1-add"


@pytest.fixture
def pr_files() -> dict[str, str]:
    """What the default pull request pushes: an `add` that subtracts, and its test."""
    return {
        "src/calc.py": "def add(a, b):\n    return a - b\n",
        "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    }


@pytest.fixture
def fixed_calc() -> str:
    """`src/calc.py` as a correct fix leaves it."""
    return "def add(a, b):\n    return a + b\n"


@pytest.fixture
def open_pr(emulator: GitHubEmulator, pr_branch: str, pr_files: dict[str, str]) -> OpenPr:
    """`await open_pr(...)`: push a branch (`pr_branch`, `pr_files` by default) and open
    a pull request from it, as the bot unless `author`/`token` say otherwise; its number."""

    async def open_(
        *,
        branch: str | None = None,
        files: Mapping[str, str] | None = None,
        token: str | None = None,
        author: str | None = None,
    ) -> int:
        head = branch or pr_branch
        emulator.push(
            head, dict(files or pr_files), author=author or emulator.bot, message="Add add()"
        )
        async with emulator_client(emulator, token=token) as gh:
            pull = await gh.create_pull(
                title="Add add()", body="Implements #1: add two numbers.", head=head, base="main"
            )
        return pull.number

    return open_


class Hooked:
    """A `call_llm` that runs `action` once, just before the first call whose system
    prompt contains `marker` (a person acting while the run is between two steps)."""

    def __init__(self, inner: LLMCallable, marker: str, action: Callable[[], object]) -> None:
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


@pytest.fixture
def hooked() -> Callable[[ScriptedModel, str, Callable[[], object]], LLMCallable]:
    """`hooked(model, marker, action)`: `model`, with `action` run once just before its
    first call whose system prompt contains `marker` (pass it to `install(model, via=...)`)."""
    return Hooked
