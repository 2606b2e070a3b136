"""Build and verify: the builder Agent proposes, the strict verifier judges, up to N tries.

Both stages live for the whole run, so a retry after a rejection starts from the
previous proposal (reopened, not emptied) and gets the verifier's notes. What the model
proposed is read from the stages, never from its text. A failed model call is a failed
run (`BuildFailed`, or `BudgetExceeded` when the budget stopped it), never a rejection;
running out of turns is a try that submitted nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from flyte.ai.agents import Agent

from agent_loop_builder.prompts import BUILDER_NAME, builder_instructions, retry_prompt
from agent_loop_builder.snapshot import BaseSnapshot
from agent_loop_builder.tools import issue_tool, repo_tools
from agent_loop_common.agents import AgentRun, run_agent
from agent_loop_common.llm import BudgetExceeded
from agent_loop_common.records import Attempt
from agent_loop_common.runtime import RunScope, Runtime
from agent_loop_common.staging import (
    ChangePlan,
    ChangeStage,
    DecompositionPlan,
    DecompositionStage,
    decomposition_tools,
    implementation_tools,
)
from agent_loop_common.verify import Verdict, VerifierError, make_verifier_agent, run_verifier

__all__ = ["BuildFailed", "BuildJob", "BuildResult", "build_and_verify"]

_TURN_LIMIT = "Reached max_turns"
_SUBMITS = {"submit_implementation": "change", "submit_decomposition": "decomposition"}


class BuildFailed(Exception):
    """The builder's own model run failed (provider error), so there is no proposal."""


@dataclass(frozen=True)
class BuildJob:
    """What one issue's build needs, prepared by the pipeline."""

    number: int
    prompt: str
    """The first try's user message."""
    issue_text: str
    """`read_issue`'s answer: the fenced issue and trusted comments."""
    request: str
    """The issue as the verifier gets it (it fences it itself)."""
    background: str
    """Trusted comments for the verifier's background block."""
    snapshot: BaseSnapshot
    heartbeat: Callable[[], Awaitable[object]]
    """Renews the claim between tries (raises `ClaimLost` if it was lost)."""


@dataclass(frozen=True)
class BuildResult:
    """How the tries ended."""

    kind: Literal["change", "decomposition", "skipped", "rejected"]
    change: ChangePlan | None = None
    decomposition: DecompositionPlan | None = None
    notes: str = ""
    """The verifier's notes on the last try, or the reason given to `skip_issue`."""


async def build_and_verify(scope: RunScope, job: BuildJob) -> BuildResult:
    """Run up to `settings.max_tries` build-and-verify tries; attempts go to `scope.attempts`."""
    rt = scope.runtime
    settings = rt.settings
    tries = settings.max_tries
    change, spec = ChangeStage(), DecompositionStage()
    builder = _builder(rt, job, change, spec)
    verify_tools = [issue_tool(job.issue_text), *repo_tools(job.snapshot)]
    message = job.prompt
    notes = ""
    for number in range(1, tries + 1):
        if number > 1:
            await job.heartbeat()
        before = rt.usage.prompt_tokens + rt.usage.completion_tokens
        async with scope.stage("build"):
            run = await run_agent(builder, message)
        scope.trace.extend(run.trace)
        _raise_if_failed(rt, run, "the builder")
        if spec.decline_reason or change.decline_reason:
            return BuildResult("skipped", notes=spec.decline_reason or change.decline_reason)
        kind = _submitted(run, change, spec)
        if kind is None:
            notes = (
                "You finished without submitting. Stage the change and call "
                "submit_implementation (or stage sub-issues and call submit_decomposition)."
            )
            scope.attempts.append(
                Attempt(
                    number=number, verified=False, notes=notes, staged_paths=sorted(change.files)
                )
            )
        else:
            plan = change.to_plan() if kind == "change" else spec.to_plan()
            async with scope.stage("verify"):
                verdict = await _verify(scope, job, plan, verify_tools, number)
            notes = verdict.notes
            scope.attempts.append(
                Attempt(
                    number=number,
                    verified=verdict.verified,
                    notes=notes,
                    staged_paths=_paths(plan),
                    tokens=rt.usage.prompt_tokens + rt.usage.completion_tokens - before,
                )
            )
            if verdict.verified:
                if isinstance(plan, ChangePlan):
                    return BuildResult("change", change=plan, notes=notes)
                return BuildResult("decomposition", decomposition=plan, notes=notes)
        change.reopen()
        spec.reopen()
        what = kind or ("decomposition" if spec.items and not change.files else "change")
        staged = spec.describe() if what == "decomposition" else change.describe()
        message = retry_prompt(
            job.prompt, attempt=number + 1, tries=tries, notes=notes, staged=staged, kind=what
        )
    return BuildResult("rejected", notes=notes)


def _builder(rt: Runtime, job: BuildJob, change: ChangeStage, spec: DecompositionStage) -> Agent:
    settings = rt.settings
    policy = settings.staging_policy()
    return Agent(
        name=BUILDER_NAME,
        instructions=builder_instructions(settings.repo, job.snapshot.branch),
        model=settings.model,
        tools=[
            issue_tool(job.issue_text),
            *repo_tools(job.snapshot, stage=change),
            *implementation_tools(
                change, policy, exists_at_base=job.snapshot.exists, include_skip=False
            ),
            *decomposition_tools(spec, policy),
        ],
        max_turns=settings.max_turns("builder"),
        call_llm=rt.call_llm("agent"),
        parallel_tool_calls=False,
    )


def _raise_if_failed(rt: Runtime, run: AgentRun, who: str) -> None:
    error = run.result.error
    if not error or error.startswith(_TURN_LIMIT):
        return
    if rt.usage.exceeded:
        raise BudgetExceeded(rt.usage.exceeded)
    raise BuildFailed(f"{who}'s model run failed: {error}")


def _submitted(
    run: AgentRun, change: ChangeStage, spec: DecompositionStage
) -> Literal["change", "decomposition"] | None:
    """Which stage stands submitted; if both do, the one submitted last counts."""
    if change.submitted and spec.submitted:
        last = [_SUBMITS[t] for t in run.tools_called if t in _SUBMITS]
        return "decomposition" if last and last[-1] == "decomposition" else "change"
    if change.submitted:
        return "change"
    return "decomposition" if spec.submitted else None


async def _verify(
    scope: RunScope,
    job: BuildJob,
    plan: ChangePlan | DecompositionPlan,
    tools: Sequence[Any],
    number: int,
) -> Verdict:
    rt = scope.runtime
    settings = rt.settings
    kind = "change" if isinstance(plan, ChangePlan) else "decomposition"
    verifier = make_verifier_agent(
        rt.call_llm("verifier"),
        settings.verifier_model,
        tools,
        settings.max_turns("verifier"),
        kind,
    )
    originals = (
        await job.snapshot.originals(sorted(plan.files)) if isinstance(plan, ChangePlan) else None
    )
    try:
        return await run_verifier(
            verifier,
            plan,
            request=job.request,
            request_label=f"issue #{job.number}",
            originals=originals,
            context=job.background,
            trace=scope.trace,
        )
    except VerifierError as exc:
        scope.attempts.append(
            Attempt(
                number=number, verified=False, notes=str(exc)[:2_000], staged_paths=_paths(plan)
            )
        )
        if rt.usage.exceeded:
            raise BudgetExceeded(rt.usage.exceeded) from exc
        raise


def _paths(plan: ChangePlan | DecompositionPlan) -> list[str]:
    if isinstance(plan, ChangePlan):
        return sorted(plan.files)
    return [f"issue:{item.title}" for item in plan.items]
