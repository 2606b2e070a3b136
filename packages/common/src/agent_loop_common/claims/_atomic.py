"""The atomic step: a compare-and-swap on a git ref decides who holds a target.

Comments cannot decide a race: two runs can both read "free" and both post a claim. Git
refs can. On GitHub, creating a ref that exists answers 422 (`RefExists`) and a
non-forced ref update that is not a fast-forward answers 422 (`NotFastForward`); both
checks are atomic on the server. So each target gets one ref,
`refs/agent-loop/claims/<kind>-<key>`, pointing at a commit whose message carries the
dibs marker of its latest claim event:

- claim a free target: create the ref at a parentless claim commit; `RefExists` = lost;
- claim a released or expired target (or extend, or re-enter): write a child of the head
  commit and fast-forward the ref without force; `NotFastForward` = someone else moved
  it first = lost;
- release while the claim is live: delete the ref (nobody else may move a live claim, so
  the unconditional delete cannot destroy another run's claim); release after expiry:
  fast-forward to a release commit instead and leave the ref for the next claimer, because
  a delete could then race with a takeover.

The namespace is outside `refs/heads` and `refs/tags`: GitHub accepts any `refs/`
name with at least three components through the REST API, such refs are not listed as
branches or tags, and push-triggered workflows concern branches and tags. See
`docs/claims.md` for the full reasoning and the cleanup rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import structlog

from agent_loop_common.claims._marker import DibsMarker, parse_dibs
from agent_loop_common.claims._target import ClaimTarget
from agent_loop_common.github import GitHubUnavailable, NotFastForward, NotFound, RefExists

__all__ = ["DEFAULT_NAMESPACE", "EMPTY_TREE", "ClaimRefs", "CommitLike", "RefHead", "RefsAPI"]

_log = structlog.get_logger(__name__)

DEFAULT_NAMESPACE = "agent-loop/claims"
"""Claim refs live at `refs/agent-loop/claims/<kind>-<key>`."""

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""git's empty tree, which every repository knows without storing it: the tree of
parentless claim commits, so a claim reads nothing before it writes (and a claim commit
checked out shows no files)."""


class CommitLike(Protocol):
    """The part of a git commit the claim refs read (`github.GitCommit` fits)."""

    @property
    def sha(self) -> str: ...
    @property
    def tree_sha(self) -> str: ...
    @property
    def message(self) -> str: ...


class RefsAPI(Protocol):
    """The git-data methods of the GitHub facade that the claim refs use."""

    async def get_ref(self, ref: str) -> str | None: ...
    async def create_ref(self, ref: str, sha: str) -> None: ...
    async def update_ref(self, ref: str, sha: str, *, force: bool = False) -> None: ...
    async def delete_ref(self, ref: str) -> None: ...
    async def get_commit(self, sha: str) -> CommitLike: ...
    async def create_commit(
        self, *, message: str, tree_sha: str, parents: Sequence[str]
    ) -> str: ...


@dataclass(frozen=True, slots=True)
class RefHead:
    """The claim ref as read: its commit and the marker in that commit's message."""

    sha: str
    """The commit the ref points at."""
    tree_sha: str
    """That commit's tree, reused by child commits (no tree is ever built)."""
    marker: DibsMarker | None
    """The last valid dibs marker in the message; `None` when there is none."""


class ClaimRefs:
    """Compare-and-swap operations on the claim refs of one repository."""

    def __init__(self, github: RefsAPI, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        self._github = github
        self._namespace = namespace.strip("/")

    def ref(self, target: ClaimTarget) -> str:
        """The full ref name, e.g. `refs/agent-loop/claims/issue-4`."""
        return f"refs/{target.ref_name(self._namespace)}"

    async def sha(self, target: ClaimTarget) -> str | None:
        """The commit the claim ref points at; `None` when the target has no ref."""
        return await self._github.get_ref(target.ref_name(self._namespace))

    async def read(self, target: ClaimTarget) -> RefHead | None:
        """Read the claim ref and its head commit; `None` when the target has no ref."""
        sha = await self.sha(target)
        if sha is None:
            return None
        commit = await self._github.get_commit(sha)
        markers = parse_dibs(commit.message, where=f"{self.ref(target)}@{sha[:12]}")
        return RefHead(sha=sha, tree_sha=commit.tree_sha, marker=markers[-1] if markers else None)

    async def create(self, target: ClaimTarget, message: str, *, tree_sha: str) -> str | None:
        """Create the ref at a new parentless commit; `None` when another run created it first.

        A create is not retried by the facade when GitHub may have applied it (5xx,
        timeout): then the ref is read back, and if it points at our commit we won.
        """
        sha = await self._github.create_commit(message=message, tree_sha=tree_sha, parents=())
        try:
            await self._github.create_ref(self.ref(target), sha)
        except RefExists:
            _log.info("claims.ref_create_lost", ref=self.ref(target))
            return None
        except GitHubUnavailable:
            if await self._github.get_ref(target.ref_name(self._namespace)) != sha:
                raise
            _log.info("claims.ref_create_applied_despite_error", ref=self.ref(target))
        return sha

    async def advance(
        self, target: ClaimTarget, parent: str, message: str, *, tree_sha: str
    ) -> str | None:
        """Fast-forward the ref from `parent` to a new child commit; `None` when it moved.

        No read is needed first: the non-forced update is the compare-and-swap. If anyone
        moved the ref since `parent` (a takeover writes its own child of `parent`; a
        fresh claim after a delete is parentless), the child is not a descendant of the
        new head and GitHub refuses it. A deleted ref also counts as moved.
        """
        sha = await self._github.create_commit(
            message=message, tree_sha=tree_sha, parents=(parent,)
        )
        try:
            await self._github.update_ref(target.ref_name(self._namespace), sha, force=False)
        except (NotFastForward, NotFound):
            _log.info("claims.ref_advance_lost", ref=self.ref(target), expected=parent)
            return None
        except GitHubUnavailable:
            if await self._github.get_ref(target.ref_name(self._namespace)) != sha:
                raise
            _log.info("claims.ref_advance_applied_despite_error", ref=self.ref(target))
        return sha

    async def delete(self, target: ClaimTarget) -> bool:
        """Delete the ref; `False` when it was already gone."""
        try:
            await self._github.delete_ref(target.ref_name(self._namespace))
        except NotFound:
            _log.warning("claims.ref_already_deleted", ref=self.ref(target))
            return False
        return True
