"""Staging tools for a decomposition: `stage_issue`, `submit_decomposition`, `skip_issue`.

Same rules as the change tools: plain async functions closed over a stage, never traced,
refusals returned to the model as text. Dependencies are checked as a whole at
`submit_decomposition` (the model may stage a dependent before its upstream).
"""

from __future__ import annotations

import re
from typing import Annotated, cast

from pydantic import Field

from agent_loop_common.staging._errors import PolicyViolation, StagingError
from agent_loop_common.staging._fields import (
    REOPENED_NOTE,
    StagingTool,
    checked_text,
    decline_tool,
    refused,
)
from agent_loop_common.staging._plans import PlannedIssue
from agent_loop_common.staging._policy import StagingPolicy
from agent_loop_common.staging._stages import DecompositionStage

__all__ = ["decomposition_tools"]

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

IssueKey = Annotated[
    str,
    Field(
        description="Your short identifier for this sub-issue, e.g. 'api-client' (letters, digits, '-', '_', '.')."
    ),
]
IssueTitle = Annotated[str, Field(description="Issue title: one line, specific.")]
IssueBody = Annotated[
    str,
    Field(
        description="Issue body in Markdown: a self-contained work item with acceptance criteria."
    ),
]
DependsOn = Annotated[
    list[str],
    Field(
        description="Keys of the sub-issues that must be finished before this one can start; [] for none."
    ),
]
DecompositionSummary = Annotated[
    str, Field(description="How the spec was split and in what order the work goes.")
]


def decomposition_tools(
    stage: DecompositionStage,
    policy: StagingPolicy,
    *,
    include_skip: bool = True,
) -> list[StagingTool]:
    """`stage_issue`, `submit_decomposition` and (unless `include_skip=False`) `skip_issue`."""

    async def stage_issue(
        key: IssueKey, title: IssueTitle, body: IssueBody, depends_on: DependsOn
    ) -> str:
        """Stage one sub-issue of the decomposition. Staging the same key again replaces that sub-issue. Each sub-issue should be one reviewable pull request's worth of work; depends_on lists the keys it has to wait for."""
        was = stage.status
        try:
            item = _checked_issue(stage, policy, key, title, body, depends_on)
        except StagingError as exc:
            return refused(exc)
        replaced = stage.put(item)
        staged = {i.key for i in stage.items}
        pending = [d for d in item.depends_on if d not in staged]
        parts = [
            f"{'Replaced' if replaced else 'Staged'} sub-issue '{item.key}'; {len(staged)} staged."
        ]
        if pending:
            parts.append(
                f" Note: depends_on names {', '.join(map(repr, pending))}, not staged yet: "
                "stage it before submit_decomposition."
            )
        if was != "open":
            parts.append(REOPENED_NOTE)
        return "".join(parts)

    async def submit_decomposition(summary: DecompositionSummary) -> str:
        """Submit the staged sub-issues as the decomposition of the spec. Dependencies must name staged keys and must not form a cycle. Call it once, after every sub-issue is staged; then reply with a short final message."""
        try:
            text = checked_text("summary", summary, policy.max_body_chars)
            plan = stage.submit(text)
        except StagingError as exc:
            return refused(exc)
        order = "; ".join(
            item.key + (f" (after {', '.join(item.depends_on)})" if item.depends_on else "")
            for item in plan.items
        )
        return (
            f"Submitted {len(plan.items)} sub-issue(s), to be filed in this order: {order}. It "
            "goes to verification next. Reply with a short final message; do not call more tools."
        )

    tools: list[StagingTool] = [stage_issue, submit_decomposition]
    if include_skip:
        tools.append(decline_tool(stage, policy, "skip_issue"))
    return tools


def _checked_issue(
    stage: DecompositionStage,
    policy: StagingPolicy,
    key: object,
    title: object,
    body: object,
    depends_on: object,
) -> PlannedIssue:
    if not isinstance(key, str) or not _KEY.fullmatch(key.strip()):
        raise PolicyViolation(
            f"key {key!r} is not valid: use up to 64 letters, digits, '-', '_' or '.', "
            "starting with a letter or digit, e.g. 'api-client'."
        )
    clean_key = key.strip()
    staged = {item.key: item for item in stage.items}
    if clean_key not in staged and len(staged) >= policy.max_issues:
        raise PolicyViolation(
            f"{len(staged)} sub-issues are staged, the limit. Merge smaller items or restage "
            "an existing key instead of adding more."
        )
    clean_title = checked_text("title", title, policy.max_title_chars, single_line=True)
    for other in staged.values():
        if other.key != clean_key and other.title.casefold() == clean_title.casefold():
            raise PolicyViolation(
                f"sub-issue '{other.key}' already has the title {clean_title!r}; give each "
                f"sub-issue its own title (or restage '{other.key}' to change it)."
            )
    clean_body = checked_text("body", body, policy.max_body_chars)
    if not isinstance(depends_on, list):
        raise PolicyViolation("depends_on must be a list of keys; use [] for none.")
    deps: list[str] = []
    for dep in cast(list[object], depends_on):
        if not isinstance(dep, str) or not dep.strip():
            raise PolicyViolation(f"depends_on entries must be keys (strings), got {dep!r}.")
        clean = dep.strip()
        if clean == clean_key:
            raise PolicyViolation(f"'{clean_key}' cannot depend on itself.")
        if clean not in deps:
            deps.append(clean)
    return PlannedIssue(key=clean_key, title=clean_title, body=clean_body, depends_on=tuple(deps))
