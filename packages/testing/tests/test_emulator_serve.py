"""The emulator over real HTTP on loopback (`serve()`), and GitHub App authentication."""

from __future__ import annotations

import time

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from githubkit import AppAuthStrategy, AppInstallationAuthStrategy, GitHub, TokenAuthStrategy
from githubkit.exception import RequestError, RequestFailed
from githubkit_schemas.latest import models as m

from agent_loop_testing import GitHubEmulator, assert_matches_schema


async def test_githubkit_over_real_http() -> None:
    em = GitHubEmulator()
    main = em.seed_files({"README.md": "hello\n"})
    number = em.add_issue("over the wire", labels=["agent"])
    with em.serve() as base_url:
        assert base_url.startswith("http://127.0.0.1:")
        gh = GitHub(TokenAuthStrategy(em.bot_token), base_url=base_url, timeout=5, auto_retry=False)
        async with gh:
            issue = (await gh.rest.issues.async_get("acme", "widgets", number)).parsed_data
            assert issue.url == f"{base_url}/repos/acme/widgets/issues/{number}"
            created = await gh.rest.git.async_create_ref(
                "acme", "widgets", ref="refs/agent-loop/claims/1", sha=main
            )
            assert created.status_code == 201
            with pytest.raises(RequestFailed) as again:
                await gh.rest.git.async_create_ref(
                    "acme", "widgets", ref="refs/agent-loop/claims/1", sha=main
                )
            assert again.value.response.status_code == 422
            # Conditional requests work over the wire too.
            await gh.rest.issues.async_list_comments("acme", "widgets", number)
            await gh.rest.issues.async_list_comments("acme", "widgets", number)
            assert em.requests[-1].status == 304
            # The tarball redirect is followed to the emulator's own codeload route.
            archive = await gh.rest.repos.async_download_tarball_archive("acme", "widgets", "main")
            assert archive.content[:2] == b"\x1f\x8b"
            ghes = GitHub(TokenAuthStrategy(em.bot_token), base_url=f"{base_url}/api/v3", timeout=5)
            async with ghes:
                ref = (
                    await ghes.rest.git.async_get_ref("acme", "widgets", "heads/main")
                ).parsed_data
            assert ref.object_.sha == main


async def test_timeout_fault_over_http_and_prompt_shutdown() -> None:
    em = GitHubEmulator()
    em.seed_files({"a": "a"})
    em.inject_fault("GET", r"^/repos/acme/widgets$", timeout=True)
    with em.serve() as base_url:
        async with httpx.AsyncClient(base_url=base_url, timeout=0.3) as client:
            with pytest.raises(httpx.ReadTimeout):
                await client.get("/repos/acme/widgets")
            assert (await client.get("/repos/acme/widgets")).status_code == 200
        em.inject_fault("GET", r"/issues$", timeout=True)
        started = time.monotonic()
        async with httpx.AsyncClient(base_url=base_url, timeout=0.2) as client:
            with pytest.raises(httpx.ReadTimeout):
                await client.get("/repos/acme/widgets/issues")
    # The server released the held request and stopped well before the 30 s hang limit.
    assert time.monotonic() - started < 5
    assert [r.status for r in em.requests] == [0, 200, 0]


def _key_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


async def test_github_app_installation_tokens_act_as_the_bot() -> None:
    em = GitHubEmulator()
    em.seed_files({"a": "a"})
    number = em.add_issue("for the app")
    private, public = _key_pair()
    installation_id = em.register_app(4242, public, slug="agent-loop")
    auth = AppInstallationAuthStrategy(4242, private, installation_id)
    gh = GitHub(auth, base_url="http://emulator", async_transport=em.transport(), auto_retry=False)
    comment = (
        await gh.rest.issues.async_create_comment("acme", "widgets", number, body="on it")
    ).parsed_data
    assert (comment.user.login, comment.user.type) == ("agent-loop[bot]", "Bot")
    assert [r.path for r in em.requests[:2]] == [
        f"/app/installations/{installation_id}/access_tokens",
        f"/repos/acme/widgets/issues/{number}/comments",
    ]
    # GET /user is not available to installation tokens, as on GitHub.
    with pytest.raises(RequestFailed) as info:
        await gh.rest.users.async_get_authenticated()
    assert info.value.response.json()["message"] == "Resource not accessible by integration"
    app = GitHub(
        AppAuthStrategy(4242, private), base_url="http://emulator", async_transport=em.transport()
    )
    slug = (await app.rest.apps.async_get_authenticated()).parsed_data.slug
    bot = (await gh.rest.users.async_get_by_username(f"{slug}[bot]")).parsed_data
    assert bot.login == "agent-loop[bot]"
    now = int(time.time())
    jwt_token = jwt.encode(
        {"iss": "4242", "iat": now - 60, "exp": now + 540}, private, algorithm="RS256"
    )
    async with httpx.AsyncClient(
        transport=em.transport(),
        base_url="http://emulator",
        headers={"Authorization": f"Bearer {jwt_token}"},
    ) as raw:
        assert_matches_schema(m.Integration, (await raw.get("/app")).content)
        assert_matches_schema(
            m.Installation, (await raw.get("/repos/acme/widgets/installation")).content
        )
        minted = await raw.post(f"/app/installations/{installation_id}/access_tokens")
        assert minted.status_code == 201
        assert_matches_schema(m.InstallationToken, minted.content)
    _, other_public = _key_pair()
    em.register_app(7, other_public)
    forged = GitHub(
        AppInstallationAuthStrategy(7, private, installation_id),
        base_url="http://emulator",
        async_transport=em.transport(),
        auto_retry=False,
    )
    # githubkit wraps the failed token request (401 from the emulator) in a RequestError.
    with pytest.raises(RequestError) as bad:
        await forged.rest.issues.async_list_for_repo("acme", "widgets")
    cause = bad.value.__cause__
    assert isinstance(cause, RequestFailed)
    assert cause.response.status_code == 401
