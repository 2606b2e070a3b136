"""The facade reads GitHub's rate budget, keeps a reserve, and paces bursts of writes."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest
from pydantic import ValidationError

from agent_loop_common.github import RateBudget, RateReserve, WritePacing, rate_budget_of
from agent_loop_common.runtime import ReserveReached, check_reserve
from agent_loop_common.settings import Settings
from agent_loop_testing import GitHubEmulator, emulator_client


class FakeClock:
    """Monotonic time that only moves when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.now += seconds


def _budget(remaining: int, limit: int = 5000) -> RateBudget:
    return RateBudget(
        limit=limit, remaining=remaining, reset_at=datetime(2026, 1, 1, 4, 12, tzinfo=UTC)
    )


def test_a_budget_is_read_from_core_headers_only() -> None:
    headers = httpx.Headers(
        {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": "412",
            "x-ratelimit-reset": "1767240720",
        }
    )
    budget = rate_budget_of(headers)
    assert budget is not None
    assert (budget.limit, budget.remaining) == (5000, 412)
    assert budget.describe() == "412 of 5000 requests left until 04:12 UTC"
    graphql = httpx.Headers({**headers, "x-ratelimit-resource": "graphql"})
    assert rate_budget_of(graphql) is None
    assert rate_budget_of(httpx.Headers({"x-ratelimit-limit": "5000"})) is None


@pytest.mark.parametrize(
    ("text", "limit", "requests"),
    [("10%", 5000, 500), ("2.5 %", 15000, 375), ("500", 60, 500), ("0", 5000, 0), ("0%", 5000, 0)],
)
def test_a_reserve_is_a_share_or_a_count(text: str, limit: int, requests: int) -> None:
    assert RateReserve.parse(text).of(limit) == requests


@pytest.mark.parametrize("text", ["95%", "-1", "ten", "1000001", ""])
def test_a_reserve_out_of_bounds_is_refused_at_load(text: str) -> None:
    with pytest.raises(ValidationError, match="rate_limit_reserve"):
        Settings(repo="acme/widgets", github_token="t", rate_limit_reserve=text)  # type: ignore[call-arg]


def test_the_reserve_holds_at_or_below_its_size() -> None:
    reserve = RateReserve.parse("10%")
    check_reserve(_budget(501), reserve)
    check_reserve(None, reserve)  # no reading yet: go ahead
    check_reserve(_budget(0), RateReserve.parse("0"))  # no reserve
    with pytest.raises(ReserveReached) as raised:
        check_reserve(_budget(500), reserve)
    assert raised.value.pause.until == _budget(500).reset_at
    assert "500 of 5000 requests left until 04:12 UTC" in raised.value.pause.note


async def test_the_facade_reports_the_emulators_budget() -> None:
    emu = GitHubEmulator()
    gh = emulator_client(emu)
    assert gh.rate_budget is None
    await gh.repository()
    first = gh.rate_budget
    assert first is not None
    assert first.limit == 5000
    emu.set_rate_limit_remaining(emu.bot, 42)
    await gh.repository()
    assert gh.rate_budget is not None
    assert gh.rate_budget.remaining == 41
    assert emu.rate_limit_remaining(emu.bot) == 41


def test_writes_go_out_unspaced_until_a_burst_then_a_second_apart() -> None:
    pacing = WritePacing(burst=3, per_minute=5, per_hour=7)
    assert pacing.delay([], 100.0) == 0
    assert pacing.delay([99.0, 99.5], 100.0) == 0  # under the burst: at once
    assert pacing.delay([98.0, 99.0, 99.5], 100.0) == pytest.approx(0.5)  # 1 s after the last
    assert pacing.delay([10.0, 20.0, 30.0], 100.0) == 0  # older than a minute: forgotten
    # 5 in the last minute: wait until the oldest of them is a minute old
    assert pacing.delay([50.0, 60.0, 70.0, 80.0, 90.0], 100.0) == pytest.approx(10.0)
    # 7 in the last hour: wait until the oldest is an hour old
    hour = [0.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0]
    assert pacing.delay(hour, 700.0) == pytest.approx(2900.0)
    with pytest.raises(ValueError, match="burst"):
        WritePacing(burst=0)


async def test_a_burst_of_comments_is_paced_and_reads_never_are() -> None:
    emu = GitHubEmulator()
    number = emu.add_issue("Busy", "Many replies.")
    fake = FakeClock()
    gh = emulator_client(emu, pacing=WritePacing(sleep=fake.sleep, clock=fake.clock))
    for i in range(25):
        await gh.create_issue_comment(number, f"reply {i}")
        await gh.list_issue_comments(number)
    assert fake.sleeps == [1.0] * 5  # writes 21..25 wait a second each; reads never
    assert len(emu.comments(number)) == 25


async def test_a_normal_tick_of_few_writes_never_waits() -> None:
    emu = GitHubEmulator()
    number = emu.add_issue("One", "Claim, reply, release.")
    fake = FakeClock()
    gh = emulator_client(emu, pacing=WritePacing(sleep=fake.sleep, clock=fake.clock))
    comment = await gh.create_issue_comment(number, "claimed")
    await gh.create_issue_comment(number, "done")
    await gh.update_issue_comment(comment.id, "released")
    assert fake.sleeps == []
