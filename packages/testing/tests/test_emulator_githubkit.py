"""The emulator driven by a real githubkit client (in process, over `transport()`).

These are the flows the agents depend on: building commits through the git data API,
compare-and-swap on refs (fast-forward only unless forced), exactly one winner when ten
runs race to create the same claim ref, pagination, free 304 polls, and PR rules.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from githubkit import GitHub, TokenAuthStrategy
from githubkit.exception import GitHubException, RequestFailed
from githubkit.retry import RetryOption

from agent_loop_testing import GitHubEmulator


def no_retry(exc: GitHubException, count: int) -> RetryOption:
    return RetryOption(False)


@pytest.fixture
def emulator() -> GitHubEmulator:
    em = GitHubEmulator()
    em.seed_files({"README.md": "hello\n", "src/app.py": "print('hi')\n"})
    return em


@pytest.fixture
async def gh(emulator: GitHubEmulator) -> AsyncIterator[GitHub[TokenAuthStrategy]]:
    client = GitHub(
        TokenAuthStrategy(emulator.bot_token),
        base_url="http://emulator",
        async_transport=emulator.transport(),
        auto_retry=no_retry,
        timeout=5,
    )
    async with client:
        yield client


async def _commit(gh: GitHub[TokenAuthStrategy], parent: str, path: str, text: str) -> str:
    """blob -> tree (base_tree = parent's tree) -> commit, through the git data API."""
    git = gh.rest.git
    parent_commit = (await git.async_get_commit("acme", "widgets", parent)).parsed_data
    blob = (
        await git.async_create_blob("acme", "widgets", content=text, encoding="utf-8")
    ).parsed_data
    tree = (
        await git.async_create_tree(
            "acme",
            "widgets",
            base_tree=parent_commit.tree.sha,
            tree=[{"path": path, "mode": "100644", "type": "blob", "sha": blob.sha}],
        )
    ).parsed_data
    commit = await git.async_create_commit(
        "acme", "widgets", message=f"edit {path}", tree=tree.sha, parents=[parent]
    )
    return commit.parsed_data.sha


async def test_build_commit_and_move_refs(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    main = emulator.ref_sha("heads/main")
    assert main is not None
    first = await _commit(gh, main, "docs/a.md", "a\n")
    created = await gh.rest.git.async_create_ref(
        "acme", "widgets", ref="refs/heads/agent/1", sha=first
    )
    assert created.status_code == 201
    assert created.parsed_data.object_.sha == first
    second = await _commit(gh, first, "docs/b.md", "b\n")
    # Fast-forward: accepted without force.
    await gh.rest.git.async_update_ref("acme", "widgets", "heads/agent/1", sha=second, force=False)
    assert emulator.file_at("agent/1", "docs/a.md") == b"a\n"
    assert emulator.file_at("agent/1", "docs/b.md") == b"b\n"
    assert emulator.file_at("agent/1", "README.md") == b"hello\n"
    # Rewind (not a fast-forward): 422 unless forced.
    with pytest.raises(RequestFailed) as info:
        await gh.rest.git.async_update_ref(
            "acme", "widgets", "heads/agent/1", sha=first, force=False
        )
    assert info.value.response.status_code == 422
    assert info.value.response.json()["message"] == "Update is not a fast forward"
    await gh.rest.git.async_update_ref("acme", "widgets", "heads/agent/1", sha=first, force=True)
    assert emulator.ref_sha("heads/agent/1") == first
    # Deleting a missing ref is 422 "Reference does not exist" on GitHub, not 404.
    await gh.rest.git.async_delete_ref("acme", "widgets", "heads/agent/1")
    with pytest.raises(RequestFailed) as gone:
        await gh.rest.git.async_delete_ref("acme", "widgets", "heads/agent/1")
    assert (gone.value.response.status_code, gone.value.response.json()["message"]) == (
        422,
        "Reference does not exist",
    )
    with pytest.raises(RequestFailed) as missing:
        await gh.rest.git.async_get_ref("acme", "widgets", "heads/agent/1")
    assert missing.value.response.status_code == 404


async def test_tree_deletes_need_an_existing_path(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    base = emulator.log("main")[0].tree
    entry = {"path": "src/app.py", "mode": "100644", "type": "blob", "sha": None}
    tree = (
        await gh.rest.git.async_create_tree("acme", "widgets", base_tree=base, tree=[entry])
    ).parsed_data
    assert [t.path for t in tree.tree] == ["README.md"]
    with pytest.raises(RequestFailed) as info:
        await gh.rest.git.async_create_tree(
            "acme", "widgets", base_tree=base, tree=[{**entry, "path": "nope.txt"}]
        )
    assert info.value.response.status_code == 422
    with pytest.raises(RequestFailed) as neither:
        await gh.rest.git.async_create_tree(
            "acme",
            "widgets",
            base_tree=base,
            tree=[{"path": "x", "mode": "100644", "type": "blob"}],
        )
    assert neither.value.response.json()["message"].startswith(
        "Must supply either tree.sha or tree.content"
    )


async def test_ten_racing_claims_have_one_winner(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    main = emulator.ref_sha("heads/main")
    assert main is not None

    async def claim() -> tuple[int, str]:
        try:
            response = await gh.rest.git.async_create_ref(
                "acme", "widgets", ref="refs/agent-loop/claims/issue-7", sha=main
            )
        except RequestFailed as exc:
            return exc.response.status_code, exc.response.json()["message"]
        return response.status_code, "created"

    statuses = await asyncio.gather(*(claim() for _ in range(10)))
    assert sorted(statuses) == [(201, "created")] + [(422, "Reference already exists")] * 9
    assert emulator.refs("refs/agent-loop/") == {"refs/agent-loop/claims/issue-7": main}


async def test_invalid_ref_names_and_empty_repository() -> None:
    em = GitHubEmulator()
    client = GitHub(
        TokenAuthStrategy(em.bot_token),
        base_url="http://emulator",
        async_transport=em.transport(),
        auto_retry=no_retry,
    )
    with pytest.raises(RequestFailed) as empty:
        await client.rest.git.async_get_ref("acme", "widgets", "heads/main")
    assert (empty.value.response.status_code, empty.value.response.json()["message"]) == (
        409,
        "Git Repository is empty.",
    )
    sha = em.seed_files({"a": "a"})
    for bad in ("heads/x", "refs/x", "refs/heads/a..b", "refs/heads/x.lock"):
        with pytest.raises(RequestFailed) as info:
            await client.rest.git.async_create_ref("acme", "widgets", ref=bad, sha=sha)
        assert info.value.response.status_code == 422


async def test_pagination_over_four_pages(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    for i in range(7):
        emulator.add_issue(f"issue {i}")
    emulator.clear_requests()
    titles = [
        issue.title
        async for issue in gh.rest.paginate(
            gh.rest.issues.async_list_for_repo, owner="acme", repo="widgets", per_page=2
        )
    ]
    assert titles == [f"issue {i}" for i in reversed(range(7))]
    assert [r.status for r in emulator.requests] == [200] * 4
    last = await gh.rest.issues.async_list_for_repo("acme", "widgets", per_page=2, page=4)
    links = last.headers["link"]
    assert '?per_page=2&page=3>; rel="prev"' in links
    assert 'rel="first"' in links
    assert 'rel="next"' not in links
    assert links.startswith("<http://emulator/repos/acme/widgets/issues?")
    capped = await gh.rest.issues.async_list_for_repo("acme", "widgets", per_page=500)
    assert len(capped.parsed_data) == 7


async def test_unchanged_poll_is_a_free_304(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    number = emulator.add_issue("watch me")
    first = await gh.rest.issues.async_list_comments("acme", "widgets", number)
    remaining = int(first.headers["x-ratelimit-remaining"])
    # githubkit's HTTP cache revalidates with If-None-Match; the emulator answers 304.
    again = await gh.rest.issues.async_list_comments("acme", "widgets", number)
    assert again.parsed_data == []
    assert emulator.requests[-1].status == 304
    assert emulator.rate_limit_remaining(emulator.bot) == remaining
    emulator.add_comment(number, "news", author="acme")
    changed = await gh.rest.issues.async_list_comments("acme", "widgets", number)
    assert [c.body for c in changed.parsed_data] == ["news"]
    assert emulator.requests[-1].status == 200
    assert emulator.rate_limit_remaining(emulator.bot) == remaining - 1


async def test_issue_filters_and_prs_in_issue_list(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    one = emulator.add_issue("one", labels=["agent", "bug"])
    emulator.add_issue("two", labels=["agent"])
    emulator.push("feature", {"x.txt": "x\n"}, author="acme", message="x")
    pr = emulator.open_pull("feature", title="PR")
    emulator.close_issue(one)
    listed = (await gh.rest.issues.async_list_for_repo("acme", "widgets", state="all")).json()
    assert [(i["number"], "pull_request" in i) for i in listed] == [
        (pr, True),
        (2, False),
        (one, False),
    ]
    agent_open = (
        await gh.rest.issues.async_list_for_repo("acme", "widgets", labels="agent")
    ).parsed_data
    assert [i.title for i in agent_open] == ["two"]
    both = (
        await gh.rest.issues.async_list_for_repo("acme", "widgets", state="all", labels="agent,bug")
    ).parsed_data
    assert [i.title for i in both] == ["one"]
    since = emulator.issue(one).updated_at
    recent = (
        await gh.rest.issues.async_list_for_repo("acme", "widgets", state="all", since=since)
    ).parsed_data
    assert [i.number for i in recent] == [one]
    events = await gh.rest.issues.async_list_events_for_timeline("acme", "widgets", one)
    labeled = [e for e in events.json() if e["event"] == "labeled"]
    assert [(e["label"]["name"], e["actor"]["login"]) for e in labeled] == [
        ("agent", "acme"),
        ("bug", "acme"),
    ]


async def test_pull_request_rules(emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]) -> None:
    pulls = gh.rest.pulls
    with pytest.raises(RequestFailed) as nothing:
        await pulls.async_create("acme", "widgets", title="t", head="main", base="main")
    assert (
        nothing.value.response.json()["errors"][0]["message"] == "No commits between main and main"
    )
    emulator.push("agent/7", {"src/app.py": "print('hello')\n"}, author="acme", message="fix")
    created = (
        await pulls.async_create(
            "acme", "widgets", title="Fix", head="agent/7", base="main", body="b"
        )
    ).parsed_data
    assert (created.user.login, created.commits, created.head.ref) == (emulator.bot, 1, "agent/7")
    with pytest.raises(RequestFailed) as dup:
        await pulls.async_create("acme", "widgets", title="again", head="acme:agent/7", base="main")
    assert (
        dup.value.response.json()["errors"][0]["message"]
        == "A pull request already exists for acme:agent/7."
    )
    by_head = (await pulls.async_list("acme", "widgets", head="acme:agent/7")).parsed_data
    assert [p.number for p in by_head] == [created.number]
    assert (await pulls.async_list("acme", "widgets", head="acme:other")).parsed_data == []
    # A bare branch name is not a head filter on GitHub: everything comes back.
    assert len((await pulls.async_list("acme", "widgets", head="other")).parsed_data) == 1
    diff = await pulls.async_get(
        "acme", "widgets", created.number, headers={"Accept": "application/vnd.github.diff"}
    )
    assert diff.text.startswith("diff --git a/src/app.py b/src/app.py\n")
    assert "+print('hello')" in diff.text
    files = (await pulls.async_list_files("acme", "widgets", created.number)).parsed_data
    assert [(f.filename, f.status, f.additions, f.deletions) for f in files] == [
        ("src/app.py", "modified", 1, 1)
    ]
    # The head follows pushes; a merge with a stale sha is refused.
    newer = emulator.push("agent/7", {"NOTES.md": "n\n"}, author="acme", message="more")
    assert (await pulls.async_get("acme", "widgets", created.number)).parsed_data.head.sha == newer
    with pytest.raises(RequestFailed) as stale:
        await pulls.async_merge("acme", "widgets", created.number, sha=created.head.sha)
    assert stale.value.response.status_code == 409
    merged = (await pulls.async_merge("acme", "widgets", created.number, sha=newer)).parsed_data
    assert merged.merged
    assert emulator.file_at("main", "NOTES.md") == b"n\n"
    assert emulator.log("main")[0].parents == (emulator.log("main")[1].sha, newer)
    with pytest.raises(RequestFailed) as closed:
        await pulls.async_merge("acme", "widgets", created.number)
    assert closed.value.response.status_code == 405


async def test_reviews_replies_and_checks(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    emulator.add_user("rita", permission="write")
    head = emulator.push("agent/3", {"src/app.py": "print('x')\n"}, author="acme", message="x")
    number = (
        await gh.rest.pulls.async_create("acme", "widgets", title="x", head="agent/3", base="main")
    ).parsed_data.number
    emulator.add_review(
        number,
        author="rita",
        state="CHANGES_REQUESTED",
        body="no",
        comments=[("src/app.py", 1, "why x?")],
    )
    with pytest.raises(RequestFailed) as own:
        await gh.rest.pulls.async_create_review("acme", "widgets", number, event="APPROVE")
    assert own.value.response.status_code == 422
    reviews = (await gh.rest.pulls.async_list_reviews("acme", "widgets", number)).parsed_data
    assert [(r.user.login, r.state, r.commit_id) for r in reviews] == [
        ("rita", "CHANGES_REQUESTED", head)
    ]
    (comment,) = (
        await gh.rest.pulls.async_list_review_comments("acme", "widgets", number)
    ).parsed_data
    assert (comment.path, comment.line, comment.diff_hunk) == (
        "src/app.py",
        1,
        "@@ -1 +1 @@\n-print('hi')\n+print('x')",
    )
    reply = await gh.rest.pulls.async_create_reply_for_review_comment(
        "acme", "widgets", number, comment.id, body="fixed"
    )
    assert reply.status_code == 201
    assert reply.parsed_data.in_reply_to_id == comment.id
    emulator.set_check_run(
        head, "tests", conclusion="failure", summary="2 failed", text="assert 1 == 2"
    )
    emulator.set_check_run(head, "tests", conclusion="success", summary="all passed")
    runs = (await gh.rest.checks.async_list_for_ref("acme", "widgets", head)).parsed_data
    assert [(r.name, r.conclusion, r.output.summary) for r in runs.check_runs] == [
        ("tests", "success", "all passed")
    ]
    every = (
        await gh.rest.checks.async_list_for_ref("acme", "widgets", "agent/3", filter_="all")
    ).parsed_data
    assert every.total_count == 2
    emulator.set_status(head, "lint", "failure", "E501")
    emulator.set_status(head, "lint", "success")
    emulator.set_status(head, "docs", "pending")
    combined = (
        await gh.rest.repos.async_get_combined_status_for_ref("acme", "widgets", head)
    ).parsed_data
    assert (combined.state, sorted((s.context, s.state) for s in combined.statuses)) == (
        "pending",
        [("docs", "pending"), ("lint", "success")],
    )


async def test_permissions_and_auth(
    emulator: GitHubEmulator, gh: GitHub[TokenAuthStrategy]
) -> None:
    reader = emulator.add_user("rob", permission="read")
    perm = (
        await gh.rest.repos.async_get_collaborator_permission_level("acme", "widgets", "rob")
    ).parsed_data
    assert (perm.permission, perm.role_name) == ("read", "read")
    me = (await gh.rest.users.async_get_authenticated()).parsed_data
    assert (me.login, me.type) == ("agent-loop[bot]", "Bot")
    as_rob = GitHub(
        TokenAuthStrategy(reader),
        base_url="http://emulator",
        async_transport=emulator.transport(),
        auto_retry=no_retry,
    )
    with pytest.raises(RequestFailed) as forbidden:
        await as_rob.rest.git.async_create_blob("acme", "widgets", content="x")
    assert forbidden.value.response.status_code == 403
    stranger = GitHub(
        TokenAuthStrategy("nope"),
        base_url="http://emulator",
        async_transport=emulator.transport(),
        auto_retry=no_retry,
    )
    with pytest.raises(RequestFailed) as bad:
        await stranger.rest.repos.async_get("acme", "widgets")
    assert (bad.value.response.status_code, bad.value.response.json()["message"]) == (
        401,
        "Bad credentials",
    )


async def test_ghes_prefix_and_deterministic_clock(emulator: GitHubEmulator) -> None:
    client = GitHub(
        TokenAuthStrategy(emulator.owner_token),
        base_url="http://emulator/api/v3/",
        async_transport=emulator.transport(),
    )
    issue = (await client.rest.issues.async_create("acme", "widgets", title="t")).parsed_data
    assert issue.url == f"http://emulator/api/v3/repos/acme/widgets/issues/{issue.number}"
    assert issue.html_url == f"http://emulator/acme/widgets/issues/{issue.number}"
    # One second per write from 2026-01-01T00:00:00Z: seed commit, then this issue.
    assert issue.created_at.isoformat() == "2026-01-01T00:00:02+00:00"
    assert emulator.requests[-1].path == "/repos/acme/widgets/issues"
    comment = emulator.add_comment(issue.number, "c", author="acme")
    assert emulator.comments(issue.number)[0].created_at - issue.created_at == timedelta(seconds=1)
    assert comment == emulator.comments(issue.number)[0].id
