"""pytest plugin (auto-loaded through the `pytest11` entry point of agent-loop-testing).

Every test session in an environment where `agent_loop_testing` is installed (every
member's dev group holds it) is hermetic by construction: no connection leaves loopback,
litellm never downloads its cost map, and real model calls are refused by
`agent_loop_common.llm`.

It also ships the fixtures every agent's tests share, one name per concept, so the three
agent packages drive their pipelines the same way (their own `conftest.py` keeps only
what is really theirs: the seeded `emulator`, a `tick` running that agent's tick, and
package helpers). A fixture is only set up when a test asks for it, and each imports what
it needs on first use: the plugin itself imports no emulator (dulwich, starlette) and
no agent package, so it loads in every member's environment.

Fixtures:

`emulator`
    A fresh `agent_loop_testing.GitHubEmulator` whose `main` holds a
    `README.md`. A package overrides it (same name, in its conftest) to seed its files
    and users.
`settings`
    `agent_loop_testing.emulator_settings` for `emulator`, with
    `tmp_path / "home"` as AGENT_LOOP_HOME. A package overrides it to pass extra
    settings (`emulator_settings(emulator, tmp_path / "home", max_tries=2)`).
`memory_root`
    The local storage root of the test's memory stores (`tmp_path / "mem"`, a str).
`memory`
    The `agent_loop_common.memory.MemoryLocation` of `settings` under
    `memory_root`: where the test's runs read and write memory.
`install`
    Installs one `agent_loop_testing.ModelSlot` with `use_model` for the
    test and gives `install(model, *, via=None) -> model`: every run started after it
    is answered by the latest model installed (or by `via`, a wrapper acting between
    calls, with usage still recorded on `model`). A run that asks for a model before
    one is installed fails closed (`LookupError`).
`stored`
    `stored(run, *, memory=None) -> RunRecord`: a run's record read back from memory,
    as the distiller reads it. Given a `RunRecord`, it is read from exactly the hourly
    bucket its `finished_at` belongs in; given a run id, from whichever runs bucket
    holds it (exactly one). `memory` defaults to the `memory` fixture.
`agent_runtime`
    `agent_runtime(role, *, settings=None, clock=None)`: the async context manager of
    `agent_loop_testing.emulator_runtime` over `emulator` and
    `memory_root` (`settings` defaults to the fixture's): one run's runtime, fresh
    each time, as a schedule would start it.
`quiet_logs`
    Opt-in: keeps structlog events as data for the test (the fixture's value is the list
    of events) and gives the process its logging configuration back afterwards. An agent
    package that wants it for every test makes it autouse in its conftest.
`echo`
    `echo(text)`: print a command's output to the terminal when pytest runs with `-s`
    (the docs' captured outputs are copied from it), and nothing otherwise, even from a
    test that reads its output with `capsys`.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable, Generator, Iterator, MutableMapping
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pytest

from agent_loop_testing._hermetic import block_network

if TYPE_CHECKING:
    from flyte.ai.agents import LLMCallable

    from agent_loop_common.memory import MemoryLocation
    from agent_loop_common.records import Role, RunRecord
    from agent_loop_common.runtime import Runtime
    from agent_loop_common.settings import Settings
    from agent_loop_testing._emulator import GitHubEmulator

__all__ = ["AgentRuntime", "Install", "Stored"]

# Set before any test module can import litellm (which reads it at import time).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ["AGENT_LOOP_ALLOW_MODEL_REQUESTS"] = "0"

_Model = TypeVar("_Model", bound="LLMCallable")


class Install(Protocol):
    """The `install` fixture's value: answer the test's next runs with `model`."""

    def __call__(self, model: _Model, *, via: LLMCallable | None = None) -> _Model: ...


class Stored(Protocol):
    """The `stored` fixture's value: a run's record as written to memory."""

    def __call__(
        self, run: RunRecord | str, *, memory: MemoryLocation | None = None
    ) -> RunRecord: ...


class AgentRuntime(Protocol):
    """The `agent_runtime` fixture's value: one run's runtime over the emulator."""

    def __call__(
        self,
        role: Role,
        *,
        settings: Settings | None = None,
        clock: Callable[[], datetime] | None = None,
        run_id: str | None = None,
    ) -> AbstractAsyncContextManager[Runtime]: ...


@pytest.fixture(autouse=True)
def _agent_loop_hermetic(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail any test that opens a non-loopback connection (opt out: `@pytest.mark.network`)."""
    if request.node.get_closest_marker("network") is not None:
        yield
        return
    with block_network():
        yield


@pytest.fixture(autouse=True)
def _agent_loop_live_secrets() -> Iterator[None]:
    """Forget the live secrets a test's runs registered (`redaction.LIVE_SECRETS`), so no
    test's redaction depends on which tests ran before it in the process."""
    yield
    import sys

    redaction = sys.modules.get("agent_loop_common.redaction")
    if redaction is not None:
        redaction.LIVE_SECRETS.clear()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "network: the test may open non-loopback connections (manual runs only)"
    )


@pytest.fixture
def emulator() -> GitHubEmulator:
    """A fresh emulated repository with a README on `main` (packages seed their own)."""
    from agent_loop_testing import GitHubEmulator

    emu = GitHubEmulator()
    emu.seed_files({"README.md": "# widgets\n"})
    return emu


@pytest.fixture
def settings(emulator: GitHubEmulator, tmp_path: pathlib.Path) -> Settings:
    """Settings acting as the emulator's bot, AGENT_LOOP_HOME under `tmp_path`."""
    from agent_loop_testing import emulator_settings

    return emulator_settings(emulator, tmp_path / "home")


@pytest.fixture
def memory_root(tmp_path: pathlib.Path) -> str:
    """The local storage root of the test's memory stores."""
    return str(tmp_path / "mem")


@pytest.fixture
def memory(settings: Settings, memory_root: str) -> MemoryLocation:
    """The memory location the test's runs read and write."""
    from agent_loop_common.memory import MemoryLocation

    return MemoryLocation.from_settings(settings, memory_root)


@pytest.fixture
def install() -> Generator[Install]:
    """Install a model slot for the test; the value puts the model later runs meet."""
    from agent_loop_common.runtime import use_model
    from agent_loop_testing import ModelSlot

    slot = ModelSlot()  # empty: a run asking for a model before one is put fails closed
    with use_model(slot):
        yield slot.put


@pytest.fixture
def stored(memory: MemoryLocation) -> Stored:
    """Read a run's record back from memory (a `RunRecord` or a run id)."""
    from agent_loop_testing import stored_record

    default = memory

    def read(run: RunRecord | str, *, memory: MemoryLocation | None = None) -> RunRecord:
        location = memory if memory is not None else default
        if isinstance(run, str):
            return stored_record(location, run)
        return stored_record(location, run.run_id, finished_at=run.finished_at)

    return read


@pytest.fixture
def agent_runtime(emulator: GitHubEmulator, settings: Settings, memory_root: str) -> AgentRuntime:
    """Open one run's runtime for `role` over the emulator and the test's memory."""
    from agent_loop_testing import emulator_runtime

    default = settings

    def open_runtime(
        role: Role,
        *,
        settings: Settings | None = None,
        clock: Callable[[], datetime] | None = None,
        run_id: str | None = None,
    ) -> AbstractAsyncContextManager[Runtime]:
        config = settings if settings is not None else default
        return emulator_runtime(
            config, emulator, role, memory_root=memory_root, clock=clock, run_id=run_id
        )

    return open_runtime


@pytest.fixture
def quiet_logs() -> Generator[list[MutableMapping[str, Any]]]:
    """Keep log events as data (rendering the tracebacks of expected failures costs
    seconds), and restore the logging configuration an entry point set for the process."""
    from agent_loop_testing import quiet_logs as keep_logs

    with keep_logs() as logs:
        yield logs


@pytest.fixture
def echo(pytestconfig: pytest.Config, capsys: pytest.CaptureFixture[str]) -> Callable[[str], None]:
    """Print to the terminal under `pytest -s` only (see the module docstring)."""

    def show(text: str) -> None:
        if pytestconfig.getoption("capture") == "no":
            with capsys.disabled():
                print(text)

    return show
