"""Fixtures for the builder's tests: the emulator, settings, a runtime per tick, a model.

Every tick runs the real pipeline: githubkit over the emulator's in-process transport,
the real `Agent` loop driven by a `ScriptedModel` installed with `use_model` (the same
seam Flyte local mode uses), and a real `MemoryStore` under `tmp_path`.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Awaitable, Callable, Generator

import pytest
import structlog
from flyte.ai.agents import LLMCallable

from agent_loop_builder import run_builder_tick
from agent_loop_common.llm import Budget, UsageMeter
from agent_loop_common.memory import bucket_of, run_path
from agent_loop_common.records import Role, RunRecord
from agent_loop_common.runtime import open_runtime, use_model
from agent_loop_common.settings import Settings, load_settings
from agent_loop_common.testing import GitHubEmulator, ScriptedModel, instant_retry
from agent_loop_common.testing._facade import EMULATOR_BASE_URL

Tick = Callable[..., Awaitable[RunRecord | None]]


@pytest.fixture(autouse=True)
def captured_logs() -> Generator[list[dict[str, object]]]:
    """Keep log events as data: rendering tracebacks of expected failures costs seconds."""
    with structlog.testing.capture_logs() as logs:
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
    return load_settings(
        repo=emulator.full_name,
        github_token=emulator.bot_token,
        github_api_url=EMULATOR_BASE_URL,
        home=tmp_path / "home",
    )


@pytest.fixture
def memory_root(tmp_path: pathlib.Path) -> str:
    return str(tmp_path / "mem")


@pytest.fixture
def tick(settings: Settings, emulator: GitHubEmulator, memory_root: str) -> Tick:
    """Run one builder tick in-process (fresh runtime each time, as a schedule would)."""

    async def run(issue: int | None = None, **overrides: object) -> RunRecord | None:
        config = settings.model_copy(update=overrides) if overrides else settings
        async with open_runtime(
            config,
            Role.BUILDER,
            memory_root=memory_root,
            transport=emulator.transport(),
            github_retry=instant_retry(),
        ) as rt:
            return await run_builder_tick(rt, issue)

    return run


@pytest.fixture
def install() -> Generator[Callable[[ScriptedModel], ScriptedModel]]:
    """Install a scripted model for the test's next ticks (the latest installed answers)."""
    holder: dict[str, ScriptedModel] = {}

    def provide(role: Role, purpose: str, usage: UsageMeter, budget: Budget) -> LLMCallable:
        model = holder["model"]
        model.usage, model.budget = usage, budget
        return model

    def put(model: ScriptedModel) -> ScriptedModel:
        holder["model"] = model
        return model

    with use_model(provide):
        yield put


@pytest.fixture
def stored(memory_root: str, settings: Settings) -> Callable[[RunRecord], RunRecord]:
    """Read a record back from memory, as the distiller will."""
    location = settings.memory_location(memory_root)

    def read(record: RunRecord) -> RunRecord:
        key = location.keys.runs(bucket_of(record.finished_at))
        path = pathlib.Path(location.remote_path(key)) / run_path(record.run_id)
        return RunRecord.model_validate(json.loads(path.read_text()))

    return read
