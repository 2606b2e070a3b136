"""Replay memory: by delivery id and by body, bounded in size and in time."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from agent_loop_gateway import DeliveryMemory


class ManualClock:
    def __init__(self) -> None:
        self.t = 100.0

    def monotonic(self) -> float:
        return self.t

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(0)


def test_a_delivery_id_or_a_body_seen_before_is_a_replay() -> None:
    memory = DeliveryMemory(ManualClock())
    assert memory.check_and_remember("d1", b"one") is None
    assert memory.check_and_remember("d1", b"one") == "delivery"  # GitHub's redelivery
    assert memory.check_and_remember("d2", b"one") == "body"  # a captured body, new id
    assert memory.check_and_remember("d1", b"two") == "delivery"
    assert memory.check_and_remember("d3", b"three") is None


def test_the_memory_is_bounded_oldest_first() -> None:
    memory = DeliveryMemory(ManualClock(), size=3)
    for n in range(5):
        assert memory.check_and_remember(f"d{n}", f"body {n}".encode()) is None
    assert len(memory) == 3
    assert memory.check_and_remember("d0", b"body 0") is None  # forgotten
    assert memory.check_and_remember("d4", b"body 4") == "delivery"


def test_entries_expire() -> None:
    clock = ManualClock()
    memory = DeliveryMemory(clock, ttl=60)
    memory.check_and_remember("d1", b"one")
    clock.t += 59
    assert memory.check_and_remember("d1", b"one") == "delivery"
    clock.t += 2
    assert memory.check_and_remember("d1", b"one") is None
