"""The emulator's web pages: every `html_url` it hands out opens a page in a browser,
and nothing a person or a model wrote can run on it."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import httpx
import pytest

from agent_loop_testing import GitHubEmulator, GitHubHost, emulator_client

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


async def _first_review_comment(em: GitHubEmulator, pr: int) -> int:
    async with emulator_client(em, token=em.owner_token) as gh:
        return (await gh.list_review_comments(pr))[0].id


@pytest.fixture
def story() -> GitHubEmulator:
    """An issue with a comment, the bot's PR for it with the owner's inline review, a
    reply, an approval and a check run."""
    em = GitHubEmulator()
    em.seed_files({"src/app.py": "x = 1\n", "README.md": "# app\n"})
    issue = em.add_issue(f"Make x two {HOSTILE}", f"Body & {HOSTILE}")
    em.add_comment(issue, f"/agent-loop build {HOSTILE}", author="acme")
    em.label_issue(issue, "agent", actor="acme")
    head = em.push(
        "agent/issue-1",
        {"src/app.py": "x = 2\n"},
        author=em.bot_login,
        message=f"Make x two {HOSTILE}",
    )
    pr = em.open_pull("agent/issue-1", title="Make x two", body="Fixes #1", author=em.bot_login)
    em.add_review(pr, author="acme", comments=[("src/app.py", 1, f"Why two? {HOSTILE}")])
    first = asyncio.run(_first_review_comment(em, pr))
    em.add_review_comment_reply(pr, first, "Because the issue asks.", author=em.bot_login)
    em.add_review(pr, author="acme", state="APPROVED", body="Thanks!")
    em.set_check_run(head, "ci", conclusion="success")
    return em


@pytest.fixture
def served(story: GitHubEmulator) -> Iterator[tuple[GitHubEmulator, httpx.Client]]:
    with story.serve() as url:
        client = httpx.Client(
            base_url=url, headers={"Authorization": f"token {story.owner_token}"}, timeout=10
        )
        with client:
            yield story, client


def _page(client: httpx.Client, html_url: str) -> str:
    """The page an `html_url` opens, which must hold its `#fragment` as an element id."""
    url, _, fragment = html_url.partition("#")
    answer = client.get(url)
    assert answer.status_code == 200, (html_url, answer.text[:300])
    assert answer.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in answer.headers["content-security-policy"]
    if fragment:
        assert f'id="{fragment}"' in answer.text, html_url
    return answer.text


def _no_markup_from_users(page: str) -> None:
    assert "<script" not in page
    assert "<img" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


def test_every_html_url_of_an_issue_opens_its_page(
    served: tuple[GitHubEmulator, httpx.Client],
) -> None:
    _, client = served
    issue = client.get("/repos/acme/widgets/issues/1").json()
    page = _page(client, issue["html_url"])
    assert "Make x two" in page
    assert "Body &amp;" in page
    assert "@acme labeled agent" in page
    _no_markup_from_users(page)
    [comment] = client.get("/repos/acme/widgets/issues/1/comments").json()
    assert "/agent-loop build" in _page(client, comment["html_url"])


def test_every_html_url_of_a_pull_request_opens_its_page(
    served: tuple[GitHubEmulator, httpx.Client],
) -> None:
    _, client = served
    pull = client.get("/repos/acme/widgets/pulls/2").json()
    page = _page(client, pull["html_url"])
    for review in client.get("/repos/acme/widgets/pulls/2/reviews").json():
        _page(client, review["html_url"])
    for comment in client.get("/repos/acme/widgets/pulls/2/comments").json():
        _page(client, comment["html_url"])
    assert "approved these changes" in page
    assert "Thanks!" in page
    assert "src/app.py:1" in page
    assert "Because the issue asks." in page
    assert '<span class="add">+x = 2</span>' in page  # the diff
    assert "<td>ci</td><td>success</td>" in page
    _no_markup_from_users(page)
    commit = re.search(r'href="([^"]+/commit/[0-9a-f]{40})"', page)
    assert commit is not None
    commit_page = _page(client, commit.group(1))
    assert "+x = 2" in commit_page
    _no_markup_from_users(commit_page)


def test_an_issue_number_of_a_pull_request_leads_to_it_and_back(
    served: tuple[GitHubEmulator, httpx.Client],
) -> None:
    _, client = served
    to_pull = client.get("/acme/widgets/issues/2")
    assert to_pull.status_code == 302
    assert to_pull.headers["location"].endswith("/acme/widgets/pull/2")
    to_issue = client.get("/acme/widgets/pull/1")
    assert to_issue.status_code == 302
    assert to_issue.headers["location"].endswith("/acme/widgets/issues/1")
    assert client.get("/acme/widgets/issues/99").status_code == 404


def test_a_merged_pull_request_still_shows_what_it_changed(
    served: tuple[GitHubEmulator, httpx.Client],
) -> None:
    em, client = served
    assert client.put("/repos/acme/widgets/pulls/2/merge", json={}).status_code == 200
    page = _page(client, "/acme/widgets/pull/2")
    assert '<span class="state merged">Merged</span>' in page
    assert "@acme merged agent/issue-1 into main" in page
    assert '<span class="add">+x = 2</span>' in page
    raw = client.get("/acme/widgets/pull/2.diff")
    assert raw.headers["content-type"].startswith("text/plain")
    assert "+x = 2" in raw.text
    assert "diff --git a/src/app.py b/src/app.py" in raw.text
    assert em.pull(2).merged


def test_the_repository_page_lists_issues_and_pull_requests(
    served: tuple[GitHubEmulator, httpx.Client],
) -> None:
    _, client = served
    repo = client.get("/repos/acme/widgets").json()
    page = _page(client, repo["html_url"])
    assert 'href="http://127.0.0.1:' in page
    assert "/acme/widgets/pull/2" in page
    assert "/acme/widgets/issues/1" in page
    _no_markup_from_users(page)


def test_pages_are_not_api_calls(served: tuple[GitHubEmulator, httpx.Client]) -> None:
    """Pages need no token, use no rate limit, and leave the API's routes alone."""
    em, client = served
    logged = len(em.requests)
    assert httpx.get(f"{client.base_url}/acme/widgets/pull/2").status_code == 200
    assert len(em.requests) == logged
    assert client.get("/user/repos").status_code == 200  # an API route, not a page
    missing = client.get("/someone/else")
    assert missing.status_code == 404
    assert missing.json()["message"] == "Not Found"


def test_a_private_repository_has_no_public_pages() -> None:
    em = GitHubEmulator()
    em.add_issue("secret")
    em.private = True
    with em.serve() as url:
        assert httpx.get(f"{url}/acme/widgets/issues/1").status_code == 404


def test_a_host_serves_each_repositorys_pages() -> None:
    host = GitHubHost(["acme/api", "acme/web"])
    host["acme/web"].add_issue("Only on web")
    with host.serve() as url:
        answer = httpx.get(f"{url}/acme/web/issues/1")
        assert answer.status_code == 200
        assert "Only on web" in answer.text
        assert httpx.get(f"{url}/acme/api/issues/1").status_code == 404
