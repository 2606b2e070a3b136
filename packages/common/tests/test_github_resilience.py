"""Retries, conditional requests, App auth and GHES against the GitHub emulator."""

from __future__ import annotations

import time

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from agent_loop_common.github import (
    AppAuth,
    ETagCache,
    GitHub,
    GitHubUnavailable,
    RateLimited,
    TokenAuth,
)
from agent_loop_testing import GitHubEmulator, emulator_client, instant_retry

COMMENTS = "GET /repos/{owner}/{repo}/issues/{issue_number}/comments"


@pytest.fixture
def emu() -> GitHubEmulator:
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "hello\n"})
    return emulator


async def test_injected_5xx_429_and_403_are_retried(emu: GitHubEmulator) -> None:
    number = emu.add_issue("Flaky", author="acme")
    gh = emulator_client(emu)
    emu.inject_fault("GET", r"/issues$", status=502, times=2)
    emu.inject_fault("GET", r"/issues$", status=429, headers={"Retry-After": "0"})
    reset = str(int(time.time()) + 2)
    emu.inject_fault(
        "GET",
        r"/issues$",
        status=403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset},
        body={"message": "API rate limit exceeded"},
    )
    assert [i.number for i in await gh.list_issues()] == [number]
    assert gh.stats.by_route()["GET /repos/{owner}/{repo}/issues"] == {
        200: 1,
        403: 1,
        429: 1,
        502: 2,
    }


async def test_timeouts_are_retried_for_reads(emu: GitHubEmulator) -> None:
    gh = emulator_client(emu)
    emu.inject_fault("GET", r"/git/ref/", timeout=True, times=2)
    assert await gh.get_ref("heads/main") == emu.ref_sha("heads/main")
    assert [r.status for r in emu.requests if "/git/ref/" in r.path] == [0, 0, 200]


async def test_failed_create_is_not_repeated(emu: GitHubEmulator) -> None:
    gh = emulator_client(emu)
    emu.inject_fault("POST", r"/issues$", status=500)
    with pytest.raises(GitHubUnavailable, match="may already have applied it"):
        await gh.create_issue("Only once", "")
    assert [r for r in emu.requests if r.method == "POST"] == [
        ("POST", "/repos/acme/widgets/issues", 500)
    ]


async def test_blob_upload_is_retried_inside_commit_files(emu: GitHubEmulator) -> None:
    gh = emulator_client(emu)
    parent = emu.ref_sha("heads/main") or ""
    emu.inject_fault("POST", r"/git/blobs$", status=503, times=2)
    sha = await gh.commit_files(parent_sha=parent, message="bin", files={"a.bin": b"\x00\x01"})
    await gh.update_ref("heads/main", sha)
    assert emu.file_at("main", "a.bin") == b"\x00\x01"


async def test_persistent_outage_surfaces_after_the_budget(emu: GitHubEmulator) -> None:
    gh = emulator_client(emu, retry=instant_retry(max_attempts=3))
    emu.inject_fault("GET", r"/acme/widgets$", status=503, times=10)
    with pytest.raises(GitHubUnavailable, match="after 3 attempts") as info:
        await gh.repository()
    assert info.value.status == 503


async def test_exhausted_primary_limit_stops_at_once(emu: GitHubEmulator) -> None:
    gh = emulator_client(emu)
    reset = str(int(time.time()) + 1800)
    emu.inject_fault(
        "GET",
        r"/acme/widgets$",
        status=403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset},
        body={"message": "API rate limit exceeded for installation"},
    )
    with pytest.raises(RateLimited) as info:
        await gh.repository()
    assert info.value.attempts == 1
    assert info.value.retry_after is not None
    assert info.value.retry_after > 1700


async def test_unchanged_polls_are_304s_counted_apart(emu: GitHubEmulator) -> None:
    number = emu.add_issue("Chatty", author="acme")
    for i in range(75):
        emu.add_comment(number, f"c{i}", author="acme")
    gh = emulator_client(emu, per_page=30)

    first = await gh.list_issue_comments(number)
    budget = emu.rate_limit_remaining("agent-loop[bot]")
    second = await gh.list_issue_comments(number)
    assert second == first
    assert gh.stats.by_route()[COMMENTS] == {200: 3, 304: 3}
    assert (gh.stats.total, gh.stats.not_modified, gh.stats.billable) == (6, 3, 3)
    assert emu.rate_limit_remaining("agent-loop[bot]") == budget  # 304s are free

    emu.add_comment(number, "new", author="acme")
    third = await gh.list_issue_comments(number)
    assert len(third) == 76
    # Only the last page changed; the first two are still 304s.
    assert gh.stats.by_route()[COMMENTS] == {200: 4, 304: 5}


async def test_every_polled_read_is_a_304_when_unchanged(emu: GitHubEmulator) -> None:
    sha = emu.push("agent/x", {"a.txt": "a\n"}, author="acme", message="a")
    pr = emu.open_pull("agent/x", title="PR")
    emu.add_review(pr, author="acme", comments=[("a.txt", 1, "hm")])
    emu.set_check_run(sha, "tests")
    emu.set_status(sha, "ci", "success")
    gh = emulator_client(emu)

    async def poll() -> None:
        await gh.list_issues()
        await gh.list_pulls()
        await gh.list_issue_comments(pr)
        await gh.list_issue_events(pr)
        await gh.list_reviews(pr)
        await gh.list_review_comments(pr)
        await gh.list_check_runs(sha)
        await gh.list_statuses(sha)

    await poll()
    assert gh.stats.not_modified == 0
    await poll()
    assert gh.stats.not_modified == gh.stats.total // 2 == 8


async def test_etag_cache_survives_a_run_through_dump_and_load(emu: GitHubEmulator) -> None:
    emu.add_issue("One", author="acme", labels=["agent"])
    first_run = emulator_client(emu)
    await first_run.list_issues(labels=["agent"])
    await first_run.list_pulls()
    assert first_run.etags.changed
    saved = first_run.etags.dump()
    first_run.etags.mark_saved()

    second_run = emulator_client(emu, etags=ETagCache.load(saved))
    assert not second_run.etags.changed
    issues = await second_run.list_issues(labels=["agent"])
    assert [i.title for i in issues] == ["One"]
    await second_run.list_pulls()
    assert second_run.stats.not_modified == second_run.stats.total == 2
    assert not second_run.etags.changed  # nothing new to save


def _app_key() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


@pytest.mark.parametrize("base_url", ["http://emulator.test", "http://ghes.test/api/v3"])
async def test_app_auth_finds_its_installation_and_acts_as_its_bot(
    emu: GitHubEmulator, base_url: str
) -> None:
    private, public = _app_key()
    installation = emu.register_app(4242, public, slug="builder-bot")
    gh = emulator_client(emu, auth=AppAuth(4242, private), base_url=base_url)

    me = await gh.viewer()
    assert (me.login, me.type) == ("builder-bot[bot]", "Bot")
    created = await gh.create_issue("From the App", "")
    assert created.user.login == "builder-bot[bot]"
    await gh.get_issue(created.number)

    routes = gh.stats.by_route()
    assert routes["GET /repos/{owner}/{repo}/installation"] == {200: 1}
    # One installation token, cached across requests.
    assert routes["POST /app/installations/{installation_id}/access_tokens"] == {201: 1}
    explicit = emulator_client(
        emu, auth=AppAuth(4242, private, installation_id=installation), base_url=base_url
    )
    await explicit.repository()
    assert "GET /repos/{owner}/{repo}/installation" not in explicit.stats.by_route()


async def test_ghes_base_url_with_a_token(emu: GitHubEmulator) -> None:
    gh = emulator_client(emu, base_url="http://ghes.test/api/v3")
    assert (await gh.repository()).default_branch == "main"
    assert await gh.get_file("README.md", "main") == b"hello\n"
    assert all(r.path.startswith("/repos/") for r in emu.requests)
    assert gh.stats.by_route() == {
        "GET /repos/{owner}/{repo}": {200: 1},
        "GET /repos/{owner}/{repo}/contents/{path}": {200: 1},
    }


async def test_over_real_http_with_the_client_timeout(emu: GitHubEmulator) -> None:
    with emu.serve() as url:
        async with GitHub(
            emu.full_name,
            auth=TokenAuth(emu.bot_token),
            base_url=url,
            timeout=0.3,
            retry=instant_retry(max_attempts=2),
        ) as gh:
            assert (await gh.repository()).full_name == "acme/widgets"
            emu.inject_fault("GET", r"/git/ref/", timeout=True, times=1)
            assert await gh.get_ref("heads/main") == emu.ref_sha("heads/main")
            emu.inject_fault("GET", r"/git/ref/", timeout=True, times=5)
            with pytest.raises(GitHubUnavailable, match="ReadTimeout"):
                await gh.get_ref("heads/main")


async def test_app_token_is_refreshed_before_it_expires() -> None:
    """githubkit renews an installation token a minute before `expires_at` (MockTransport:
    the emulator always mints hour-long tokens)."""
    private, _ = _app_key()
    minted: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/access_tokens"):
            assert request.headers["authorization"].startswith("Bearer ey")
            minted.append(f"ghs_{len(minted)}")
            # Expires within the minute githubkit keeps in reserve: renewed on every use.
            expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 60))
            return httpx.Response(201, json={"token": minted[-1], "expires_at": expires})
        assert request.headers["authorization"] == f"token {minted[-1]}"
        return httpx.Response(404, json={"message": "Not Found"})

    gh = GitHub(
        "acme/widgets",
        auth=AppAuth(7, private, installation_id=99),
        transport=httpx.MockTransport(handle),
        retry=instant_retry(),
    )
    assert await gh.get_ref("heads/a") is None
    assert await gh.get_ref("heads/b") is None
    assert minted == ["ghs_0", "ghs_1"]
