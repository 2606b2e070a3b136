"""Which sandbox runs a run's tests, and the preflight that refuses to claim without one.

The builder and the reviewer check every change with the repository's tests. A run that
could not run them must not claim anything: with `AGENT_LOOP_SANDBOX` other than `off`
and no working backend, `preflight_sandbox` raises a `ConfigError` naming what to
install or set (the CLI exits 2 before firing the tick; a scheduled tick checks before
its first claim and records an operator's error, having claimed nothing).

Like the model, a sandbox can be installed in-process (`use_sandbox`): the offline demo
runs its own sample code in the plain subprocess when no isolating backend works, and
tests install a backend of their choice. On a cluster nothing is installed and each run
opens the one its settings name (the `flyte` backend takes the tests' task, registered
by the agent's environment with `use_flyte_tests_task`).
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agent_loop_common.records import Role
from agent_loop_common.sandbox import BaselineCache, Sandbox, SandboxUnavailable, open_sandbox
from agent_loop_common.settings import ConfigError, Settings

__all__ = [
    "TESTING_ROLES",
    "InstalledSandbox",
    "installed_sandbox",
    "preflight_sandbox",
    "sandbox_for",
    "use_flyte_tests_task",
    "use_sandbox",
]

TESTING_ROLES = frozenset({Role.BUILDER, Role.REVIEWER})
"""The roles whose runs test changes (the distiller runs no code)."""


@dataclass(frozen=True)
class InstalledSandbox:
    """What `use_sandbox` installed for the runs of this process."""

    sandbox: Sandbox
    baselines: BaselineCache
    """Baseline results shared by the runs (one baseline per base SHA and command)."""


_installed: InstalledSandbox | None = None
_flyte_task: Any = None


@contextmanager
def use_sandbox(
    sandbox: Sandbox, baselines: BaselineCache | None = None
) -> Generator[BaselineCache]:
    """Run every run's tests in `sandbox` while the block runs.

    Args:
        sandbox: The backend (e.g. `open_sandbox(settings, allow_unisolated=True)`).
        baselines: The baseline store shared by those runs (a new one by default), so
            runs at one base commit run its baseline once.

    Yields:
        The shared baseline store (its `runs` counts the baselines that actually ran).
    """
    global _installed
    store = baselines if baselines is not None else BaselineCache()
    previous, _installed = _installed, InstalledSandbox(sandbox, store)
    try:
        yield store
    finally:
        _installed = previous


def installed_sandbox() -> InstalledSandbox | None:
    """What `use_sandbox` installed, if anything."""
    return _installed


def use_flyte_tests_task(task: Any) -> None:
    """Register the tests' Flyte task (`build_container_task`) for the `flyte` backend."""
    global _flyte_task
    _flyte_task = task


async def sandbox_for(settings: Settings) -> Sandbox:
    """The installed sandbox, else the one `AGENT_LOOP_SANDBOX` names, checked to work here.

    Raises:
        ConfigError: No backend works (the message names what to install or set).
    """
    if _installed is not None:
        return _installed.sandbox
    try:
        return await open_sandbox(settings, flyte_task=_flyte_task)
    except SandboxUnavailable as exc:
        raise ConfigError([f"AGENT_LOOP_SANDBOX={settings.sandbox}: {exc}"]) from exc


async def preflight_sandbox(settings: Settings, role: Role) -> None:
    """Raise `ConfigError` when `role` tests changes and no sandbox works here."""
    if role in TESTING_ROLES:
        await sandbox_for(settings)
