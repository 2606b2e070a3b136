"""`Claimer`: the claim protocol with its effects, over the GitHub facade.

The ref decides, the comment tells: every operation first does its compare-and-swap on
the claim ref (`ClaimRefs`) and only then writes the human-visible comment. Reads that
need no race (is a target claimed or backed off?) use the pure state machines over the
comments. Time comes from an injected clock so tests and the emulator agree on `now`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import structlog

from agent_loop_common.claims._atomic import DEFAULT_NAMESPACE, EMPTY_TREE, ClaimRefs
from agent_loop_common.claims._backoff import Backoff, BackoffPolicy, backoff_state
from agent_loop_common.claims._comments import backoff_body, claim_body, release_body
from agent_loop_common.claims._errors import ClaimLost, NotClaimed
from agent_loop_common.claims._marker import DibsMarker, Op, render_dibs
from agent_loop_common.claims._ports import ClaimsGitHub
from agent_loop_common.claims._runid import new_run_id, validate_run_id
from agent_loop_common.claims._state import (
    ClaimState,
    RefDecision,
    claim_state,
    decide_ref,
)
from agent_loop_common.claims._target import Claim, ClaimTarget
from agent_loop_common.github import Unprocessable
from agent_loop_common.records import TargetKind
from agent_loop_common.settings import CLAIM_SKEW, claim_ttl_problem

__all__ = ["Claimer", "ClaimsGitHub", "TargetView"]

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class TargetView:
    """What the comments say about a target: its claim state and any backoff in force."""

    claim: ClaimState
    """Owner at `now` per the markers (the ref still decides races)."""
    backoff: Backoff | None
    """Backoff in force, or `None`."""
    now: datetime
    """The moment this view was computed for."""

    @property
    def eligible(self) -> bool:
        """Tell whether a run may try the target now: unclaimed and not resting."""
        return self.claim.free and (self.backoff is None or not self.backoff.active(self.now))


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Claimer:
    """Claims, renews and releases targets for one run, and records failed attempts.

    Args:
        github: the GitHub facade (anything with the `ClaimsGitHub` methods).
        deployment: the deployment id written into markers (`agent=`).
        role: the run's role (`builder`, `reviewer`, `distiller`).
        run_id: this run's id; a fresh one by default.
        agent_login: the agents' own identity; read from `github.viewer()` when omitted.
        ttl: how long a claim (or an extend) lasts from the moment it is written.
        skew: tolerated clock difference between runs (see `decide_ref`).
        policy: the backoff policy for `record_failure`.
        clock: returns the current aware time; `datetime.now(UTC)` by default.
        namespace: claim refs live under `refs/<namespace>/`.
    """

    def __init__(
        self,
        github: ClaimsGitHub,
        *,
        deployment: str,
        role: str,
        run_id: str | None = None,
        agent_login: str | None = None,
        ttl: timedelta = timedelta(minutes=30),
        skew: timedelta = CLAIM_SKEW,
        policy: BackoffPolicy | None = None,
        clock: Callable[[], datetime] | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> None:
        problem = claim_ttl_problem(ttl, skew)  # the settings check the same rule at load
        if problem is not None:
            raise ValueError(problem)
        self._github = github
        self._refs = ClaimRefs(github, namespace=namespace)
        self.deployment = deployment
        self.role = role
        self.run_id = validate_run_id(run_id) if run_id is not None else new_run_id()
        self._agent_login = agent_login
        self.ttl = ttl
        self.skew = skew
        self.policy = policy or BackoffPolicy()
        self._clock = clock or _utcnow
        self._tree = EMPTY_TREE
        self._held: dict[ClaimTarget, Claim] = {}
        self._trees: dict[ClaimTarget, str] = {}  # tree of each held claim commit, for its children
        self._lost: set[ClaimTarget] = set()  # held claims an extend found taken

    async def agent_login(self) -> str:
        """The agents' GitHub identity (asked once from the facade when not given)."""
        if self._agent_login is None:
            self._agent_login = (await self._github.viewer()).login
        return self._agent_login

    def held(self) -> tuple[Claim, ...]:
        """The claims this run has won and not released yet (a lost one stays until released)."""
        return tuple(self._held.values())

    def _marker(self, op: Op, kind: TargetKind, until: datetime) -> DibsMarker:
        return DibsMarker(op, kind, self.deployment, self.role, self.run_id, until)

    async def _default_tree(self) -> str:
        """The default branch head's tree: parentless claim commits fall back on it where
        the server refuses git's empty tree (read once per run, no tree is built)."""
        repo = await self._github.repository()
        head = await self._github.get_ref(f"heads/{repo.default_branch}")
        if head is None:
            raise LookupError(f"default branch {repo.default_branch!r} has no commit")
        return (await self._github.get_commit(head)).tree_sha

    async def _create(self, target: ClaimTarget, message: str) -> tuple[str | None, str]:
        """Create the claim ref at a parentless claim commit: its sha (`None` when the ref
        exists) and the commit's tree."""
        try:
            return await self._refs.create(target, message, tree_sha=self._tree), self._tree
        except Unprocessable:
            if self._tree != EMPTY_TREE:
                raise
            _log.info("claims.empty_tree_refused")
            self._tree = await self._default_tree()
            return await self._refs.create(target, message, tree_sha=self._tree), self._tree

    async def observe(self, kind: TargetKind, key: int | str) -> TargetView:
        """Read an issue's or PR's comments (all pages): its claim and backoff state.

        Raises:
            ValueError: a repository-level target (no thread; only its ref tells).
        """
        target = ClaimTarget.of(kind, key)
        now = self._clock()
        comments = await self._github.list_issue_comments(target.number)
        issue = await self._github.get_issue(target.number)
        login = await self.agent_login()
        return TargetView(
            claim=claim_state(comments, agent_login=login, now=now, kind=kind),
            backoff=backoff_state(comments, issue_updated_at=issue.updated_at, agent_login=login),
            now=now,
        )

    async def claim(self, kind: TargetKind, key: int | str) -> Claim | None:
        """Try to claim a target; the won `Claim`, or `None` when another run holds it.

        Re-entrant for this run: claiming a target it already holds renews the claim.
        """
        target = ClaimTarget.of(kind, key)
        now = self._clock()
        marker = self._marker("claim", kind, now + self.ttl)
        sha, tree, head, decision = None, self._tree, None, RefDecision.CREATE
        if target not in self._held:
            # Most targets have no claim ref (a live release deletes it), so the create
            # comes first and the ref is read only when it exists: no read before a
            # claim, and an unreferenced commit object left behind when the ref is there.
            sha, tree = await self._create(target, self._claim_message(target, marker))
        if sha is None:
            head = await self._refs.read(target)
            now = self._clock()
            decision = decide_ref(
                head.marker if head else None,
                exists=head is not None,
                run=self.run_id,
                now=now,
                skew=self.skew,
            )
        log = _log.bind(target=str(target), run=self.run_id, decision=decision.value)
        if decision is RefDecision.HELD:
            log.info(
                "claims.held_by_other", holder=head.marker.run if head and head.marker else None
            )
            return None
        if sha is None:
            marker = self._marker("claim", kind, now + self.ttl)
            message = self._claim_message(target, marker)
            if head is None:  # deleted since the create found it: one more try
                sha, tree = await self._create(target, message)
            else:
                tree = head.tree_sha
                sha = await self._refs.advance(target, head.sha, message, tree_sha=tree)
        if sha is None:
            log.info("claims.race_lost")
            return None
        previous = self._held.get(target) if decision is RefDecision.REENTER else None
        claim = Claim(
            target=target,
            run=self.run_id,
            role=self.role,
            agent=self.deployment,
            claimed_at=previous.claimed_at if previous else now,
            until=marker.until,
            head=sha,
            comment_id=previous.comment_id if previous else None,
        )
        self._held[target] = claim
        self._trees[target] = tree
        self._lost.discard(target)
        log.info("claims.won", until=marker.until.isoformat())
        if not target.has_thread:
            return claim
        try:
            claim = await self._announce(claim, marker)
        except BaseException:
            await self._release_quietly(claim, "could not post the claim comment")
            raise
        self._held[target] = claim
        return claim

    def _claim_message(self, target: ClaimTarget, marker: DibsMarker) -> str:
        return f"claim {target} for run {self.run_id}\n\n{render_dibs(marker)}"

    async def _announce(self, claim: Claim, marker: DibsMarker) -> Claim:
        body = claim_body(marker)
        if claim.comment_id is None:
            comment = await self._github.create_issue_comment(claim.target.number, body)
        else:
            comment = await self._github.update_issue_comment(claim.comment_id, body)
        return dataclasses.replace(claim, comment_id=comment.id)

    async def extend(self, claim: Claim) -> Claim:
        """Renew a held claim for another `ttl` from now (heartbeat for long runs).

        Raises:
            ClaimLost: another run took the target over; stop writing to it.
        """
        current = self._held.get(claim.target)
        tree = self._trees.get(claim.target)
        if current is None or tree is None:
            raise ClaimLost(
                f"{claim.target}: run {self.run_id} does not hold it (released or lost)"
            )
        marker = self._marker("extend", claim.target.kind, self._clock() + self.ttl)
        message = f"extend {claim.target} for run {self.run_id}\n\n{render_dibs(marker)}"
        sha = await self._refs.advance(claim.target, current.head, message, tree_sha=tree)
        if sha is None:  # stays in `held()` so that `release` records the loss on the comment
            self._lost.add(claim.target)
            raise ClaimLost(f"{claim.target}: the claim ref moved, run {self.run_id} lost it")
        renewed = dataclasses.replace(current, until=marker.until, head=sha)
        self._held[claim.target] = renewed
        if renewed.comment_id is not None:
            shown = self._marker("claim", claim.target.kind, marker.until)
            await self._github.update_issue_comment(renewed.comment_id, claim_body(shown))
        return renewed

    @property
    def heartbeat(self) -> timedelta:
        """How often a long run renews its claims: a third of `ttl`."""
        return self.ttl / 3

    async def renew(self, claim: Claim) -> Claim:
        """Make sure a held claim outlasts the writes about to happen (call right before).

        Extends the claim unless it was written (claimed or extended) less than a
        `heartbeat` ago. Such a claim has two thirds of its `ttl` left, far more than a
        few writes take, and no other run can have taken it over (a takeover needs it
        expired), so the extend would cost three writes (a commit, the ref update, the
        comment edit) and prove nothing. A short run thus never extends. It reads the
        ref instead (one request): a person may have released the claim by hand
        (`agent-loop claims release --force`), and then the run must write nothing.

        Raises:
            ClaimLost: the run does not hold the target, the extend found it taken, or
                its ref no longer points at this run's claim (released by hand).
        """
        current = self._held.get(claim.target)
        if current is None:
            raise ClaimLost(f"{claim.target}: run {self.run_id} does not hold it")
        if self._fresh(current, self._clock()):
            if await self._refs.sha(claim.target) != current.head:
                self._lost.add(claim.target)  # `release` then leaves the ref alone
                raise ClaimLost(
                    f"{claim.target}: its claim was released by someone else (the claim "
                    f"ref no longer points at run {self.run_id}'s claim)"
                )
            return current
        return await self.extend(current)

    def _fresh(self, claim: Claim, now: datetime) -> bool:
        """Whether `claim` was written (claimed or extended) less than a `heartbeat` ago."""
        return claim.until - now > self.ttl - self.heartbeat

    async def release(
        self, claim: Claim, note: str = "done", *, ok: bool = True, withdraw: bool = False
    ) -> bool:
        """Release a claim; `False` when it had already been lost to another run.

        While the claim is live (by the skew margin) the ref is deleted: no other run may
        move a live claim, so the delete cannot hit someone else's claim. A claim written
        less than a `heartbeat` ago is deleted without reading the ref first (one request
        saved, as `renew` saves its extend); an older one is read first and deleted only
        when it still points at this run's commit. After expiry the ref is fast-forwarded
        to a release commit instead and left for the next claimer.
        Releasing twice is a no-op that returns `False`.

        Args:
            claim: The claim to release.
            note: What came of the run (public: keep secrets and raw errors out).
            ok: Whether the run succeeded; only then does the comment carry a tick.
            withdraw: Delete the claim comment instead of recording the release in it,
                when the live claim's ref was deleted: a run stopped by the operator's
                fault (credentials, permissions, an outage) leaves no trace on the thread.
        """
        current = self._held.pop(claim.target, None)
        tree = self._trees.pop(claim.target, None)
        if current is None or tree is None:
            return False
        now = self._clock()
        live = now + self.skew < current.until
        lost = claim.target in self._lost
        self._lost.discard(claim.target)
        gone = False  # the ref was deleted under the run: someone released it by hand
        if live and not lost and self._fresh(current, now):
            # Written less than a heartbeat ago: no run can have taken it over (a
            # takeover needs it expired), so the ref is ours without a read, as in `renew`.
            kept = await self._refs.delete(claim.target)
            gone = not kept
        elif live:
            sha = await self._refs.sha(claim.target)
            kept, gone = sha == current.head, sha is None
            if kept:
                await self._refs.delete(claim.target)
        else:
            release = self._marker("release", claim.target.kind, now)
            message = f"release {claim.target} by run {self.run_id}\n\n{render_dibs(release)}"
            advanced = await self._refs.advance(claim.target, current.head, message, tree_sha=tree)
            kept = advanced is not None
        if gone:
            # Released by hand (`agent-loop claims release`, which marked the comment
            # released, naming who): that comment stands as it is.
            _log.warning(
                "claims.released_by_someone_else", target=str(claim.target), run=self.run_id
            )
            return False
        if not kept:
            _log.warning("claims.lost_before_release", target=str(claim.target), run=self.run_id)
            note = f"{note} (the claim had already expired and passed to another run)"
        if current.comment_id is not None:
            if withdraw and live and kept:
                await self._github.delete_issue_comment(current.comment_id)
            else:
                shown = self._marker("claim", claim.target.kind, current.until)
                released = self._marker("release", claim.target.kind, now)
                body = release_body(shown, released, note, ok=ok)
                await self._github.update_issue_comment(current.comment_id, body)
        _log.info("claims.released", target=str(claim.target), run=self.run_id, kept=kept)
        return kept

    async def _release_quietly(self, claim: Claim, note: str, *, ok: bool = True) -> None:
        """Release on an exit path: log failures instead of masking the original outcome."""
        try:
            await self.release(claim, note, ok=ok)
        except Exception as exc:
            _log.warning("claims.release_failed", target=str(claim.target), error=repr(exc))

    @asynccontextmanager
    async def hold(
        self, kind: TargetKind, key: int | str, *, note: str = "done"
    ) -> AsyncGenerator[Claim, None]:
        """Hold a target for the body of an `async with`; released on every exit path.

        The body may release early with its own note (e.g. `"skipped: ..."`); otherwise
        a normal exit releases with `note` and an exception (or cancellation) releases
        with the error's type name (never its message: the comment is public) before
        propagating.

        Raises:
            NotClaimed: another run holds the target (nothing was written).
        """
        claim = await self.claim(kind, key)
        if claim is None:
            raise NotClaimed(f"{ClaimTarget.of(kind, key)} is held by another run")
        try:
            yield claim
        except BaseException as exc:
            if claim.target in self._held:
                # Only the type goes into the public comment: messages may carry paths,
                # model output or URLs. The full error is in the run's logs and record.
                _log.warning("claims.hold_exit_on_error", target=str(claim.target), error=repr(exc))
                await self._release_quietly(claim, f"stopped by {type(exc).__name__}", ok=False)
            raise
        if claim.target in self._held:
            await self._release_quietly(claim, note)

    async def record_failure(self, target: ClaimTarget, reason: str) -> Backoff:
        """Record a failed attempt on an issue or PR and return the backoff now in force.

        `reason` is posted publicly on the target (defused and shortened); keep secrets
        and raw model output out of it.

        Raises:
            ValueError: repository-level targets have no thread to record it on.
        """
        if not target.has_thread:
            raise ValueError(f"{target} has no comment thread to record a backoff on")
        comments = await self._github.list_issue_comments(target.number)
        issue = await self._github.get_issue(target.number)
        login = await self.agent_login()
        current = backoff_state(comments, issue_updated_at=issue.updated_at, agent_login=login)
        marker = self.policy.next(current, now=self._clock(), run=self.run_id)
        body = backoff_body(marker, role=self.role, reason=reason)
        comment = await self._github.create_issue_comment(target.number, body)
        _log.info("claims.backoff", target=str(target), attempts=marker.attempts)
        return Backoff(marker.attempts, marker.until, marker.run, comment.created_at)
