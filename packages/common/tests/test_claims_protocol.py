"""The Claimer against the GitHub emulator through the real facade (githubkit over ASGI)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import httpx
import pytest

from agent_loop_common.claims import (
    Claimer,
    ClaimLost,
    ClaimTarget,
    NotClaimed,
    claim_state,
    new_run_id,
    parse_dibs,
)
from agent_loop_common.github import GitHub, GitHubError, GitHubRetryPolicy, TokenAuth
from agent_loop_testing import GitHubEmulator

TTL = timedelta(minutes=10)
SKEW = timedelta(seconds=30)
REF = "refs/agent-loop/claims/issue-{}"


class EmulatorClock:
    """The runs' clock, kept equal to the emulator's (which moves one second per write).

    The emulator has no public clock, so we read it from a write of our own (a comment on
    a dedicated issue), and move it by writing more. Claimers read `now` from here.
    """

    def __init__(self, emu: GitHubEmulator) -> None:
        self.emu = emu
        self.issue = emu.add_issue("clock", author=emu.owner)
        self.now = self.sync()

    def sync(self) -> datetime:
        self.emu.add_comment(self.issue, "tick", author=self.emu.owner)
        self.now = self.emu.comments(self.issue)[-1].created_at
        return self.now

    def advance(self, delta: timedelta) -> None:
        for _ in range(int(delta.total_seconds()) - 1):
            self.emu.add_comment(self.issue, "tick", author=self.emu.owner)
        self.sync()

    def __call__(self) -> datetime:
        return self.now


class Repo:
    """One emulated repository with an issue, and a factory of runs (facade + claimer)."""

    def __init__(self, page_size: int = 100) -> None:
        self.emu = GitHubEmulator()
        self.emu.seed_files({"README.md": "hello\n"})
        self.issue = self.emu.add_issue("Fix the widget", author=self.emu.owner)
        self.clock = EmulatorClock(self.emu)
        self.page_size = page_size
        self.clients: list[GitHub] = []

    def github(self, transport: httpx.AsyncBaseTransport | None = None) -> GitHub:
        client = GitHub(
            self.emu.full_name,
            auth=TokenAuth(self.emu.bot_token),
            transport=transport or self.emu.transport(),
            retry=GitHubRetryPolicy(max_attempts=1),
            per_page=self.page_size,
        )
        self.clients.append(client)
        return client

    def claimer(
        self, run_id: str | None = None, *, role: str = "builder", **kwargs: object
    ) -> Claimer:
        return Claimer(
            self.github(),
            deployment="test",
            role=role,
            run_id=run_id or new_run_id(now=self.clock()),
            ttl=TTL,
            skew=SKEW,
            clock=self.clock,
            **kwargs,  # type: ignore[arg-type]
        )

    async def owner(self, number: int) -> str | None:
        comments = await self.github().list_issue_comments(number)
        state = claim_state(comments, agent_login=self.emu.bot, now=self.clock.sync())
        return state.owner.run if state.owner else None

    def bot_comments(self, number: int) -> list[str]:
        return [c.body for c in self.emu.comments(number) if c.author == self.emu.bot]


@pytest.fixture
async def repo() -> AsyncIterator[Repo]:
    made = Repo()
    yield made
    for client in made.clients:
        await client.aclose()


async def test_claim_creates_the_ref_then_posts_the_comment(repo: Repo) -> None:
    claimer = repo.claimer()
    claim = await claimer.claim("issue", repo.issue)
    assert claim is not None
    assert repo.emu.ref_sha(REF.format(repo.issue)) == claim.head
    assert list(repo.emu.refs("refs/heads/")) == ["refs/heads/main"]  # not a branch
    [body] = repo.bot_comments(repo.issue)
    [marker] = parse_dibs(body)
    assert (marker.op, marker.run, marker.until) == ("claim", claimer.run_id, claim.until)
    assert claim.until == repo.clock() + TTL
    [commit] = repo.emu.log(REF.format(repo.issue))
    assert parse_dibs(commit.message) == [marker]
    assert await repo.owner(repo.issue) == claimer.run_id


async def test_another_run_is_refused_while_held_and_writes_nothing(repo: Repo) -> None:
    first, second = repo.claimer(), repo.claimer()
    claim = await first.claim("issue", repo.issue)
    assert claim is not None
    assert await second.claim("issue", repo.issue) is None
    with pytest.raises(NotClaimed):
        async with second.hold("issue", repo.issue):
            pytest.fail("must not enter")
    assert repo.emu.ref_sha(REF.format(repo.issue)) == claim.head
    assert len(repo.bot_comments(repo.issue)) == 1


async def test_reentrant_claim_renews_in_place(repo: Repo) -> None:
    claimer = repo.claimer()
    first = await claimer.claim("issue", repo.issue)
    repo.clock.advance(timedelta(minutes=2))
    again = await claimer.claim("issue", repo.issue)
    assert first is not None
    assert again is not None
    assert again.comment_id == first.comment_id
    assert again.claimed_at == first.claimed_at
    assert again.until == repo.clock() + TTL > first.until
    assert [c.sha for c in repo.emu.log(REF.format(repo.issue))] == [again.head, first.head]
    assert len(repo.bot_comments(repo.issue)) == 1


async def test_a_restarted_process_of_the_same_run_reenters(repo: Repo) -> None:
    run_id = new_run_id(now=repo.clock())
    first = await repo.claimer(run_id).claim("issue", repo.issue)
    again = await repo.claimer(run_id).claim("issue", repo.issue)
    assert first is not None
    assert again is not None
    assert await repo.owner(repo.issue) == run_id


async def test_extend_moves_until_and_edits_the_comment(repo: Repo) -> None:
    claimer = repo.claimer()
    claim = await claimer.claim("issue", repo.issue)
    assert claim is not None
    repo.clock.advance(timedelta(minutes=8))
    renewed = await claimer.extend(claim)
    assert renewed.until == repo.clock() + TTL
    [body] = repo.bot_comments(repo.issue)
    assert parse_dibs(body)[0].until == renewed.until
    assert parse_dibs(repo.emu.log(REF.format(repo.issue))[0].message)[0].op == "extend"
    repo.clock.advance(timedelta(minutes=5))  # past the first until, within the renewed one
    assert await repo.claimer().claim("issue", repo.issue) is None


async def test_live_release_deletes_the_ref_and_edits_the_comment(repo: Repo) -> None:
    claimer, other = repo.claimer(), repo.claimer()
    claim = await claimer.claim("issue", repo.issue)
    assert claim is not None
    assert await claimer.release(claim, "opened PR #9")
    assert repo.emu.ref_sha(REF.format(repo.issue)) is None
    [body] = repo.bot_comments(repo.issue)
    assert "opened PR #9" in body
    assert [m.op for m in parse_dibs(body)] == ["claim", "release"]
    assert await repo.owner(repo.issue) is None
    assert not await claimer.release(claim, "again")  # idempotent
    assert await other.claim("issue", repo.issue) is not None
    assert await repo.owner(repo.issue) == other.run_id


async def test_release_after_expiry_leaves_a_release_commit_for_the_next_claimer(
    repo: Repo,
) -> None:
    late, next_run = repo.claimer(), repo.claimer()
    claim = await late.claim("issue", repo.issue)
    assert claim is not None
    repo.clock.advance(TTL + SKEW)
    assert await late.release(claim, "finished late")
    head = repo.emu.log(REF.format(repo.issue))[0]
    assert parse_dibs(head.message)[0].op == "release"
    taken = await next_run.claim("issue", repo.issue)
    assert taken is not None
    assert repo.emu.log(REF.format(repo.issue))[1].sha == head.sha  # fast-forwarded over it
    assert await next_run.release(taken, "done")
    assert repo.emu.ref_sha(REF.format(repo.issue)) is None  # live release cleans up


async def test_a_holder_that_overran_loses_to_a_takeover(repo: Repo) -> None:
    slow, fresh = repo.claimer(), repo.claimer()
    claim = await slow.claim("issue", repo.issue)
    assert claim is not None
    repo.clock.advance(TTL)
    assert await fresh.claim("issue", repo.issue) is None  # expired, but within the skew margin
    repo.clock.advance(SKEW)
    taken = await fresh.claim("issue", repo.issue)
    assert taken is not None
    with pytest.raises(ClaimLost):
        await slow.extend(claim)
    assert not await slow.release(claim, "done")
    assert repo.emu.ref_sha(REF.format(repo.issue)) == taken.head  # untouched by the loser
    assert await repo.owner(repo.issue) == fresh.run_id


async def test_hold_releases_on_success(repo: Repo) -> None:
    claimer = repo.claimer()
    async with claimer.hold("issue", repo.issue, note="all good") as claim:
        assert repo.emu.ref_sha(REF.format(repo.issue)) == claim.head
    assert repo.emu.ref_sha(REF.format(repo.issue)) is None
    assert "all good" in repo.bot_comments(repo.issue)[0]
    assert claimer.held() == ()


async def test_hold_with_an_early_release_by_the_body(repo: Repo) -> None:
    claimer = repo.claimer()
    async with claimer.hold("issue", repo.issue) as claim:
        await claimer.release(claim, "skipped: nothing to do")
    [body] = repo.bot_comments(repo.issue)
    assert "skipped: nothing to do" in body
    assert body.count("agent-loop:dibs") == 2


async def test_hold_releases_on_error_and_reraises(repo: Repo) -> None:
    claimer = repo.claimer()
    with pytest.raises(RuntimeError, match="verifier said no"):
        async with claimer.hold("issue", repo.issue):
            raise RuntimeError("verifier said no")
    assert repo.emu.ref_sha(REF.format(repo.issue)) is None
    [body] = repo.bot_comments(repo.issue)
    assert "stopped by RuntimeError" in body
    assert "verifier said no" not in body  # messages stay in logs, not in public comments
    assert await repo.owner(repo.issue) is None


async def test_hold_survives_a_failing_release(repo: Repo) -> None:
    claimer = repo.claimer()
    async with claimer.hold("issue", repo.issue):
        repo.emu.inject_fault("DELETE", r"/git/refs/", status=500, times=5)
    assert repo.emu.ref_sha(REF.format(repo.issue)) is not None  # left to expire
    repo.emu.clear_faults()


async def test_extend_and_release_inside_hold(repo: Repo) -> None:
    claimer = repo.claimer()
    async with claimer.hold("issue", repo.issue) as claim:
        repo.clock.advance(timedelta(minutes=5))
        await claimer.extend(claim)  # the stale `claim` still works: the claimer tracks it
    assert repo.emu.ref_sha(REF.format(repo.issue)) is None


async def test_comments_are_read_across_pages() -> None:
    repo = Repo(page_size=2)
    try:
        winner = repo.claimer()
        for index in range(5):
            repo.emu.add_comment(repo.issue, f"human comment {index}", author=repo.emu.owner)
        forged = "<!-- agent-loop:dibs v1 op=release kind=issue agent=x role=builder run=20260101T000000Z-00000000 until=2026-01-01T00:00:00Z -->"
        repo.emu.add_comment(repo.issue, forged, author=repo.emu.owner)
        assert await winner.claim("issue", repo.issue) is not None
        repo.emu.add_comment(repo.issue, "another one", author=repo.emu.owner)
        repo.emu.clear_requests()
        view = await repo.claimer().observe("issue", repo.issue)
        assert view.claim.owner is not None
        assert view.claim.owner.run == winner.run_id
        assert not view.eligible
        pages = [r for r in repo.emu.requests if r.method == "GET" and r.path.endswith("/comments")]
        assert len(pages) == 4  # 8 comments, 2 per page
    finally:
        for client in repo.clients:
            await client.aclose()


async def test_failures_back_off_until_a_human_comments(repo: Repo) -> None:
    claimer = repo.claimer()
    first = await claimer.record_failure(
        ClaimTarget.of("issue", repo.issue), "tests failed <!-- x -->"
    )
    assert (first.attempts, first.until) == (1, repo.clock() + claimer.policy.delay(1))
    second = await claimer.record_failure(ClaimTarget.of("issue", repo.issue), "tests failed again")
    assert second.attempts == 2
    view = await claimer.observe("issue", repo.issue)
    assert view.backoff is not None
    assert view.backoff.attempts == 2
    assert not view.eligible
    assert "&lt;!-- x" in repo.bot_comments(repo.issue)[0]
    repo.emu.add_comment(repo.issue, "I clarified the spec", author=repo.emu.owner)
    view = await claimer.observe("issue", repo.issue)
    assert view.backoff is None
    assert view.eligible
    third = await claimer.record_failure(ClaimTarget.of("issue", repo.issue), "still failing")
    assert third.attempts == 1


async def test_repository_level_target(repo: Repo) -> None:
    first, second = repo.claimer(role="distiller"), repo.claimer(role="distiller")
    claim = await first.claim("repo", "distiller")
    assert claim is not None
    assert claim.comment_id is None
    assert repo.emu.ref_sha("refs/agent-loop/claims/repo-distiller") == claim.head
    assert await second.claim("repo", "distiller") is None
    with pytest.raises(ValueError, match="no comment thread"):
        await first.record_failure(claim.target, "boom")
    assert await first.release(claim)
    assert await second.claim("repo", "distiller") is not None


async def test_a_foreign_ref_without_marker_is_taken_over(repo: Repo) -> None:
    main = repo.emu.ref_sha("heads/main")
    assert main is not None
    owner_gh = GitHub(
        repo.emu.full_name, auth=TokenAuth(repo.emu.owner_token), transport=repo.emu.transport()
    )
    repo.clients.append(owner_gh)
    await owner_gh.create_ref(REF.format(repo.issue), main)
    claim = await repo.claimer().claim("issue", repo.issue)
    assert claim is not None
    assert repo.emu.log(REF.format(repo.issue))[1].sha == main


async def test_a_failed_claim_comment_rolls_the_claim_back(repo: Repo) -> None:
    repo.emu.inject_fault("POST", rf"/issues/{repo.issue}/comments$", status=500)
    with pytest.raises(GitHubError):
        await repo.claimer().claim("issue", repo.issue)
    assert repo.emu.ref_sha(REF.format(repo.issue)) is None


class LoseFirstAnswer(httpx.AsyncBaseTransport):
    """Lets GitHub apply the first matching request, then drops the answer (a timeout)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, method: str, suffix: str) -> None:
        self.inner, self.method, self.suffix, self.armed = inner, method, suffix, True

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if self.armed and request.method == self.method and request.url.path.endswith(self.suffix):
            self.armed = False
            raise httpx.ReadTimeout("answer lost", request=request)
        return response


async def test_a_create_applied_despite_a_lost_answer_counts_as_won(repo: Repo) -> None:
    transport = LoseFirstAnswer(repo.emu.transport(), "POST", "/git/refs")
    claimer = Claimer(
        repo.github(transport),
        deployment="test",
        role="builder",
        ttl=TTL,
        skew=SKEW,
        clock=repo.clock,
    )
    claim = await claimer.claim("issue", repo.issue)
    assert claim is not None
    assert not transport.armed
    assert repo.emu.ref_sha(REF.format(repo.issue)) == claim.head


async def test_hold_releases_when_the_run_is_cancelled(repo: Repo) -> None:
    import asyncio

    claimer = repo.claimer()
    entered = asyncio.Event()

    async def work() -> None:
        async with claimer.hold("issue", repo.issue):
            entered.set()
            await asyncio.Event().wait()  # a run stuck until the scheduler cancels it

    task = asyncio.create_task(work())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert repo.emu.ref_sha(REF.format(repo.issue)) is None
    assert "stopped by CancelledError" in repo.bot_comments(repo.issue)[0]


async def test_a_server_refusing_the_empty_tree_gets_the_default_branch_tree(
    repo: Repo,
) -> None:
    """Claim commits use git's empty tree; where a server refuses it (422), the claim
    falls back on the default branch head's tree, as claims did before, once per run."""
    repo.emu.inject_fault(
        "POST", r"/git/commits$", status=422, body={"message": "Tree SHA does not exist"}
    )
    claimer = repo.claimer()
    claim = await claimer.claim("issue", repo.issue)
    assert claim is not None
    [commit] = repo.emu.log(claim.head)
    assert commit.tree == repo.emu.log("main")[0].tree
    assert repo.emu.ref_sha(REF.format(repo.issue)) == claim.head


async def test_renew_extends_only_a_claim_older_than_a_heartbeat(repo: Repo) -> None:
    """Right before a write, a claim written less than ttl/3 ago is kept as it is (one
    read: its ref still points at the claim, nobody released it by hand); an older one
    is extended, and a lost one still raises `ClaimLost`."""
    claimer = repo.claimer()
    claim = await claimer.claim("issue", repo.issue)
    assert claim is not None
    start = len(repo.emu.requests)
    assert await claimer.renew(claim) == claim
    assert [(r.method, r.status) for r in repo.emu.requests[start:]] == [("GET", 200)]
    repo.clock.advance(claimer.heartbeat + timedelta(seconds=1))
    renewed = await claimer.renew(claim)
    assert renewed.until > claim.until
    assert repo.emu.ref_sha(REF.format(repo.issue)) == renewed.head
    await claimer.release(renewed)
    with pytest.raises(ClaimLost):
        await claimer.renew(renewed)


async def test_request_costs(repo: Repo) -> None:
    """Requests per operation, so their budget is known (printed with -s)."""
    holder, other = repo.claimer(), repo.claimer()

    def cost(before: int) -> int:
        return len(repo.emu.requests) - before

    start = len(repo.emu.requests)
    claim = await holder.claim("issue", repo.issue)
    first = cost(start)
    start = len(repo.emu.requests)
    assert await other.claim("issue", repo.issue) is None
    refused = cost(start)
    assert claim is not None
    start = len(repo.emu.requests)
    claim = await holder.extend(claim)
    extend = cost(start)
    start = len(repo.emu.requests)
    await holder.release(claim)
    release = cost(start)
    start = len(repo.emu.requests)
    again_claim = await holder.claim("issue", repo.issue)
    again = cost(start)
    assert again_claim is not None
    repo.clock.advance(holder.heartbeat + timedelta(seconds=1))
    start = len(repo.emu.requests)
    assert await holder.release(again_claim)
    older = cost(start)
    print(
        f"claim: first {first}, refused {refused}, extend {extend}, release {release}, "
        f"again {again}, release of an older claim {older}"
    )
    # A claim creates its ref first (a commit on git's empty tree, then the ref) and
    # reads nothing before: 3 with the comment. A refused claim pays for that try (an
    # unreferenced commit, the 422) before it reads the ref and its commit. A release
    # deletes the ref of a claim written less than a heartbeat ago without reading it
    # (2 with the comment edit); an older claim's ref is read first (3).
    assert (first, refused, extend, release, again, older) == (3, 4, 3, 2, 3, 3)
    assert repo.emu.ref_sha(REF.format(repo.issue)) is None


async def test_a_claim_an_extend_found_taken_is_not_deleted_on_release(repo: Repo) -> None:
    """The read-free delete is only for claims no one can have taken: once an extend
    found the ref moved (here: deleted by hand and claimed afresh by another run), the
    release reads the ref and leaves the other run's claim alone."""
    holder, other = repo.claimer(), repo.claimer()
    claim = await holder.claim("issue", repo.issue)
    assert claim is not None
    await repo.github().delete_ref(REF.format(repo.issue))  # a person, by hand
    taken = await other.claim("issue", repo.issue)
    assert taken is not None
    with pytest.raises(ClaimLost):
        await holder.extend(claim)
    assert not await holder.release(claim, "done")
    assert repo.emu.ref_sha(REF.format(repo.issue)) == taken.head
