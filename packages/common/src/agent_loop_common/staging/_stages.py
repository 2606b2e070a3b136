"""Mutable stages that the staging tools write into and the pipeline reads from.

A stage is the only state an agent run produces: the pipeline never parses the model's
text to find out what it proposed, it reads the stage. A stage survives its run, so a
retry after a verifier rejection starts from the previous proposal (`reopen()`), and
`from_plan()` rebuilds one on the far side of a task boundary.

Every edit after a submission or a decline reopens the stage: the earlier submission
described different content, so it no longer stands until the model submits again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Literal

from agent_loop_common.staging._errors import PlanError
from agent_loop_common.staging._plans import (
    ChangePlan,
    DecompositionPlan,
    PlannedIssue,
    Reply,
    order_issues,
)

__all__ = ["ChangeStage", "DecompositionStage", "StageStatus"]

StageStatus = Literal["open", "submitted", "declined"]


class _Outcome:
    """Open, submitted or declined (with a reason); shared by both stages."""

    def __init__(self) -> None:
        self._status: StageStatus = "open"
        self._reason = ""

    @property
    def status(self) -> StageStatus:
        """`open` while being edited, `submitted`, or `declined` (skip / no changes)."""
        return self._status

    @property
    def submitted(self) -> bool:
        """Whether the model submitted the stage (and has not edited it since)."""
        return self._status == "submitted"

    @property
    def decline_reason(self) -> str:
        """The reason given to `skip_issue` / `no_changes`; empty unless declined."""
        return self._reason if self._status == "declined" else ""

    def decline(self, reason: str) -> None:
        """Record that the model chose to do nothing, and why."""
        self._status = "declined"
        self._reason = reason

    def reopen(self) -> None:
        """Back to `open`, keeping the staged content: the start of a retry."""
        self._status = "open"
        self._reason = ""


class ChangeStage(_Outcome):
    """Files staged for one commit: path -> new content, or `None` for a deletion."""

    def __init__(self, files: Mapping[str, str | None] | None = None) -> None:
        super().__init__()
        self._files: dict[str, str | None] = dict(files or {})
        self._title = ""
        self._body = ""
        self._summary = ""
        self._replies: tuple[Reply, ...] = ()

    @classmethod
    def from_plan(cls, plan: ChangePlan) -> ChangeStage:
        """An open stage holding `plan`'s files: a retry that starts from that proposal."""
        return cls(plan.files)

    @property
    def files(self) -> Mapping[str, str | None]:
        """Read-only view of the staged paths (normalized)."""
        return MappingProxyType(self._files)

    def put(self, path: str, content: str) -> None:
        """Stage the full new `content` of normalized `path` (checked by the caller)."""
        self._files[path] = content
        self.reopen()

    def delete(self, path: str) -> None:
        """Stage the deletion of normalized `path`."""
        self._files[path] = None
        self.reopen()

    def remove(self, path: str) -> bool:
        """Drop `path` from the stage; `False` when it was not staged."""
        if path not in self._files:
            return False
        del self._files[path]
        self.reopen()
        return True

    def submit(
        self, *, title: str = "", body: str = "", summary: str = "", replies: Iterable[Reply] = ()
    ) -> ChangePlan:
        """Mark the stage submitted and return its plan.

        Raises:
            PlanError: Nothing is staged.
        """
        if not self._files:
            raise PlanError(
                "nothing is staged: stage each changed file with edit_file or stage_file "
                "(or delete_file) before submitting."
            )
        self._title, self._body, self._summary = title, body, summary
        self._replies = tuple(replies)
        self._status = "submitted"
        return self.to_plan()

    def to_plan(self) -> ChangePlan:
        """The submitted proposal as an immutable plan.

        Raises:
            PlanError: The stage is not submitted.
        """
        if not self.submitted:
            raise PlanError(f"the change is not submitted (status: {self.status}).")
        return ChangePlan(
            files=dict(self._files),
            title=self._title,
            body=self._body,
            summary=self._summary,
            replies=self._replies,
        )

    def describe(self) -> str:
        """One line per staged path, for a retry prompt or a log line."""
        if not self._files:
            return "(nothing staged)"
        lines = [
            f"- {path} (delete)"
            if content is None
            else f"- {path} ({len(content.encode('utf-8'))} bytes)"
            for path, content in sorted(self._files.items())
        ]
        return "\n".join(lines)


class DecompositionStage(_Outcome):
    """Sub-issues staged for a spec issue, keyed by the model's own keys."""

    def __init__(self, items: Iterable[PlannedIssue] = ()) -> None:
        super().__init__()
        self._items: dict[str, PlannedIssue] = {}
        for item in items:
            self._items[item.key] = item
        self._summary = ""

    @classmethod
    def from_plan(cls, plan: DecompositionPlan) -> DecompositionStage:
        """An open stage holding `plan`'s items: a retry that starts from that proposal."""
        return cls(plan.items)

    @property
    def items(self) -> tuple[PlannedIssue, ...]:
        """Staged sub-issues in staging order (a restaged key keeps its first position)."""
        return tuple(self._items.values())

    def put(self, item: PlannedIssue) -> bool:
        """Stage `item`, replacing an item with the same key; `True` when it replaced one."""
        replaced = item.key in self._items
        self._items[item.key] = item
        self.reopen()
        return replaced

    def submit(self, summary: str = "") -> DecompositionPlan:
        """Validate the dependency graph, mark the stage submitted and return its plan.

        Raises:
            PlanError: Nothing staged, an unknown dependency, or a cycle.
        """
        if not self._items:
            raise PlanError(
                "no sub-issues are staged: stage each work item with stage_issue first."
            )
        ordered = order_issues(self.items)
        self._summary = summary
        self._status = "submitted"
        return DecompositionPlan(items=ordered, summary=summary)

    def to_plan(self) -> DecompositionPlan:
        """The submitted decomposition, items in dependency order.

        Raises:
            PlanError: The stage is not submitted.
        """
        if not self.submitted:
            raise PlanError(f"the decomposition is not submitted (status: {self.status}).")
        return DecompositionPlan(items=order_issues(self.items), summary=self._summary)

    def describe(self) -> str:
        """One line per staged sub-issue, for a retry prompt or a log line."""
        if not self._items:
            return "(nothing staged)"
        return "\n".join(
            f"- {item.key}: {item.title}"
            + (f" (depends on {', '.join(item.depends_on)})" if item.depends_on else "")
            for item in self._items.values()
        )
