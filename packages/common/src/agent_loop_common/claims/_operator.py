"""Claims as the operator sees them: the live ones listed, one released by hand.

A run releases its own claims on every exit path, and a stopped run (Ctrl-C, SIGTERM)
too; only a process that died without its cleanup (a second Ctrl-C, `kill -9`, a lost
machine) leaves a claim to run out its TTL. `agent-loop claims list` shows the claims a
repository holds (from the claim refs, the protocol's authority), and
`agent-loop claims release` frees one the way its run would have: the live ref deleted
(an expired one fast-forwarded to a release commit and left for the next claimer, as
the protocol does), and the run's claim comment edited to carry the release marker,
saying who released it. Whether the holder may still be working is the caller's to
judge (`agent-loop` refuses a live claim of another process unless forced).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import structlog

from agent_loop_common.claims._atomic import DEFAULT_NAMESPACE, ClaimRefs
from agent_loop_common.claims._comments import release_note_body
from agent_loop_common.claims._marker import DibsMarker, parse_dibs, render_dibs
from agent_loop_common.claims._ports import ClaimsGitHub
from agent_loop_common.claims._target import ClaimTarget
from agent_loop_common.github import NotFound
from agent_loop_common.records import TargetKind

__all__ = ["ClaimView", "OperatorRelease", "list_claims", "parse_target", "release_claim"]

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class ClaimView:
    """One claim ref as read: the target, its latest marker, and whether it is live."""

    target: ClaimTarget
    """What is claimed."""
    ref: str
    """The claim ref, e.g. `refs/agent-loop/claims/issue-5`."""
    sha: str
    """The commit the ref points at."""
    marker: DibsMarker | None
    """The latest marker in that commit's message (`None`: none readable)."""

    def live(self, now: datetime) -> bool:
        """Whether a run holds the target at `now` (claimed or extended, not expired)."""
        m = self.marker
        return m is not None and m.op != "release" and now < m.until

    def state(self, now: datetime) -> str:
        """`live`, `expired`, `released`, or `unreadable`, for people."""
        m = self.marker
        if m is None:
            return "unreadable"
        if m.op == "release":
            return "released"
        return "live" if now < m.until else "expired"


@dataclass(frozen=True, slots=True)
class OperatorRelease:
    """What `release_claim` did."""

    target: ClaimTarget
    """The target released."""
    holder: DibsMarker | None
    """The claim it released (its run, role, deployment, expiry), if one was found."""
    ref: str
    """What happened to the claim ref: `deleted`, `marked released`, `none` (there was
    no ref) or `moved` (another run took the target meanwhile: left alone)."""
    comment_id: int | None
    """The claim comment that now says who released it (`None`: none was found)."""


_TARGET = re.compile(r"(?:(?P<kind>issue|pr|pull|repo)(?:-|#|\s+#?\s*)|#\s*)?(?P<key>\S+)")
"""A kind and its key (`issue 5`, `issue#5`, `issue-5`, `pr #7`), or a bare `#5` / `5`;
a `-` separates only when it follows the kind, so `issue -3` is no `issue 3`."""


def parse_target(words: Sequence[str]) -> ClaimTarget:
    """`issue 5`, `#5`, `issue#5`, `issue-5`, `pr 7`, `PR #7`, `repo distiller`, ... as a
    target (`#N` alone is an issue: GitHub numbers issues and PRs together, and a
    claim on a PR says `pr`).

    Raises:
        ValueError: The words name no target.
    """
    text = " ".join(" ".join(words).split()).lower()
    found = _TARGET.fullmatch(text)
    kinds = {"issue": TargetKind.ISSUE, "pr": TargetKind.PR, "pull": TargetKind.PR}
    kinds["repo"] = TargetKind.REPO
    if found is None or (found["kind"] is None and not found["key"].isdigit()):
        raise ValueError(
            f"{' '.join(words)!r} names no claim: say `issue 5`, `#5`, `pr 7` or `repo distiller`"
        )
    return ClaimTarget.of(kinds[found["kind"] or "issue"], found["key"])


def _target_of(ref: str, namespace: str) -> ClaimTarget | None:
    name = ref.removeprefix(f"refs/{namespace.strip('/')}/")
    kind, _, key = name.partition("-")
    try:
        return ClaimTarget.of(TargetKind(kind), key)
    except ValueError:
        return None


async def list_claims(
    github: ClaimsGitHub, *, namespace: str = DEFAULT_NAMESPACE
) -> list[ClaimView]:
    """Every claim ref of the repository (live, expired or released), by target."""
    views: list[ClaimView] = []
    for ref, sha in await github.matching_refs(f"{namespace.strip('/')}/"):
        target = _target_of(ref, namespace)
        if target is None:  # not one of ours (a malformed name is never fatal)
            continue
        markers = parse_dibs((await github.get_commit(sha)).message, where=f"{ref}@{sha[:12]}")
        views.append(ClaimView(target, ref, sha, markers[-1] if markers else None))
    return sorted(views, key=lambda v: (v.target.kind.value, v.target.key.zfill(12)))


async def claim_of(
    github: ClaimsGitHub, target: ClaimTarget, *, namespace: str = DEFAULT_NAMESPACE
) -> ClaimView | None:
    """The target's claim ref as read, or `None` when it has none."""
    refs = ClaimRefs(github, namespace=namespace)
    head = await refs.read(target)
    if head is None:
        return None
    return ClaimView(target, refs.ref(target), head.sha, head.marker)


async def release_claim(
    github: ClaimsGitHub,
    target: ClaimTarget,
    *,
    operator: str,
    now: datetime,
    namespace: str = DEFAULT_NAMESPACE,
) -> OperatorRelease:
    """Release `target` by hand, as its run would have, and say who did.

    The ref of a live claim is deleted; an expired one is fast-forwarded to a release
    commit and left (a delete could race with a run taking the target over). The
    holder's claim comment (by the agents' identity) gets the release marker of the
    holder's run, so the comments' state machine reads the target as free, and a line
    naming `operator`.

    Args:
        github: The repository's facade (the agents' identity writes the markers).
        target: What to release.
        operator: Who released it, for the comment (e.g. `@login (user@host)`).
        now: The time of the release.
        namespace: Where the claim refs live.
    """
    refs = ClaimRefs(github, namespace=namespace)
    view = await claim_of(github, target, namespace=namespace)
    holder = view.marker if view is not None else None
    ref_result = "none"
    if view is not None and holder is not None and holder.op != "release":
        release = DibsMarker("release", target.kind, holder.agent, holder.role, holder.run, now)
        if view.live(now):
            ref_result = "deleted" if await refs.delete(target) else "none"
        else:
            head = await refs.read(target)
            message = f"release {target} by the operator {operator}\n\n{render_dibs(release)}"
            advanced = (
                await refs.advance(target, view.sha, message, tree_sha=head.tree_sha)
                if head is not None
                else None
            )
            ref_result = "marked released" if advanced else "moved"
    comment_id: int | None = None
    if target.has_thread:
        login = (await github.viewer()).login
        comment_id, claim = await _claim_comment(github, target, login, holder)
        if comment_id is not None and claim is not None:
            release = DibsMarker("release", target.kind, claim.agent, claim.role, claim.run, now)
            body = release_note_body(claim, release, operator=operator, ref=ref_result)
            await github.update_issue_comment(comment_id, body)
            if holder is None:
                holder = claim
    _log.info(
        "claims.released_by_operator",
        target=str(target),
        operator=operator,
        ref=ref_result,
        comment=comment_id,
    )
    return OperatorRelease(target, holder, ref_result, comment_id)


async def _claim_comment(
    github: ClaimsGitHub, target: ClaimTarget, login: str, holder: DibsMarker | None
) -> tuple[int | None, DibsMarker | None]:
    """The newest comment by the agents whose claim is not released yet: the holder's
    run's when known, else any run's (a ref deleted by hand leaves only the comment)."""
    try:
        comments = await github.list_issue_comments(target.number)
    except NotFound:  # no such issue or PR: no claim comment either
        return None, None
    for comment in reversed(comments):
        if comment.user.login.casefold() != login.casefold():
            continue
        markers = parse_dibs(comment.body, where=f"comment {comment.id}")
        claims = [m for m in markers if m.op in ("claim", "extend")]
        released = {m.run for m in markers if m.op == "release"}
        for claim in reversed(claims):
            if claim.run in released:
                continue
            if holder is None or claim.run == holder.run:
                return comment.id, claim
    return None, None
