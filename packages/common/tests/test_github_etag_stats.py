"""ETagCache bounds and persistence, route templates, and RequestStats summaries."""

from __future__ import annotations

import json

import httpx
import pytest

from agent_loop_common.github import NO_RESPONSE, ETagCache, GitHub, RequestStats, TokenAuth
from agent_loop_common.github._routes import POLLED_READS, ROUTES, Router
from agent_loop_testing import instant_retry


def test_cache_evicts_least_recently_used_beyond_max_entries() -> None:
    cache = ETagCache(max_entries=2)
    cache.put("u1", '"a"', "[1]")
    cache.put("u2", '"b"', "[2]")
    assert cache.get("u1") == ('"a"', "[1]", None)  # u1 is now the most recent
    cache.put("u3", '"c"', "[3]")
    assert cache.get("u2") is None
    assert len(cache) == 2
    assert cache.get("u1") is not None
    assert cache.get("u3") is not None


def test_cache_bounds_total_size_and_skips_oversized_bodies() -> None:
    cache = ETagCache(max_bytes=100)
    cache.put("big", '"x"', "x" * 200)
    assert cache.get("big") is None
    cache.put("a", '"a"', "a" * 40)
    cache.put("b", '"b"', "b" * 40)
    cache.put("c", '"c"', "c" * 40)
    assert cache.get("a") is None  # evicted to stay under 100 characters
    assert [cache.get(u) is not None for u in ("b", "c")] == [True, True]


def test_changed_tracks_real_changes_only() -> None:
    cache = ETagCache()
    assert not cache.changed
    cache.put("u", '"a"', "[]", '<https://x/?page=2>; rel="next"')
    assert cache.changed
    cache.mark_saved()
    cache.put("u", '"a"', "[]", '<https://x/?page=2>; rel="next"')  # same answer again
    cache.get("u")
    assert not cache.changed
    cache.put("u", '"b"', "[1]")
    assert cache.changed


def test_dump_load_round_trip_through_json() -> None:
    cache = ETagCache()
    cache.put("u1", '"a"', '[{"id": 1}]', '<https://x/?page=2>; rel="next"')
    cache.put("u2", 'W/"b"', "[]")
    data = json.loads(json.dumps(cache.dump()))
    loaded = ETagCache.load(data)
    assert not loaded.changed
    assert loaded.get("u1") == ('"a"', '[{"id": 1}]', '<https://x/?page=2>; rel="next"')
    assert loaded.get("u2") == ('W/"b"', "[]", None)
    assert loaded.dump()["entries"][0][0] == "u1"  # recency order is kept


@pytest.mark.parametrize(
    "data",
    [None, [], {"format": 99, "entries": []}, {"format": 1, "entries": "x"}, "junk"],
)
def test_unreadable_dumps_give_an_empty_cache(data: object) -> None:
    cache = ETagCache.load(data)
    assert len(cache) == 0
    assert not cache.changed


def test_load_skips_malformed_entries() -> None:
    data = {"format": 1, "entries": [["u", '"a"', "[]", None], ["bad"], [1, 2, 3, 4]]}
    assert len(ETagCache.load(data)) == 1


@pytest.mark.parametrize(
    ("url", "template"),
    [
        ("https://api.github.com/repos/a/b", "/repos/{owner}/{repo}"),
        ("https://api.github.com/repos/a/b/issues?page=2", "/repos/{owner}/{repo}/issues"),
        (
            "https://api.github.com/repos/a/b/issues/12/comments",
            "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        ),
        (
            "https://api.github.com/repos/a/b/issues/comments/99",
            "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        ),
        (
            "https://api.github.com/repos/a/b/issues/3/labels/needs%2Fhelp",
            "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
        ),
        (
            "https://api.github.com/repos/a/b/git/refs/heads/agent/issue-7",
            "/repos/{owner}/{repo}/git/refs/{ref}",
        ),
        (
            "https://api.github.com/repos/a/b/commits/feature/x/check-runs",
            "/repos/{owner}/{repo}/commits/{ref}/check-runs",
        ),
        (
            "https://api.github.com/repos/a/b/contents/src/a%20b.py?ref=main",
            "/repos/{owner}/{repo}/contents/{path}",
        ),
        ("https://api.github.com/repos/a/b/hooks/12345", "/repos/a/b/hooks/{n}"),
        ("https://codeload.github.com/a/b/legacy.tar.gz/main", "//codeload.github.com/..."),
    ],
)
def test_route_templates(url: str, template: str) -> None:
    assert Router(httpx.URL("https://api.github.com/")).template(httpx.URL(url)) == template


def test_route_templates_strip_the_ghes_prefix() -> None:
    router = Router(httpx.URL("https://ghe.example/api/v3/"))
    url = httpx.URL("https://ghe.example/api/v3/repos/a/b/pulls/4/files")
    assert router.template(url) == "/repos/{owner}/{repo}/pulls/{pull_number}/files"


def test_which_posts_may_be_repeated() -> None:
    router = Router(httpx.URL("https://api.github.com/"))
    assert router.is_idempotent("POST", "/repos/{owner}/{repo}/git/blobs")
    assert not router.is_idempotent("POST", "/repos/{owner}/{repo}/issues")
    assert not router.is_idempotent("POST", "/repos/{owner}/{repo}/git/refs")
    assert router.is_idempotent("PATCH", "/repos/{owner}/{repo}/git/refs/{ref}")


def test_stats_summaries() -> None:
    stats = RequestStats()
    stats.record("get", "/repos/{owner}/{repo}/issues", 200)
    stats.record("GET", "/repos/{owner}/{repo}/issues", 304)
    stats.record("GET", "/repos/{owner}/{repo}/issues", 304)
    stats.record("POST", "/repos/{owner}/{repo}/issues", NO_RESPONSE)
    assert (stats.total, stats.not_modified, stats.billable) == (4, 2, 2)
    assert stats.by_route() == {
        "GET /repos/{owner}/{repo}/issues": {200: 1, 304: 2},
        "POST /repos/{owner}/{repo}/issues": {0: 1},
    }
    assert json.loads(json.dumps(stats.as_dict())) == {
        "total": 4,
        "not_modified": 2,
        "routes": {
            "GET /repos/{owner}/{repo}/issues": {"200": 1, "304": 2},
            "POST /repos/{owner}/{repo}/issues": {"0": 1},
        },
    }


async def test_a_304_on_page_one_still_walks_page_two() -> None:
    """The cached Link header keeps pagination going when the first page is unchanged."""
    base = "https://api.github.com/repos/acme/widgets/issues/1/events"
    pages = {
        "1": [{"id": 1, "event": "closed", "actor": None, "created_at": "2026-01-01T00:00:00Z"}],
        "2": [{"id": 2, "event": "reopened", "actor": None, "created_at": "2026-01-02T00:00:00Z"}],
    }
    seen: list[tuple[str, int]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        page = request.url.params.get("page", "1")
        etag = f'"p{page}"'
        status = 304 if request.headers.get("if-none-match") == etag else 200
        seen.append((page, status))
        headers = {"ETag": etag}
        if page == "1":
            headers["Link"] = f'<{base}?per_page=1&page=2>; rel="next"'
        if status == 304:
            return httpx.Response(304, headers={"ETag": etag})
        return httpx.Response(200, json=pages[page], headers=headers)

    gh = GitHub(
        "acme/widgets",
        auth=TokenAuth("t"),
        transport=httpx.MockTransport(handle),
        retry=instant_retry(),
        per_page=1,
    )
    first = await gh.list_issue_events(1)
    second = await gh.list_issue_events(1)
    assert [e.event for e in first] == [e.event for e in second] == ["closed", "reopened"]
    assert seen == [("1", 200), ("2", 200), ("1", 304), ("2", 304)]
    assert gh.stats.not_modified == 2


def test_polled_reads_are_templates_the_router_produces() -> None:
    produced = {t.replace("+}", "}") for t in ROUTES}
    assert produced >= POLLED_READS
