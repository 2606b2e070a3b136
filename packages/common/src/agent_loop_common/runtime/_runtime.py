"""The effects one pipeline run works with, built once at the edge from settings.

Pipelines take a `Runtime` instead of reaching for globals, so the same code runs in a
Flyte task on a cluster, in Flyte's local mode, and in a plain async test against the
GitHub emulator and a scripted model: only what `open_runtime` is given differs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
import structlog
from flyte.ai.agents import LLMCallable

from agent_loop_common.claims import BackoffPolicy, Claimer, new_run_id
from agent_loop_common.github import (
    ETagCache,
    GitHub,
    GitHubRetryPolicy,
    OfflineTransport,
    github_auth,
)
from agent_loop_common.llm import Budget, UsageMeter, prefetch_litellm
from agent_loop_common.memory import MemoryLocation, read_etag_state, write_etag_state
from agent_loop_common.model_keys import remember_model_keys
from agent_loop_common.progress import RunProgress
from agent_loop_common.records import Role
from agent_loop_common.runtime._interrupt import Interrupt
from agent_loop_common.runtime._models import installed_model, model_for, model_label
from agent_loop_common.runtime._pause import Pause
from agent_loop_common.runtime._sandbox import installed_sandbox, sandbox_for
from agent_loop_common.sandbox import BaselineCache, BaselineStore, Sandbox
from agent_loop_common.settings import Settings

__all__ = ["Runtime", "open_runtime"]

_log = structlog.get_logger(__name__)


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class Runtime:
    """Everything one run of one role needs; closed by `open_runtime` when the run ends."""

    settings: Settings
    """The validated configuration of this deployment."""
    role: Role
    """Which pipeline runs."""
    run_id: str
    """Unique id of this run (also in claim markers and the run record)."""
    github: GitHub
    """The GitHub facade, counting requests for the record."""
    claimer: Claimer
    """Claims, releases and back-offs for this run."""
    memory: MemoryLocation
    """Where the shared memory lives."""
    usage: UsageMeter = field(default_factory=UsageMeter)
    """Tokens, calls and cost of every model call of the run."""
    budget: Budget = field(default_factory=Budget)
    """The per-run limits the model calls are checked against."""
    clock: Callable[[], datetime] = _utcnow
    """The current aware time (the emulator's clock in tests)."""
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    """How the run waits (claim heartbeats); tests pass a faster one."""
    baselines: BaselineStore = field(default_factory=lambda: _default_baselines())
    """Baseline test results by base SHA and command: the run's own, or the store shared
    by the runs of a process (`use_sandbox`)."""
    paused: Pause | None = None
    """Set by `run_scoped` when the rate-limit reserve kept the run from claiming."""
    interrupted: Interrupt | None = None
    """Set by `run_scoped` when the operator stopped the run (SIGINT, SIGTERM)."""
    recheck_at: datetime | None = None
    """When a time-based rule could change this run's decision (`depends_on_time`);
    `None`: no such rule was involved. Bounds the tick's `IdleProof`."""
    progress: RunProgress = field(default_factory=RunProgress)
    """The run's live progress: what its events are tagged with, and the events it kept
    (`run_scoped` binds it; the tick's report lists the events)."""
    _sandbox: Sandbox | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.progress.run_id:
            self.progress.role, self.progress.run_id = self.role.value, self.run_id

    def depends_on_time(self, until: datetime | None = None) -> None:
        """The run's decision rests on the clock: a claim expiring or a back-off ending at
        `until` (`None`: unknown, so only now). An idle tick then proves itself idle only
        until that time (`IdleProof.recheck_at`), and not at all without one."""
        moment = until if until is not None else self.clock()
        if self.recheck_at is None or moment < self.recheck_at:
            self.recheck_at = moment

    async def sandbox(self) -> Sandbox:
        """The sandbox the run's tests run in, opened once (see `sandbox_for`).

        Raises:
            ConfigError: No sandbox works here and `AGENT_LOOP_SANDBOX` is not `off`.
        """
        if self._sandbox is None:
            self._sandbox = await sandbox_for(self.settings)
        return self._sandbox

    def warm_model(self) -> None:
        """Start loading the model library in the background (litellm: seconds of import).

        Called once the run has work, so its claim and GitHub reads overlap the import
        and an idle tick never pays it. An in-process model needs no library.
        """
        if installed_model() is None:
            prefetch_litellm()

    def call_llm(self, purpose: str = "agent") -> LLMCallable:
        """A `call_llm` for one agent of this run (`"agent"` or `"verifier"`)."""
        return model_for(self.settings, self.role, purpose, self.usage, self.budget)

    def agent_model(self, purpose: str = "agent") -> str:
        """The model an `Agent` of this run names (`"agent"` or `"verifier"`).

        What its report's progress shows: an in-process provider's label, else the
        litellm model string its `call_llm` uses.
        """
        return model_label(self.settings, purpose)

    @property
    def model_name(self) -> str:
        """The model that answers this run, as its record and report name it.

        An in-process provider's label (`replayed (demo)`, `scripted`), else the
        configured litellm model string(s).
        """
        return model_label(self.settings)


def _default_baselines() -> BaselineStore:
    installed = installed_sandbox()
    return installed.baselines if installed is not None else BaselineCache()


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    role: Role,
    *,
    run_id: str | None = None,
    memory_root: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    clock: Callable[[], datetime] | None = None,
    github_retry: GitHubRetryPolicy | None = None,
    offline: bool = False,
    baselines: BaselineStore | None = None,
) -> AsyncGenerator[Runtime]:
    """Build a run's effects; on exit persist the ETag cache (if it changed) and close.

    Args:
        settings: The configuration (`load_settings()`).
        role: The pipeline's role.
        run_id: Use this id instead of a fresh one (tests, replays).
        memory_root: Storage root of the memory; `None` inside a Flyte task (resolved
            from the task's raw data path), a folder in plain async code.
        transport: An httpx transport for GitHub (the emulator in-process); `None` for HTTP.
        clock: Time source; `datetime.now(UTC)` by default.
        github_retry: GitHub retry policy (tests pass one that does not sleep).
        offline: The run sends GitHub nothing (the benchmark's replay on a snapshot in
            hand): its facade refuses every request (`OfflineTransport`), and the role's
            ETag cache is neither read nor saved.
        baselines: Where the run's baseline results are kept and found (by base SHA,
            command and setup): a store shared with other runs that may meet at a base
            commit (the benchmark's instances of one run). Default: the store of the
            sandbox installed with `use_sandbox`, else the run's own.
    """
    remember_model_keys((settings.model, settings.verifier_model))
    memory = MemoryLocation.from_settings(settings, memory_root)
    etag_state = None if offline else await read_etag_state(memory, role)
    etags = ETagCache.load(etag_state) if etag_state is not None else ETagCache()
    if offline:
        transport = OfflineTransport()
    github = GitHub(
        settings.repo,
        auth=github_auth(settings),
        base_url=settings.github_api_url,
        transport=transport,
        timeout=settings.github_timeout_seconds,
        etags=etags,
        retry=github_retry,
    )
    run = run_id or new_run_id()
    claimer = Claimer(
        github,
        deployment=settings.deployment_id,
        role=role.value,
        run_id=run,
        agent_login=settings.bot_login,
        ttl=settings.claim_ttl,
        policy=BackoffPolicy.from_settings(settings),
        clock=clock,
    )
    runtime = Runtime(
        settings=settings,
        role=role,
        run_id=run,
        github=github,
        claimer=claimer,
        memory=memory,
        budget=Budget.from_settings(settings),
        clock=clock or _utcnow,
        baselines=baselines if baselines is not None else _default_baselines(),
    )
    try:
        yield runtime
    finally:
        try:
            if etags.changed:
                await write_etag_state(memory, role, etags.dump())
                etags.mark_saved()
        except Exception as exc:  # a lost cache costs one full poll later, never the run
            _log.warning("runtime.etag_save_failed", error=repr(exc))
        await github.aclose()
