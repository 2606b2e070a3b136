"""Races: N concurrent claimers on one target, many interleavings, exactly one winner.

Every claimer is a separate run with its own facade, as on a cluster. A wrapper transport
makes each request yield to the event loop a random number of times before and after it
reaches the emulator (seeded, so every interleaving is reproducible), which reorders the
claimers' reads and compare-and-swaps differently for each seed.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import httpx
import pytest

from agent_loop_common.claims import Claim, Claimer, claim_state, new_run_id, parse_dibs
from agent_loop_common.github import GitHub, GitHubRetryPolicy, TokenAuth
from agent_loop_testing import GitHubEmulator

RACERS = 12
SEEDS = [0, 1, 2, 3, 4, 5, 6, 7]
TTL = timedelta(minutes=10)
SKEW = timedelta(seconds=30)


class Jitter(httpx.AsyncBaseTransport):
    """Yield to the loop 0..max_yields times before and after each request (seeded)."""

    def __init__(
        self, inner: httpx.AsyncBaseTransport, rng: random.Random, max_yields: int = 30
    ) -> None:
        self.inner, self.rng, self.max_yields = inner, rng, max_yields

    async def _shuffle(self) -> None:
        for _ in range(self.rng.randint(0, self.max_yields)):
            await asyncio.sleep(0)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await self._shuffle()
        response = await self.inner.handle_async_request(request)
        await self._shuffle()
        return response


class Clock:
    """A settable clock shared by all runs of a test (the emulator keeps its own)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Arena:
    def __init__(self, seed: int) -> None:
        self.emu = GitHubEmulator()
        self.emu.seed_files({"README.md": "hello\n"})
        self.issue = self.emu.add_issue("Race me", author=self.emu.owner)
        self.rng = random.Random(seed)
        self.clock = Clock(self.emu.issue(self.issue).created_at)
        self.clients: list[GitHub] = []

    def claimer(self) -> Claimer:
        client = GitHub(
            self.emu.full_name,
            auth=TokenAuth(self.emu.bot_token),
            transport=Jitter(self.emu.transport(), self.rng),
            retry=GitHubRetryPolicy(max_attempts=1),
        )
        self.clients.append(client)
        run_id = new_run_id(now=self.clock(), suffix=f"{self.rng.getrandbits(32):08x}")
        return Claimer(
            client,
            deployment="race",
            role="builder",
            run_id=run_id,
            ttl=TTL,
            skew=SKEW,
            clock=self.clock,
        )

    def ref(self, kind: str = "issue", key: object = None) -> str:
        return f"refs/agent-loop/claims/{kind}-{self.issue if key is None else key}"

    async def comment_owner(self) -> str | None:
        comments = await self.clients[0].list_issue_comments(self.issue)
        state = claim_state(comments, agent_login=self.emu.bot, now=self.clock())
        return state.owner.run if state.owner else None

    def head_run(self, ref: str) -> str:
        [marker] = parse_dibs(self.emu.log(ref)[0].message)
        return marker.run


@pytest.fixture(params=SEEDS)
async def arena(request: pytest.FixtureRequest) -> AsyncIterator[Arena]:
    made = Arena(request.param)
    yield made
    for client in made.clients:
        await client.aclose()


def winners(results: list[Claim | None]) -> list[Claim]:
    return [claim for claim in results if claim is not None]


async def test_exactly_one_of_many_wins_a_free_target(arena: Arena) -> None:
    claimers = [arena.claimer() for _ in range(RACERS)]
    results = await asyncio.gather(*(c.claim("issue", arena.issue) for c in claimers))
    [won] = winners(results)
    assert arena.emu.ref_sha(arena.ref()) == won.head
    assert arena.head_run(arena.ref()) == won.run
    bot_comments = [c for c in arena.emu.comments(arena.issue) if c.author == arena.emu.bot]
    assert len(bot_comments) == 1  # losers wrote nothing visible
    assert await arena.comment_owner() == won.run


async def test_exactly_one_wins_a_repository_level_target(arena: Arena) -> None:
    claimers = [arena.claimer() for _ in range(RACERS)]
    results = await asyncio.gather(*(c.claim("repo", "distiller") for c in claimers))
    [won] = winners(results)
    assert arena.head_run(arena.ref("repo", "distiller")) == won.run


async def test_exactly_one_takes_over_an_expired_claim(arena: Arena) -> None:
    crashed = arena.claimer()
    old = await crashed.claim("issue", arena.issue)
    assert old is not None
    arena.clock.now = old.until + SKEW
    claimers = [arena.claimer() for _ in range(RACERS)]
    results = await asyncio.gather(*(c.claim("issue", arena.issue) for c in claimers))
    [won] = winners(results)
    log = arena.emu.log(arena.ref())
    assert [c.sha for c in log] == [won.head, old.head]  # one fast-forward over the old claim
    assert arena.head_run(arena.ref()) == won.run


async def test_exactly_one_takes_over_a_released_claim(arena: Arena) -> None:
    finished = arena.claimer()
    old = await finished.claim("issue", arena.issue)
    assert old is not None
    arena.clock.now = old.until + SKEW
    assert await finished.release(old, "done late")  # leaves a release commit
    claimers = [arena.claimer() for _ in range(RACERS)]
    results = await asyncio.gather(*(c.claim("issue", arena.issue) for c in claimers))
    [won] = winners(results)
    assert len(arena.emu.log(arena.ref())) == 3  # claim, release, the winner's claim
    assert arena.head_run(arena.ref()) == won.run


async def test_racers_during_a_live_release_never_double_own(arena: Arena) -> None:
    holder = arena.claimer()
    held = await holder.claim("issue", arena.issue)
    assert held is not None
    claimers = [arena.claimer() for _ in range(RACERS)]
    released, *results = await asyncio.gather(
        holder.release(held, "done"), *(c.claim("issue", arena.issue) for c in claimers)
    )
    assert released is True
    won = winners(list(results))  # type: ignore[arg-type]
    assert len(won) <= 1
    sha = arena.emu.ref_sha(arena.ref())
    if won:
        assert sha == won[0].head
        assert arena.head_run(arena.ref()) == won[0].run
        assert await arena.comment_owner() == won[0].run
    else:
        assert sha is None
        assert await arena.comment_owner() is None


async def test_release_then_reclaim_in_rounds(arena: Arena) -> None:
    claimers = [arena.claimer() for _ in range(RACERS)]
    owners: list[str] = []
    for _ in range(3):
        results = await asyncio.gather(*(c.claim("issue", arena.issue) for c in claimers))
        [won] = winners(results)
        owners.append(won.run)
        assert await arena.comment_owner() == won.run
        winner = next(c for c in claimers if c.run_id == won.run)
        assert await winner.release(won, "round done")
        assert arena.emu.ref_sha(arena.ref()) is None
        claimers.remove(winner)
    assert len(set(owners)) == 3
