"""What can be claimed (`ClaimTarget`) and what a won claim carries (`Claim`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from agent_loop_common.records import TargetKind

__all__ = ["Claim", "ClaimTarget"]

_REPO_KEY = re.compile(r"\A(?!.*\.\.)[a-z0-9][a-z0-9_-]{0,62}\Z")


@dataclass(frozen=True, slots=True)
class ClaimTarget:
    """A claimable thing: an issue, a pull request, or a repository-level job by name.

    Repository-level targets (`ClaimTarget.repo("distiller")`) have no comment thread; they
    are decided by the claim ref alone, which is what keeps two distiller runs from
    writing the shared context at once.
    """

    kind: TargetKind
    """`issue`, `pr` or `repo`."""
    key: str
    """The issue/PR number in decimal, or the repository-level target's name."""

    def __post_init__(self) -> None:
        if self.kind in ("issue", "pr"):
            if not self.key.isdigit() or self.key.startswith("0"):
                raise ValueError(f"{self.kind} targets need a positive number, got {self.key!r}")
        elif self.kind == "repo":
            if not _REPO_KEY.match(self.key):
                raise ValueError(f"repo target names are [a-z0-9_-]{{1,63}}, got {self.key!r}")
        else:
            raise ValueError(f"unknown target kind {self.kind!r}")

    @classmethod
    def of(cls, kind: TargetKind, key: int | str) -> ClaimTarget:
        """Build a target from a kind and a number or name."""
        return cls(kind, str(key))

    @property
    def number(self) -> int:
        """The issue or PR number.

        Raises:
            ValueError: this is a repository-level target.
        """
        if self.kind == "repo":
            raise ValueError(f"repository-level target {self.key!r} has no number")
        return int(self.key)

    @property
    def has_thread(self) -> bool:
        """Tell whether the target has a comment thread for markers (issues and PRs)."""
        return self.kind != "repo"

    def ref_name(self, namespace: str) -> str:
        """The claim ref below `refs/`, e.g. `agent-loop/claims/issue-4`."""
        return f"{namespace}/{self.kind}-{self.key}"

    def __str__(self) -> str:
        return f"{self.kind} #{self.key}" if self.has_thread else f"repo:{self.key}"


@dataclass(frozen=True, slots=True)
class Claim:
    """A claim this run won; pass it back to `Claimer.extend` and `Claimer.release`."""

    target: ClaimTarget
    """What is claimed."""
    run: str
    """The holding run's id."""
    role: str
    """The holding run's role."""
    agent: str
    """The holding run's deployment id."""
    claimed_at: datetime
    """When this run first won the target."""
    until: datetime
    """When the claim expires unless extended."""
    head: str
    """Sha of the claim ref commit this run wrote last; the ref must still point here."""
    comment_id: int | None
    """The human-visible claim comment (`None` for repository-level targets)."""
