"""One pass's review: the reviewer agent proposes, the strict verifier judges, up to N tries.

The agent reviews the PR with read-only tools and proposes through the shared staging
tools (`fix_tools`): `stage_file`, `unstage_file`, `delete_file`, then `submit_fix` or
`no_changes`. What it proposed is read from the stage, never from its text. A submitted
fix goes to the verifier (kind `fix`); a rejection's notes start the next try, which
keeps the staged files. Every try is an `Attempt` on the run's record.

```
ReviewFailed     the agent run itself failed (model error, turn limit): no proposal
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from flyte.ai.agents import Agent

from agent_loop_common.agents import run_agent
from agent_loop_common.llm import BudgetExceeded
from agent_loop_common.records import Attempt
from agent_loop_common.runtime import RunScope, Runtime
from agent_loop_common.staging import ChangePlan, ChangeStage, fix_tools
from agent_loop_common.verify import VerifierError, make_verifier_agent, run_verifier
from agent_loop_reviewer._prompts import (
    PassPrompt,
    render_pass_prompt,
    render_request,
    reviewer_instructions,
)
from agent_loop_reviewer._tools import HeadFiles, read_tools

__all__ = ["ReviewFailed", "ReviewResult", "review_pass"]

_NOT_SUBMITTED = (
    "You ended without calling submit_fix or no_changes, so nothing was proposed. Finish "
    "with exactly one of them."
)


class ReviewFailed(Exception):
    """The reviewer agent's run failed, so the pass has no proposal."""


@dataclass(frozen=True)
class ReviewResult:
    """How the review of one pass ended."""

    kind: Literal["fix", "no_changes", "rejected"]
    tries: int
    plan: ChangePlan | None = None
    """The verified fix (`kind == "fix"`)."""
    reason: str = ""
    """The agent's reason (`no_changes`)."""
    notes: str = ""
    """The verifier's last notes."""


async def review_pass(scope: RunScope, prompt: PassPrompt, head: HeadFiles) -> ReviewResult:
    """Run the agent and the verifier for one pass (stages `review` and `verify`)."""
    rt = scope.runtime
    settings = rt.settings
    github = rt.github
    a = prompt.assessment
    feedback = [*a.people, *a.failing]
    reads = read_tools(github, prompt.pull, head, feedback)
    stage = ChangeStage()
    agent = Agent(
        name="reviewer",
        instructions=reviewer_instructions(),
        model=settings.model,
        tools=[
            *reads,
            *fix_tools(
                stage,
                settings.staging_policy(),
                exists_at_base=head.exists,
                known_comment_ids={item.id for item in a.people},
            ),
        ],
        max_turns=settings.max_turns("reviewer"),
        call_llm=rt.call_llm("agent"),
        parallel_tool_calls=False,
    )
    verifier = make_verifier_agent(
        rt.call_llm("verifier"),
        settings.verifier_model,
        reads,
        settings.max_turns("verifier"),
        kind="fix",
    )
    notes = ""
    for number in range(1, settings.max_tries + 1):
        tokens_before = rt.usage.prompt_tokens + rt.usage.completion_tokens
        if number > 1:
            stage.reopen()
        async with scope.stage("review"):
            run = await run_agent(
                agent, render_pass_prompt(prompt, retry_notes=notes, staged=stage.describe())
            )
        scope.trace.extend(run.trace)
        if rt.usage.exceeded:
            raise BudgetExceeded(rt.usage.exceeded)
        if not run.ok:
            raise ReviewFailed(f"the reviewer agent failed: {run.result.error}")
        if stage.status == "declined":
            return ReviewResult("no_changes", number, reason=stage.decline_reason, notes=notes)
        if not stage.submitted:
            notes = _NOT_SUBMITTED
            scope.attempts.append(_attempt(number, False, notes, stage, rt, tokens_before))
            continue
        plan = stage.to_plan()
        originals = {path: await head.text(path) for path in plan.files}
        async with scope.stage("verify"):
            try:
                verdict = await run_verifier(
                    verifier,
                    plan,
                    request=render_request(prompt),
                    request_label=f"feedback on PR #{prompt.pull.number}",
                    originals=originals,
                    context=f"{prompt.pull.title}\n\n{prompt.pull.body}",
                    trace=scope.trace,
                )
            except VerifierError:
                if rt.usage.exceeded:  # the budget stopped the verifier: say so, not "error"
                    raise BudgetExceeded(rt.usage.exceeded) from None
                raise
        scope.attempts.append(
            _attempt(number, verdict.verified, verdict.notes, stage, rt, tokens_before)
        )
        if verdict.verified:
            return ReviewResult("fix", number, plan=plan, notes=verdict.notes)
        notes = verdict.notes
    return ReviewResult("rejected", settings.max_tries, notes=notes)


def _attempt(
    number: int, verified: bool, notes: str, stage: ChangeStage, rt: Runtime, tokens_before: int
) -> Attempt:
    tokens = rt.usage.prompt_tokens + rt.usage.completion_tokens - tokens_before
    return Attempt(
        number=number,
        verified=verified,
        notes=notes,
        staged_paths=sorted(stage.files),
        tokens=max(tokens, 0),
    )
