"""GitHubRetryPolicy and typed errors, driven through the real facade over httpx.MockTransport.

Sleeps go to a recorder that advances a fake clock, so every test is instant while the
policy still sees time pass.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import format_datetime

import httpx
import pytest

from agent_loop_common.github import (
    NO_RESPONSE,
    AuthError,
    GitHub,
    GitHubRetryPolicy,
    GitHubUnavailable,
    NotFastForward,
    NotFound,
    RateLimited,
    RefExists,
    TokenAuth,
    Unprocessable,
)

SHA = "a" * 40
EPOCH = 1_800_000_000.0
REF_URL = "https://api.github.com/repos/acme/widgets/git/ref/heads/main"


class FakeTime:
    """A clock that only moves when the policy sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def policy(self, **kw: float) -> GitHubRetryPolicy:
        defaults: dict[str, float] = {
            "max_attempts": 4,
            "base_delay": 1.0,
            "max_delay": 30.0,
            "max_total": 120.0,
            "jitter": 0.0,
        }
        defaults.update(kw)
        return GitHubRetryPolicy(
            int(defaults["max_attempts"]),
            defaults["base_delay"],
            defaults["max_delay"],
            defaults["max_total"],
            defaults["jitter"],
            sleep=self.sleep,
            clock=lambda: self.now,
            wall=lambda: EPOCH + self.now,
        )


Handler = Callable[[httpx.Request], httpx.Response]


def scripted(*answers: httpx.Response | Exception) -> tuple[Handler, list[httpx.Request]]:
    """A handler answering with `answers` in order (the last one repeats)."""
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers[min(len(seen), len(answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return handle, seen


def ref_ok() -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "ref": "refs/heads/main",
            "node_id": "R",
            "url": REF_URL,
            "object": {"type": "commit", "sha": SHA, "url": "u"},
        },
    )


def err(status: int, message: str = "boom", **headers: str) -> httpx.Response:
    return httpx.Response(status, json={"message": message}, headers=headers)


def client(handler: Handler, clock: FakeTime, **policy: float) -> GitHub:
    return GitHub(
        "acme/widgets",
        auth=TokenAuth("t0k"),
        transport=httpx.MockTransport(handler),
        retry=clock.policy(**policy),
    )


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


async def test_server_errors_are_retried_with_exponential_backoff(clock: FakeTime) -> None:
    handler, seen = scripted(err(502), err(503), ref_ok())
    gh = client(handler, clock)
    assert await gh.get_ref("heads/main") == SHA
    assert len(seen) == 3
    assert clock.sleeps == [1.0, 2.0]
    route = "GET /repos/{owner}/{repo}/git/ref/{ref}"
    assert gh.stats.by_route() == {route: {200: 1, 502: 1, 503: 1}}


async def test_exhausted_server_errors_explain_request_answer_and_remedy(
    clock: FakeTime,
) -> None:
    handler, seen = scripted(err(503, "Service is down for maintenance"))
    gh = client(handler, clock, max_attempts=3)
    with pytest.raises(GitHubUnavailable) as info:
        await gh.get_ref("heads/main")
    error = info.value
    assert len(seen) == 3
    assert (error.status, error.method, error.url, error.attempts) == (503, "GET", REF_URL, 3)
    text = str(error)
    assert f"GET {REF_URL} failed after 3 attempts" in text
    assert "GitHub answered 503: 'Service is down for maintenance'" in text
    assert "a later run can retry" in text


async def test_unavailable_with_retry_after_waits_as_asked(clock: FakeTime) -> None:
    handler, _ = scripted(err(503, "maintenance", **{"Retry-After": "9"}), ref_ok())
    gh = client(handler, clock)
    assert await gh.get_ref("heads/main") == SHA
    assert clock.sleeps == [9.0]


async def test_backoff_is_capped_by_max_delay(clock: FakeTime) -> None:
    handler, _ = scripted(err(500))
    gh = client(handler, clock, max_attempts=6, base_delay=1.0, max_delay=5.0)
    with pytest.raises(GitHubUnavailable):
        await gh.get_ref("heads/main")
    assert clock.sleeps == [1.0, 2.0, 4.0, 5.0, 5.0]


async def test_total_time_is_bounded(clock: FakeTime) -> None:
    handler, seen = scripted(err(500))
    gh = client(handler, clock, max_attempts=10, base_delay=4.0, max_total=10.0)
    with pytest.raises(GitHubUnavailable, match="retry budget of 10s is spent"):
        await gh.get_ref("heads/main")
    assert clock.sleeps == [4.0]  # 4 + 8 would exceed 10
    assert len(seen) == 2


async def test_bare_429_backs_off_and_recovers(clock: FakeTime) -> None:
    handler, _ = scripted(err(429), ref_ok())
    gh = client(handler, clock)
    assert await gh.get_ref("heads/main") == SHA
    assert clock.sleeps == [1.0]


async def test_retry_after_zero_never_waits_a_minute(clock: FakeTime) -> None:
    handler, _ = scripted(err(429, **{"Retry-After": "0"}), ref_ok())
    gh = client(handler, clock, base_delay=0.5)
    assert await gh.get_ref("heads/main") == SHA
    assert clock.sleeps == [0.5]


async def test_retry_after_seconds_is_honoured(clock: FakeTime) -> None:
    handler, _ = scripted(err(403, "slow down", **{"Retry-After": "7"}), ref_ok())
    gh = client(handler, clock)
    assert await gh.get_ref("heads/main") == SHA
    assert clock.sleeps == [7.0]


async def test_retry_after_http_date_is_honoured(clock: FakeTime) -> None:
    when = format_datetime(datetime.fromtimestamp(EPOCH + 12, UTC), usegmt=True)
    handler, _ = scripted(err(429, **{"Retry-After": when}), ref_ok())
    gh = client(handler, clock)
    assert await gh.get_ref("heads/main") == SHA
    assert clock.sleeps == [12.0]


async def test_primary_limit_waits_for_a_near_reset(clock: FakeTime) -> None:
    limited = err(
        403,
        "API rate limit exceeded",
        **{"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(EPOCH) + 5)},
    )
    handler, _ = scripted(limited, ref_ok())
    gh = client(handler, clock)
    assert await gh.get_ref("heads/main") == SHA
    assert clock.sleeps == [6.0]  # until the reset, plus a second for clock skew


async def test_far_reset_gives_up_at_once_with_when(clock: FakeTime) -> None:
    limited = err(
        403,
        "API rate limit exceeded",
        **{"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(EPOCH) + 3600)},
    )
    handler, seen = scripted(limited)
    gh = client(handler, clock)
    with pytest.raises(RateLimited) as info:
        await gh.get_ref("heads/main")
    assert len(seen) == 1
    assert clock.sleeps == []
    assert info.value.retry_after == pytest.approx(3601.0)
    assert info.value.reset_at == datetime.fromtimestamp(EPOCH + 3600, UTC)
    assert "GitHub asks to wait 3601s" in str(info.value)
    assert "'API rate limit exceeded'" in str(info.value)


async def test_secondary_limit_message_without_headers_is_retried(clock: FakeTime) -> None:
    handler, _ = scripted(err(403, "You have exceeded a secondary rate limit."), ref_ok())
    gh = client(handler, clock)
    assert await gh.get_ref("heads/main") == SHA
    assert clock.sleeps == [1.0]


async def test_exhausted_rate_limit_is_rate_limited(clock: FakeTime) -> None:
    handler, seen = scripted(err(429, "too many"))
    gh = client(handler, clock, max_attempts=2)
    with pytest.raises(RateLimited) as info:
        await gh.get_ref("heads/main")
    assert len(seen) == 2
    assert info.value.status == 429


async def test_forbidden_is_an_auth_error_without_retry(clock: FakeTime) -> None:
    handler, seen = scripted(err(403, "Resource not accessible by integration"))
    gh = client(handler, clock)
    with pytest.raises(AuthError, match="Resource not accessible by integration") as info:
        await gh.get_ref("heads/main")
    assert len(seen) == 1
    assert info.value.status == 403
    assert "grants the needed permission" in str(info.value)
    assert "Check GITHUB_TOKEN" in str(info.value)


async def test_unauthorized_is_an_auth_error(clock: FakeTime) -> None:
    handler, _ = scripted(err(401, "Bad credentials"))
    with pytest.raises(AuthError, match="Bad credentials"):
        await client(handler, clock).get_ref("heads/main")


async def test_connection_errors_are_retried_and_counted(clock: FakeTime) -> None:
    handler, _ = scripted(httpx.ConnectError("refused"), httpx.ConnectError("refused"), ref_ok())
    gh = client(handler, clock)
    assert await gh.get_ref("heads/main") == SHA
    assert gh.stats.total == 3
    assert gh.stats.by_route()["GET /repos/{owner}/{repo}/git/ref/{ref}"] == {
        NO_RESPONSE: 2,
        200: 1,
    }


async def test_exhausted_timeouts_are_unavailable(clock: FakeTime) -> None:
    handler, seen = scripted(httpx.ReadTimeout("slow"))
    gh = client(handler, clock, max_attempts=2)
    with pytest.raises(GitHubUnavailable, match="no answer from GitHub: 'ReadTimeout: slow'"):
        await gh.get_ref("heads/main")
    assert len(seen) == 2


async def test_hanging_transport_is_cut_by_the_attempt_timeout(clock: FakeTime) -> None:
    calls = 0

    async def hang(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        await asyncio.sleep(5)
        return ref_ok()

    gh = GitHub(
        "acme/widgets",
        auth=TokenAuth("t0k"),
        transport=httpx.MockTransport(hang),
        retry=clock.policy(max_attempts=2),
        timeout=0.02,
    )
    with pytest.raises(GitHubUnavailable, match=r"no complete response within 0\.02s"):
        await gh.get_ref("heads/main")
    assert calls == 2


async def test_ambiguous_failures_of_a_create_are_not_retried(clock: FakeTime) -> None:
    for failure in (err(502, "Bad gateway"), httpx.ReadTimeout("slow")):
        handler, seen = scripted(failure)
        gh = client(handler, clock)
        with pytest.raises(GitHubUnavailable, match="may already have applied it") as info:
            await gh.create_issue("t", "b")
        assert len(seen) == 1
        assert info.value.method == "POST"


async def test_rate_limited_create_is_retried(clock: FakeTime) -> None:
    # GitHub did not act on a rate-limited request, so repeating a create is safe.
    handler, seen = scripted(err(429), err(404, "Not Found"))
    gh = client(handler, clock)
    with pytest.raises(NotFound):
        await gh.create_issue("t", "b")
    assert len(seen) == 2


async def test_refused_connection_on_create_is_retried(clock: FakeTime) -> None:
    handler, seen = scripted(httpx.ConnectError("refused"), err(404, "Not Found"))
    with pytest.raises(NotFound):
        await client(handler, clock).create_issue("t", "b")
    assert len(seen) == 2


async def test_not_found_and_missing_ref(clock: FakeTime) -> None:
    handler, _ = scripted(err(404, "Not Found"))
    gh = client(handler, clock)
    assert await gh.get_ref("heads/nope") is None
    with pytest.raises(NotFound, match="GitHub answers 404, not 403"):
        await gh.get_issue(7)


async def test_ref_races_map_to_their_own_errors(clock: FakeTime) -> None:
    handler, _ = scripted(err(422, "Reference already exists"))
    with pytest.raises(RefExists, match="Another writer created this ref first"):
        await client(handler, clock).create_ref("refs/heads/claim", SHA)

    handler, _ = scripted(err(422, "Object does not exist"))
    with pytest.raises(Unprocessable) as info:
        await client(handler, clock).create_ref("refs/heads/claim", SHA)
    assert type(info.value) is Unprocessable

    handler, _ = scripted(err(422, "Update is not a fast forward"))
    with pytest.raises(NotFastForward, match="pass force=True"):
        await client(handler, clock).update_ref("heads/main", SHA)

    handler, _ = scripted(err(422, "Reference does not exist"))
    with pytest.raises(NotFound):
        await client(handler, clock).update_ref("heads/gone", SHA)
    with pytest.raises(NotFound):
        await client(handler, clock).delete_ref("heads/gone")


async def test_update_ref_sends_force_and_the_short_ref(clock: FakeTime) -> None:
    handler, seen = scripted(ref_ok())
    gh = client(handler, clock)
    await gh.update_ref("refs/heads/feature/x", SHA, force=True)
    assert seen[0].url.path == "/repos/acme/widgets/git/refs/heads/feature/x"
    assert json.loads(seen[0].content) == {"sha": SHA, "force": True}


async def test_validation_errors_are_quoted(clock: FakeTime) -> None:
    answer = httpx.Response(
        422,
        json={
            "message": "Validation Failed",
            "errors": [{"resource": "Issue", "code": "missing_field", "field": "title"}],
        },
    )
    handler, _ = scripted(answer)
    with pytest.raises(Unprocessable, match=r"Validation Failed \(missing_field\)"):
        await client(handler, clock).create_issue("", "b")


def test_policy_rejects_nonsense_and_jitter_stays_in_range() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        GitHubRetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="jitter"):
        GitHubRetryPolicy(jitter=1.5)
    low = GitHubRetryPolicy(base_delay=2.0, jitter=0.5, random=lambda: 0.999999)
    high = GitHubRetryPolicy(base_delay=2.0, jitter=0.5, random=lambda: 0.0)
    assert low.backoff(2) == pytest.approx(2.0, abs=1e-4)
    assert high.backoff(2) == 4.0
    assert GitHubRetryPolicy(base_delay=1.0, max_delay=3.0, jitter=0.0).backoff(10) == 3.0


def test_repo_and_page_size_are_validated() -> None:
    with pytest.raises(ValueError, match="owner/name"):
        GitHub("widgets", auth=TokenAuth("t"))
    with pytest.raises(ValueError, match="per_page"):
        GitHub("acme/widgets", auth=TokenAuth("t"), per_page=500)
    with pytest.raises(ValueError, match="non-empty"):
        TokenAuth(" ")
