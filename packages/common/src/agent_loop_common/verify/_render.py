"""Rendering a plan into the verifier's prompt (pure).

The verifier sees the proposal itself, not the author's account of it: every staged
file as a unified diff against the base branch when the base content is known, the full
content otherwise, deletions listed, and the title, body, replies or sub-issues. All of
it is fenced as untrusted data, since a proposal could contain text aimed at the
verifier. Sizes are bounded per file and in total; what does not fit is named, not
silently dropped.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from agent_loop_common.agents import fence_untrusted
from agent_loop_common.staging import ChangePlan, DecompositionPlan

__all__ = ["RenderLimits", "render_plan", "render_verifier_prompt"]


@dataclass(frozen=True)
class RenderLimits:
    """Character budgets of the verifier prompt."""

    max_request_chars: int = 30_000
    """The request (issue body, feedback) and the context, each."""
    max_file_chars: int = 30_000
    """One file's diff or content."""
    max_total_chars: int = 150_000
    """All files together; later files are listed without content once it is spent."""


def render_verifier_prompt(
    plan: ChangePlan | DecompositionPlan,
    *,
    request: str,
    request_label: str = "request",
    originals: Mapping[str, str | None] | None = None,
    context: str = "",
    limits: RenderLimits | None = None,
) -> str:
    """The user message for a verifier run.

    Args:
        plan: The proposal to check.
        request: What was asked (the issue, or the feedback and failing checks).
        request_label: Label of the request block, e.g. `"issue #42"`.
        originals: Base-branch content per path (`None`: the path does not exist), so
            changes render as diffs; paths not in it render as full content.
        context: Extra background (e.g. the pull request's description), fenced.
        limits: Character budgets.
    """
    lim = limits or RenderLimits()
    parts = [
        "# Proposal to verify",
        "",
        "## What was asked",
        fence_untrusted(request_label, request, lim.max_request_chars),
    ]
    if context.strip():
        parts += [
            "",
            "## Background",
            fence_untrusted("background", context, lim.max_request_chars),
        ]
    parts += ["", render_plan(plan, originals=originals, limits=lim)]
    parts += [
        "",
        "## Your task",
        "Check the proposal against what was asked and against the repository, following your "
        'instructions, and end with the JSON verdict {"verified": <true|false>, "notes": "..."}.',
    ]
    return "\n".join(parts)


def render_plan(
    plan: ChangePlan | DecompositionPlan,
    *,
    originals: Mapping[str, str | None] | None = None,
    limits: RenderLimits | None = None,
) -> str:
    """The proposal section of the verifier prompt."""
    lim = limits or RenderLimits()
    if isinstance(plan, DecompositionPlan):
        return _render_decomposition(plan, lim)
    return _render_change(plan, originals, lim)


def _render_change(
    plan: ChangePlan, originals: Mapping[str, str | None] | None, lim: RenderLimits
) -> str:
    described = "\n\n".join(
        f"{label}:\n{text}"
        for label, text in (("Title", plan.title), ("Body", plan.body), ("Summary", plan.summary))
        if text
    )
    written = sum(1 for c in plan.files.values() if c is not None)
    parts = [
        "## The proposal",
        fence_untrusted(
            "proposal description by its author", described or "(none)", lim.max_request_chars
        ),
        "",
        f"## Files ({written} written, {len(plan.files) - written} deleted)",
    ]
    budget = lim.max_total_chars
    for path in sorted(plan.files):
        content = plan.files[path]
        if content is None:
            parts += ["", f"### {path} (deleted)"]
            continue
        heading, text = _file_view(path, content, originals)
        if budget <= 0:
            parts += ["", f"### {path} ({heading}): not shown, the prompt budget is spent"]
            continue
        block = fence_untrusted(path, text, min(lim.max_file_chars, budget))
        budget -= len(block)
        parts += ["", f"### {path} ({heading})", block]
    if plan.replies:
        parts += ["", f"## Replies to feedback ({len(plan.replies)})"]
        for reply in plan.replies:
            parts += [
                f"### Reply to comment {reply.comment_id}",
                fence_untrusted(f"reply to {reply.comment_id}", reply.reply, lim.max_file_chars),
            ]
    return "\n".join(parts)


def _file_view(
    path: str, content: str, originals: Mapping[str, str | None] | None
) -> tuple[str, str]:
    if originals is None or path not in originals:
        return "full new content; base version not provided", content
    before = originals[path]
    if before is None:
        return "new file", content
    if before == content:
        return "identical to the base branch", "(no change)"
    diff = difflib.unified_diff(
        before.splitlines(),
        content.splitlines(),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
        lineterm="",
    )
    return "modified; unified diff against the base branch", "\n".join(diff)


def _render_decomposition(plan: DecompositionPlan, lim: RenderLimits) -> str:
    parts = [
        "## The proposal",
        fence_untrusted(
            "decomposition summary by its author", plan.summary or "(none)", lim.max_request_chars
        ),
        "",
        f"## Sub-issues in filing order ({len(plan.items)})",
    ]
    budget = lim.max_total_chars
    for number, item in enumerate(plan.items, start=1):
        deps = ", ".join(item.depends_on) if item.depends_on else "nothing"
        heading = f"### {number}. key `{item.key}` (depends on: {deps})"
        if budget <= 0:
            parts += ["", f"{heading}: not shown, the prompt budget is spent"]
            continue
        block = fence_untrusted(
            f"sub-issue {item.key}",
            f"Title: {item.title}\n\n{item.body}",
            min(lim.max_file_chars, budget),
        )
        budget -= len(block)
        parts += ["", heading, block]
    return "\n".join(parts)
