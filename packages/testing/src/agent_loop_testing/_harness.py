"""The harness every package's tests build on: settings, a runtime and a model slot over
the emulator, records read back from memory, and quiet logs.

Each agent package drives its pipeline the same way (settings pointing at a
`GitHubEmulator`, `open_runtime` over its in-process transport with sleepless retries, a
`ScriptedModel` installed with `use_model`, the run's record read back from memory), so
the wiring lives here once and a change to the spine changes every package's tests at
the same time, instead of drifting per package.

```python
settings = emulator_settings(emulator, tmp_path / "home", max_tries=2)
slot = ModelSlot()
with use_model(slot):
    slot.put(ScriptedModel([...]))
    async with emulator_runtime(settings, emulator, Role.BUILDER, memory_root=root) as rt:
        record = await run_builder_tick(rt)
assert stored_record(rt.memory, record.run_id, finished_at=record.finished_at) == record
```
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
from collections.abc import AsyncGenerator, Callable, Generator, MutableMapping
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import structlog
from flyte.ai.agents import LLMCallable
from structlog.testing import capture_logs

from agent_loop_common.llm import Budget, UsageMeter
from agent_loop_common.memory import MemoryLocation, bucket_of, run_path
from agent_loop_common.records import Role, RunRecord
from agent_loop_common.runtime import Runtime, open_runtime
from agent_loop_common.settings import Settings, load_settings
from agent_loop_testing._facade import EMULATOR_BASE_URL, instant_retry
from agent_loop_testing._scripted import ScriptedModel

if TYPE_CHECKING:
    from agent_loop_testing._emulator import GitHubEmulator

__all__ = [
    "ModelSlot",
    "emulator_runtime",
    "emulator_settings",
    "quiet_logs",
    "stored_record",
    "write_memory_file",
]

_Model = TypeVar("_Model", bound=LLMCallable)


def emulator_settings(
    emulator: GitHubEmulator, home: str | os.PathLike[str], **overrides: Any
) -> Settings:
    """Settings for the emulator's repository, acting as its bot, with `home` as
    AGENT_LOOP_HOME (field `overrides` win, e.g. `max_tries=2`).

    The sandbox is `off` unless overridden (`sandbox="bwrap"`) or one is installed with
    `use_sandbox`: a test runs repository code only when it asks to, so the suite needs
    no sandbox backend on the machine. Lessons are never held out unless overridden
    (`lesson_holdout=0.2`) or the test sets `AGENT_LOOP_LESSON_HOLDOUT` as a user would:
    a test that puts a lesson in memory expects to see it.
    """
    fields: dict[str, Any] = {
        "repo": emulator.full_name,
        "github_token": emulator.bot_token,
        "github_api_url": EMULATOR_BASE_URL,
        "home": pathlib.Path(home),
        "sandbox": "off",
    }
    if "AGENT_LOOP_LESSON_HOLDOUT" not in os.environ:
        fields["lesson_holdout"] = 0.0
    return load_settings(**{**fields, **overrides})


@asynccontextmanager
async def emulator_runtime(
    settings: Settings,
    emulator: GitHubEmulator,
    role: Role,
    *,
    memory_root: str | os.PathLike[str],
    clock: Callable[[], datetime] | None = None,
    run_id: str | None = None,
) -> AsyncGenerator[Runtime]:
    """`open_runtime` over the emulator's in-process transport, retries that never sleep,
    and memory under `memory_root`: a run as a schedule starts it, without sockets
    (`run_id`: a fixed id, e.g. to replay a run's lesson draw)."""
    async with open_runtime(
        settings,
        role,
        memory_root=os.fspath(memory_root),
        transport=emulator.transport(),
        github_retry=instant_retry(),
        clock=clock,
        run_id=run_id,
    ) as runtime:
        yield runtime


class ModelSlot:
    """A `use_model` provider whose answering model the test swaps between runs.

    Install it once (`with use_model(slot):`) and `put` the model each run should meet:
    a run asks the slot when it builds its `call_llm`, so the latest model put answers.
    A `ScriptedModel` put here records on the run's usage meter and checks its budget,
    as the real model call does.

    Args:
        model: What answers before anything is put; `None` makes a run that asks for a
            model fail with `LookupError` (the test forgot to script one).
    """

    model_label = "scripted"
    """What runs answered through the slot record as their model (`use_model` reads it)."""

    def __init__(self, model: LLMCallable | None = None) -> None:
        self._model = model
        self._answer = model

    def put(self, model: _Model, *, via: LLMCallable | None = None) -> _Model:
        """Answer the next runs with `model`, or with `via` (a wrapper around it that
        acts between calls) while usage is still recorded on `model`."""
        self._model = model
        self._answer = via if via is not None else model
        return model

    def __call__(self, role: Role, purpose: str, usage: UsageMeter, budget: Budget) -> LLMCallable:
        """The `ModelProvider` shape: `(role, purpose, usage, budget) -> call_llm`."""
        if self._answer is None:
            raise LookupError(f"no model put in the slot for a {role} {purpose} call")
        if isinstance(self._model, ScriptedModel):
            self._model.usage, self._model.budget = usage, budget
        return self._answer


def stored_record(
    location: MemoryLocation, run_id: str, *, finished_at: datetime | None = None
) -> RunRecord:
    """The record of `run_id` as written to memory under a local `location.root`.

    With `finished_at`, read it from exactly the hourly bucket a record finishing then
    belongs in (so a record written to the wrong bucket is not found); without, find it
    in whichever runs bucket holds it, which must be exactly one.

    Raises:
        FileNotFoundError: Not in the bucket of `finished_at`.
        LookupError: Without `finished_at`, no bucket or more than one holds it.
    """
    if finished_at is not None:
        key = location.keys.runs(bucket_of(finished_at))
        path = pathlib.Path(location.remote_path(key)) / run_path(run_id)
    else:
        stores = pathlib.Path(location.remote_path(location.keys.context)).parent
        found = sorted(stores.glob(f"{location.prefix}-runs-*/{run_path(run_id)}"))
        if len(found) != 1:
            raise LookupError(f"run {run_id!r} is in {len(found)} runs buckets under {stores}")
        path = found[0]
    return RunRecord.model_validate(json.loads(path.read_text()))


def write_memory_file(location: MemoryLocation, key: str, path: str, text: str) -> None:
    """Put `text` at `path` of memory key `key` under a local `location.root`, as a store
    leaves it on disk: what an earlier tick wrote (`LESSONS_PATH` of `keys.context`,
    `EFFECTS_PATH` of `keys.ledger`), without a store round trip."""
    file = pathlib.Path(location.remote_path(key)) / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)


@contextmanager
def quiet_logs() -> Generator[list[MutableMapping[str, Any]]]:
    """Keep structlog events as data inside the block, and give the process its logging
    configuration back afterwards.

    Rendering the tracebacks of expected failures costs seconds per test, and an entry
    point run inside a test (`python -m ...` calls `configure_logging`) would otherwise
    leave its structlog config and root handlers to every later test.
    """
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        with capture_logs() as logs:
            yield logs
    finally:
        structlog.configure(**saved)
        root.handlers[:] = handlers
        root.setLevel(level)
