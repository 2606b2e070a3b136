"""A tick over many repositories and several targets at once: resolve, scout, share out.

With `AGENT_LOOP_REPOS`, or `AGENT_LOOP_<ROLE>_PARALLEL` above 1, a tick of the builder
or the reviewer does not work on one target itself. It resolves the repositories
(`owner/*` listed through the API each tick), asks each one cheaply what it could work
on (`Scout`: the conditional listings only), orders that work fairly, and hands up to
K slots to the agent's work task, each its own Flyte action with its own run, claim,
budget and record, run concurrently. A repository that cannot be read (404, lost
permission, rate limit) is recorded as a failed run of that repository and skipped.

The fairness rule (`fair_order`, pure): repositories take turns, the one served longest
ago first (a repository never served first, ties broken by the age of its oldest
work), one target from each in turn, oldest first within each repository. A busy
repository therefore gets one slot per round like any other, and, because the turns
are remembered (`<prefix>-turns-<role>`), even with one slot per tick every repository
with work is served within as many ticks as there are such repositories.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog

from agent_loop_common.github import GitHub, github_auth
from agent_loop_common.memory import MemoryLocation, count_idle_run, read_turns, write_turns
from agent_loop_common.records import Outcome, Role
from agent_loop_common.runtime._runtime import Runtime, open_runtime
from agent_loop_common.runtime._scope import record_failure
from agent_loop_common.runtime._summary import TickSummary, summarize, summarize_many
from agent_loop_common.settings import Settings

__all__ = [
    "Scout",
    "Slot",
    "Work",
    "WorkTask",
    "fair_order",
    "fleet_tick",
    "plan_slots",
    "resolve_repos",
]

_log = structlog.get_logger(__name__)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CLAIM_RACES = 3
"""Targets a slot may try when other runs win the claim race (the first one included)."""
_SCOUTS_AT_ONCE = 8
"""Repositories read at once while scouting (bounded: a token's secondary limits)."""

Scout = Callable[[Runtime], Awaitable[list[tuple[int, datetime]]]]
"""An agent's cheap look at one repository: (number, created at) of what it could take."""


class WorkTask:
    """The agent's work task (a Flyte task of its environment): one slot, one run."""

    def __init__(self, task: Callable[..., Awaitable[TickSummary]]) -> None:
        self._task = task

    async def __call__(self, repo: str, among: list[int]) -> TickSummary:
        return await self._task(repo=repo, among=among)


@dataclass(frozen=True, slots=True)
class Work:
    """One target a tick could take."""

    repo: str
    number: int
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Slot:
    """What one concurrent run of a tick may take: its pick first, then fallbacks of
    the same repository when another run wins the claim race."""

    repo: str
    numbers: tuple[int, ...]


def fair_order(queues: Mapping[str, Sequence[Work]], served: Mapping[str, datetime]) -> list[Work]:
    """All work, round-robin across repositories (see the module's fairness rule).

    Args:
        queues: Each repository's work, oldest first.
        served: When each repository last got a slot (absent: never).
    """
    busy = [repo for repo, queue in queues.items() if queue]
    turns = sorted(
        busy, key=lambda r: (served.get(r, _EPOCH), queues[r][0].created_at, r.casefold())
    )
    out: list[Work] = []
    depth = max((len(queues[r]) for r in turns), default=0)
    for index in range(depth):
        out.extend(queues[r][index] for r in turns if index < len(queues[r]))
    return out


def plan_slots(order: Sequence[Work], k: int, *, races: int = _CLAIM_RACES) -> list[Slot]:
    """Up to `k` slots: the first `k` of `order`, each with fallbacks from its repository.

    No number is in two slots, so two runs of one tick never race for one claim; the
    fallbacks are dealt out among a repository's slots in order.
    """
    picks = list(order[:k])
    spare: dict[str, list[int]] = {}
    for work in order[k:]:
        spare.setdefault(work.repo, []).append(work.number)
    numbers: list[list[int]] = [[w.number] for w in picks]
    for repo, rest in spare.items():
        mine = [i for i, w in enumerate(picks) if w.repo == repo]
        for j, number in enumerate(rest):
            if not mine:
                break
            slot = numbers[mine[j % len(mine)]]
            if len(slot) < races:
                slot.append(number)
    return [Slot(w.repo, tuple(n)) for w, n in zip(picks, numbers, strict=True)]


async def resolve_repos(settings: Settings) -> list[str]:
    """The repositories of this tick: `AGENT_LOOP_REPO`, or `AGENT_LOOP_REPOS` with each
    `owner/*` listed through the API (the repositories this identity can work on)."""
    if not settings.many_repos:
        return [settings.repo]
    out: list[str] = []
    for spec in settings.repos:
        owner, _, name = spec.partition("/")
        if name != "*":
            found = [spec]
        else:
            github = GitHub(
                spec,
                auth=github_auth(settings),
                base_url=settings.github_api_url,
                timeout=settings.github_timeout_seconds,
            )
            try:
                found = await github.owner_repositories(owner)
            finally:
                await github.aclose()
        out.extend(r for r in found if r.casefold() not in {o.casefold() for o in out})
    return out


async def fleet_tick(
    settings: Settings,
    role: Role,
    *,
    scout: Scout,
    work: WorkTask,
    idle: str,
    memory_root: str | None = None,
) -> TickSummary:
    """One tick over every repository with up to K concurrent slots; the merged summary.

    Args:
        settings: The configuration (`AGENT_LOOP_REPOS` and/or a parallelism above 1).
        role: The builder or the reviewer.
        scout: The agent's cheap look at one repository.
        work: The agent's work task; one call per slot.
        idle: What an idle tick says.
        memory_root: `None` inside a Flyte task; a folder in plain async code.
    """
    k = settings.parallel(role.value)  # pyright: ignore[reportArgumentType]
    base = MemoryLocation.from_settings(settings, memory_root)
    repos = await resolve_repos(settings)
    settings = await _with_login(settings, repos)
    served = await read_turns(base, role) if settings.many_repos else {}
    semaphore = asyncio.Semaphore(_SCOUTS_AT_ONCE)

    async def look(repo: str) -> tuple[list[Work], TickSummary | None]:
        async with semaphore:
            return await _scout_one(settings, role, repo, scout, memory_root, idle)

    looks = await asyncio.gather(*(look(r) for r in repos))
    queues = {repo: found for repo, (found, _) in zip(repos, looks, strict=True)}
    failures = [failed for _, failed in looks if failed is not None]
    slots = plan_slots(fair_order(queues, served), k)
    _log.info(
        "fleet.plan",
        role=role.value,
        repos=len(repos),
        work=sum(len(q) for q in queues.values()),
        slots=[f"{s.repo}#{s.numbers[0]}" for s in slots],
        failed=len(failures),
    )
    done = await asyncio.gather(
        *(work(s.repo, list(s.numbers)) for s in slots), return_exceptions=True
    )
    results = [_outcome(role, slot, r) for slot, r in zip(slots, done, strict=True)]
    if settings.many_repos and slots:
        now = datetime.now(UTC)
        await write_turns(base, role, {**served, **{s.repo: now for s in slots}})
    if not slots and not failures:
        await count_idle_run(base, role, now=datetime.now(UTC))
    return summarize_many(role, [*failures, *results], idle=idle)


def _outcome(role: Role, slot: Slot, result: TickSummary | BaseException) -> TickSummary:
    """A slot's summary; an action that failed outright (its run records what it could)
    becomes an `error` line, so the other slots' results still reach the caller."""
    if isinstance(result, TickSummary):
        return result
    if not isinstance(result, Exception):  # cancellation and the like end the tick
        raise result
    _log.error("fleet.slot_failed", repo=slot.repo, among=slot.numbers, error=repr(result))
    return TickSummary(
        role=role,
        outcome=Outcome.ERROR,
        target=f"issue#{slot.numbers[0]}" if role is Role.BUILDER else f"pr#{slot.numbers[0]}",
        repo=slot.repo,
        error=f"{type(result).__name__}: {result}",
    )


async def _with_login(settings: Settings, repos: Sequence[str]) -> Settings:
    """`settings` naming the agents' login, asked once for every repository's scout
    (each would otherwise ask `GET /user`, a billed request, in every idle tick)."""
    if settings.bot_login is not None or not repos:
        return settings
    one = settings.for_repo(repos[0]) if settings.many_repos else settings
    github = GitHub(
        one.repo,
        auth=github_auth(one),
        base_url=one.github_api_url,
        timeout=one.github_timeout_seconds,
    )
    try:
        login = (await github.viewer()).login
    except Exception as exc:  # each scout then asks for itself, and records its failure
        _log.warning("fleet.login_unknown", error=repr(exc))
        return settings
    finally:
        await github.aclose()
    return settings.model_copy(update={"bot_login": login})


async def _scout_one(
    settings: Settings,
    role: Role,
    repo: str,
    scout: Scout,
    memory_root: str | None,
    idle: str,
) -> tuple[list[Work], TickSummary | None]:
    """One repository's work, or the summary of its recorded failure."""
    async with open_runtime(
        settings.for_repo(repo) if settings.many_repos else settings,
        role,
        memory_root=memory_root,
    ) as runtime:
        try:
            found = await scout(runtime)
        except Exception as exc:
            _log.warning("fleet.repo_failed", repo=repo, error=repr(exc))
            record = await record_failure(runtime, exc)
            return [], summarize(role, record, idle=idle)
    return [Work(repo, number, created) for number, created in found], None
