"""`owner/*` expansion through the API, against several emulated repositories
(`GitHubHost`): a token lists `GET /user/repos`, an App `GET /installation/repositories`;
both keep only the owner's repositories this identity can work on."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from agent_loop_common.github import AppAuth, GitHub, NotFound, TokenAuth
from agent_loop_common.memory import (
    MemoryLocation,
    read_context,
    repo_prefix,
    write_general_lessons,
)
from agent_loop_common.records import Lesson, LessonBook
from agent_loop_common.settings import ConfigError, load_settings
from agent_loop_testing import GitHubHost

REPOS = ["acme/api", "acme/web", "other/tool", "acme/docs"]


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


async def test_a_token_lists_the_owners_repositories_it_can_push_to() -> None:
    host = GitHubHost(REPOS, page_size_default=2)
    host["acme/docs"].set_permission(host.bot_login, "read")  # cannot push: left out
    async with GitHub(
        "acme/*", auth=TokenAuth(host.bot_token), base_url="http://h", transport=host.transport()
    ) as gh:
        assert await gh.owner_repositories("ACME") == ["acme/api", "acme/web"]
        host.remove("acme/web")  # access revoked
        assert await gh.owner_repositories("acme") == ["acme/api"]
    async with GitHub(
        "acme/web", auth=TokenAuth(host.bot_token), base_url="http://h", transport=host.transport()
    ) as gone:
        with pytest.raises(NotFound):
            await gone.list_issues(state="open")


async def test_an_app_lists_its_installations_repositories() -> None:
    host = GitHubHost(REPOS)
    private, public = _key_pair()
    installation = host.primary.register_app(4242, public, slug="agent-loop")
    auth = AppAuth(4242, private, installation_id=installation)
    async with GitHub("acme/*", auth=auth, base_url="http://h", transport=host.transport()) as gh:
        assert await gh.owner_repositories("acme") == ["acme/api", "acme/docs", "acme/web"]


def test_exactly_one_repository_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    monkeypatch.delenv("AGENT_LOOP_REPO", raising=False)
    monkeypatch.setenv("AGENT_LOOP_REPOS", "acme/api, acme/*")
    settings = load_settings()
    assert settings.repos == ("acme/api", "acme/*")
    one = settings.for_repo("acme/api")
    assert MemoryLocation.from_settings(one).prefix == repo_prefix("agent-loop", "acme/api")
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/api")
    with pytest.raises(ConfigError, match="not both"):
        load_settings()
    monkeypatch.delenv("AGENT_LOOP_REPOS")
    assert (
        MemoryLocation.from_settings(load_settings()).prefix == "agent-loop"
    )  # the layout it always had
    monkeypatch.setenv("AGENT_LOOP_REPOS", "acme/api,bad")
    monkeypatch.delenv("AGENT_LOOP_REPO")
    with pytest.raises(ConfigError, match="AGENT_LOOP_REPOS"):
        load_settings()


def test_repository_namespaces_are_distinct_and_readable() -> None:
    assert repo_prefix("agent-loop", "a-b/c") != repo_prefix("agent-loop", "a/b-c")
    assert repo_prefix("agent-loop", "Acme/API") == repo_prefix("agent-loop", "acme/api")
    assert repo_prefix("agent-loop", "acme/api").startswith("agent-loop-acme-api-")


async def test_general_lessons_reach_the_other_repositories_only(tmp_path: Path) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    shared = MemoryLocation(org="o", project="p", domain="d", root=str(tmp_path / "mem"))
    api = replace(shared, prefix=repo_prefix(shared.prefix, "acme/api"))
    web = replace(shared, prefix=repo_prefix(shared.prefix, "acme/web"))
    vault = replace(shared, prefix=repo_prefix(shared.prefix, "acme/vault"))

    def lesson(lesson_id: str, repo: str, **extra: object) -> Lesson:
        return Lesson.model_validate(
            {"id": lesson_id, "text": lesson_id, "repo": repo, "created_at": now,
             "updated_at": now} | extra
        )  # fmt: skip

    book = LessonBook(
        lessons=[
            lesson("acme/api#L-any", "acme/api", general=True, visibility="public"),
            lesson("acme/api#L-api", "acme/api", visibility="public"),
            # a lesson claiming another repository in api's own file is refused
            lesson("acme/vault#L-fake", "acme/vault", general=True, visibility="public"),
        ]
    )
    await write_general_lessons(shared, api, book)
    secret = LessonBook(
        lessons=[lesson("acme/vault#L-key", "acme/vault", general=True, visibility="private")]
    )
    await write_general_lessons(shared, vault, secret)
    both = ("acme/api", "acme/vault")

    seen_by_web = await read_context(web, shared=shared, share_from=both)
    assert [x.id for x in seen_by_web.lessons.lessons] == ["acme/api#L-any"]
    private_web = await read_context(web, shared=shared, share_from=both, reader_public=False)
    assert sorted(x.id for x in private_web.lessons.lessons) == [
        "acme/api#L-any",
        "acme/vault#L-key",
    ]
    seen_by_api = await read_context(api, shared=shared, share_from=both)  # own file skipped
    assert seen_by_api.lessons.lessons == []
    assert (await read_context(web, shared=shared)).lessons.lessons == []  # none listed
    listed_vault_only = await read_context(web, shared=shared, share_from=("acme/vault",))
    assert listed_vault_only.lessons.lessons == []  # private never reaches a public one
    assert (await read_context(web)).lessons.lessons == []  # one repository: nothing shared
