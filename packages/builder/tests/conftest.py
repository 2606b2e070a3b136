"""The builder's own fixtures: its seeded repository and `tick`.

The rest (`settings`, `memory_root`, `memory`, `install`, `stored`, `agent_runtime`,
`quiet_logs`) comes from agent-loop-testing's pytest plugin. Every tick runs the real
pipeline: githubkit over the emulator's in-process transport, the real `Agent` loop
driven by a `ScriptedModel` installed with `install` (`use_model`, the seam Flyte local
mode uses), and a real `MemoryStore` under `tmp_path`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from agent_loop_builder import run_builder_tick
from agent_loop_common.records import Role, RunRecord
from agent_loop_common.settings import Settings
from agent_loop_testing import GitHubEmulator
from agent_loop_testing.pytest_plugin import AgentRuntime

Tick = Callable[..., Awaitable[RunRecord | None]]


@pytest.fixture(autouse=True)
def _quiet(quiet_logs: object) -> None:
    """Every builder test keeps its log events as data (see the plugin's `quiet_logs`)."""


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
def tick(settings: Settings, agent_runtime: AgentRuntime) -> Tick:
    """`tick(issue=None, **settings_overrides)`: one builder tick in-process, with a fresh
    runtime as a schedule would start it; its record, or `None` when idle."""

    async def run(issue: int | None = None, **overrides: object) -> RunRecord | None:
        config = settings.model_copy(update=overrides) if overrides else settings
        async with agent_runtime(Role.BUILDER, settings=config) as rt:
            return await run_builder_tick(rt, issue)

    return run
