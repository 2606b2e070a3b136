"""Injected faults fire the given number of times, the way GitHub fails, then stop.

Clients are githubkit with retry decisions chosen per test (instant retries), so the
tests check what the emulator sends, not githubkit's back-off sleeps.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from githubkit import GitHub, TokenAuthStrategy
from githubkit.exception import (
    GitHubException,
    PrimaryRateLimitExceeded,
    RequestFailed,
    RequestTimeout,
    SecondaryRateLimitExceeded,
)
from githubkit.retry import RetryOption

from agent_loop_testing import GitHubEmulator, LoggedRequest

REPO_PATH = "/repos/acme/widgets"


def instant_retry_on_5xx(exc: GitHubException, count: int) -> RetryOption:
    # Not timedelta(0): githubkit sleeps 60 s when the delay is falsy.
    if count < 3 and isinstance(exc, RequestFailed) and exc.response.status_code >= 500:
        return RetryOption(True, timedelta(microseconds=1))
    return RetryOption(False)


@pytest.fixture
def emulator() -> GitHubEmulator:
    em = GitHubEmulator(rate_limit=100)
    em.seed_files({"README.md": "hello\n"})
    return em


@pytest.fixture
async def gh(emulator: GitHubEmulator) -> AsyncIterator[GitHub[TokenAuthStrategy]]:
    client = GitHub(
        TokenAuthStrategy(emulator.bot_token),
        base_url="http://emulator",
        async_transport=emulator.transport(),
        auto_retry=instant_retry_on_5xx,
        http_cache=False,
        timeout=5,
    )
    async with client:
        yield client


async def test_server_errors_fire_n_times_then_the_route_recovers(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    fault = emulator.inject_fault("GET", r"^/repos/acme/widgets$", status=502, times=2)
    repo = await gh.rest.repos.async_get("acme", "widgets")
    assert repo.parsed_data.full_name == "acme/widgets"
    assert emulator.requests == [
        LoggedRequest("GET", REPO_PATH, 502),
        LoggedRequest("GET", REPO_PATH, 502),
        LoggedRequest("GET", REPO_PATH, 200),
    ]
    assert (fault.fired, fault.remaining) == (2, 0)


async def test_exhausted_retries_surface_the_error_body(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    emulator.inject_fault("*", r"/issues$", status=503, times=5)
    with pytest.raises(RequestFailed) as info:
        await gh.rest.issues.async_list_for_repo("acme", "widgets")
    assert info.value.response.status_code == 503
    assert info.value.response.json()["message"] == "Service Unavailable"
    assert [r.status for r in emulator.requests] == [503] * 4
    # The fifth firing is still armed; the next call eats it and then succeeds.
    assert (await gh.rest.issues.async_list_for_repo("acme", "widgets")).status_code == 200


async def test_secondary_rate_limit_with_retry_after(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    emulator.inject_fault("POST", r"/git/blobs$", status=429, headers={"Retry-After": "7"})
    with pytest.raises(SecondaryRateLimitExceeded) as info:
        await gh.rest.git.async_create_blob("acme", "widgets", content="x")
    assert info.value.retry_after == timedelta(seconds=7)
    assert (await gh.rest.git.async_create_blob("acme", "widgets", content="x")).status_code == 201


async def test_primary_rate_limit_header_override(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    reset = str(int(time.time()) + 30)
    emulator.inject_fault(
        "GET",
        r"/issues",
        status=403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset},
        body={"message": "API rate limit exceeded for user ID 3."},
    )
    with pytest.raises(PrimaryRateLimitExceeded) as info:
        await gh.rest.issues.async_list_for_repo("acme", "widgets")
    assert info.value.response.headers["x-ratelimit-remaining"] == "0"
    assert info.value.response.headers["x-ratelimit-limit"] == "100"


async def test_real_rate_limit_exhaustion_and_free_304s(emulator: GitHubEmulator) -> None:
    em = GitHubEmulator(rate_limit=3)
    em.seed_files({"a": "a"})
    client = GitHub(
        TokenAuthStrategy(em.bot_token),
        base_url="http://emulator",
        async_transport=em.transport(),
        auto_retry=False,
    )
    first = await client.rest.repos.async_get("acme", "widgets")
    assert first.headers["x-ratelimit-remaining"] == "2"
    for _ in range(3):  # revalidations answered 304 by the emulator do not count
        await client.rest.repos.async_get("acme", "widgets")
    assert [r.status for r in em.requests] == [200, 304, 304, 304]
    await client.rest.issues.async_list_for_repo("acme", "widgets")
    await client.rest.pulls.async_list("acme", "widgets")
    with pytest.raises(PrimaryRateLimitExceeded) as info:
        await client.rest.git.async_get_ref("acme", "widgets", "heads/main")
    assert info.value.response.json()["message"].startswith("API rate limit exceeded for user ID")
    assert em.rate_limit_remaining(em.bot) == 0
    assert em.rate_limit_remaining("acme") == 3


async def test_timeouts_over_the_in_process_transport(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    fault = emulator.inject_fault("GET", r"/git/ref/heads/main$", timeout=True)
    with pytest.raises(RequestTimeout):
        await gh.rest.git.async_get_ref("acme", "widgets", "heads/main")
    assert emulator.requests[-1] == LoggedRequest("GET", f"{REPO_PATH}/git/ref/heads/main", 0)
    assert fault.fired == 1
    assert (await gh.rest.git.async_get_ref("acme", "widgets", "heads/main")).status_code == 200


async def test_slow_response_then_the_real_answer(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    emulator.inject_fault("GET", r"^/repos/acme/widgets$", status=None, delay=0.2)
    started = time.monotonic()
    repo = await gh.rest.repos.async_get("acme", "widgets")
    assert time.monotonic() - started >= 0.2
    assert repo.status_code == 200


async def test_fault_matching_by_method_and_clearing(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    post_only = emulator.inject_fault("POST", r"/issues$", status=500, times=10)
    await gh.rest.issues.async_list_for_repo("acme", "widgets")
    assert post_only.fired == 0
    emulator.clear_faults()
    created = await gh.rest.issues.async_create("acme", "widgets", title="t")
    assert created.status_code == 201
    assert post_only.fired == 0
