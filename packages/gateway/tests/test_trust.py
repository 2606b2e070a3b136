"""Trust from the repository's permissions: cached per login, one lookup per flood."""

from __future__ import annotations

import asyncio

from agent_loop_gateway import PermissionTrust, permission_at_least
from agent_loop_testing import GitHubEmulator, emulator_client

from .test_dedup import ManualClock


def test_permission_order() -> None:
    assert permission_at_least("admin", "write")
    assert permission_at_least("maintain", "write")
    assert permission_at_least("write", "write")
    assert not permission_at_least("triage", "write")
    assert not permission_at_least("none", "triage")
    assert not permission_at_least("custom-role", "triage")


async def test_trust_follows_the_repository_permissions(emulator: GitHubEmulator) -> None:
    clock = ManualClock()
    async with emulator_client(emulator) as gh:
        trust = PermissionTrust(gh, min_permission="write", agent_login=emulator.bot, clock=clock)
        assert await trust.is_trusted("alice")
        assert await trust.is_trusted("ACME")
        assert not await trust.is_trusted("mallory")
        assert not await trust.is_trusted("nobody-at-all")
        assert await trust.is_trusted(emulator.bot)  # no lookup for the agents themselves
        assert trust.lookups == 4


async def test_a_flood_costs_one_lookup_and_the_answer_expires(emulator: GitHubEmulator) -> None:
    clock = ManualClock()
    async with emulator_client(emulator) as gh:
        trust = PermissionTrust(
            gh, min_permission="write", agent_login=emulator.bot, clock=clock, ttl=60
        )
        answers = await asyncio.gather(*(trust.is_trusted("mallory") for _ in range(50)))
        assert answers == [False] * 50
        assert trust.lookups == 1
        emulator.set_permission("mallory", "write")
        assert not await trust.is_trusted("mallory")  # cached
        clock.t += 61
        assert await trust.is_trusted("mallory")
        assert trust.lookups == 2
