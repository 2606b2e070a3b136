"""Immutable plans: what a submitted stage hands to the pipeline (pure).

A plan is a frozen pydantic model so it can cross a Flyte task boundary (the durable
apply action takes it as an input) and be rendered for the verifier, while the stage it
came from stays a private, mutable working copy.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_loop_common.staging._errors import PlanError

__all__ = ["ChangePlan", "DecompositionPlan", "PlannedIssue", "Reply", "order_issues"]


class Reply(BaseModel):
    """One review comment that a fix addresses, and the reply to post under it."""

    model_config = ConfigDict(frozen=True)

    comment_id: int = Field(
        description="The id of the comment being answered, as shown in the feedback."
    )
    """Id of the review comment (or issue comment) being answered."""
    reply: str = Field(description="What was done about that comment, posted as a reply to it.")
    """Reply text to post."""


class ChangePlan(BaseModel):
    """A submitted change: every touched path with its new content, or `None` to delete."""

    model_config = ConfigDict(frozen=True)

    files: dict[str, str | None]
    """Normalised path -> full new content; `None` deletes the path."""
    title: str = ""
    """Pull request title (builder); empty for a fix."""
    body: str = ""
    """Pull request body as written by the model (the pipeline adds its own sections)."""
    summary: str = ""
    """Short account of what changed and why; used in commit messages and comments."""
    replies: tuple[Reply, ...] = ()
    """Review comments addressed by a fix (reviewer)."""

    @property
    def written(self) -> dict[str, str]:
        """Paths created or replaced, with their content."""
        return {p: c for p, c in self.files.items() if c is not None}

    @property
    def deleted(self) -> list[str]:
        """Paths the change deletes."""
        return [p for p, c in self.files.items() if c is None]


class PlannedIssue(BaseModel):
    """One sub-issue of a decomposition; `depends_on` names other keys of the same plan."""

    model_config = ConfigDict(frozen=True)

    key: str
    """Model-chosen identifier, unique within the plan (becomes `depends on #N` on creation)."""
    title: str
    """Issue title."""
    body: str
    """Issue body: the self-contained work item."""
    depends_on: tuple[str, ...] = ()
    """Keys that must be done (closed) before this one is started."""


class DecompositionPlan(BaseModel):
    """A submitted decomposition, items in dependency order (upstreams first)."""

    model_config = ConfigDict(frozen=True)

    items: tuple[PlannedIssue, ...]
    """Sub-issues, each after everything it depends on."""
    summary: str = ""
    """How the spec was split, posted on the spec issue."""

    @model_validator(mode="after")
    def _dependency_order(self) -> DecompositionPlan:
        seen: set[str] = set()
        for item in self.items:
            if item.key in seen:
                raise ValueError(f"duplicate key {item.key!r}")
            missing = [d for d in item.depends_on if d not in seen]
            if missing:
                raise ValueError(f"{item.key!r} depends on {missing} which do not come before it")
            seen.add(item.key)
        return self


def order_issues(items: Sequence[PlannedIssue]) -> tuple[PlannedIssue, ...]:
    """Order `items` so every issue comes after its dependencies.

    Among issues that are ready at the same time the staging order is kept, so the
    result is deterministic and reads the way the model laid the work out.

    Raises:
        PlanError: A duplicate key, a dependency on a key that is not staged, or a cycle
            (the message spells the cycle out, e.g. `a -> b -> a`).
    """
    index: dict[str, int] = {}
    for position, item in enumerate(items):
        if item.key in index:
            raise PlanError(f"key {item.key!r} is staged twice; every sub-issue needs its own key.")
        index[item.key] = position
    for item in items:
        unknown = [d for d in item.depends_on if d not in index]
        if unknown:
            raise PlanError(
                f"{item.key!r} depends on {', '.join(map(repr, unknown))}, which "
                f"{'is' if len(unknown) == 1 else 'are'} not staged. Stage "
                "the missing issue(s) with stage_issue or drop the dependency."
            )
    cycle = _find_cycle(items)
    if cycle:
        raise PlanError(
            "the dependencies form a cycle (each depends on the next): "
            + " -> ".join(cycle)
            + ". Remove one of these dependencies (restage an issue with a corrected "
            "depends_on) so the work can start somewhere."
        )
    waiting = {item.key: len(set(item.depends_on)) for item in items}
    dependents: dict[str, list[str]] = {item.key: [] for item in items}
    for item in items:
        for dep in set(item.depends_on):
            dependents[dep].append(item.key)
    ready = [index[key] for key, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    ordered: list[PlannedIssue] = []
    while ready:
        item = items[heapq.heappop(ready)]
        ordered.append(item)
        for child in dependents[item.key]:
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(ready, index[child])
    return tuple(ordered)


def _find_cycle(items: Sequence[PlannedIssue]) -> list[str]:
    """The first dependency cycle found, as `[a, b, ..., a]`, or `[]`."""
    graph = {item.key: item.depends_on for item in items}
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    for root in graph:
        if root in state:
            continue
        path: list[str] = [root]
        stack = [iter(graph[root])]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(graph[nxt]))
    return []
