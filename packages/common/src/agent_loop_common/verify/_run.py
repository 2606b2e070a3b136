"""Running the verifier on a plan and reading its verdict."""

from __future__ import annotations

from collections.abc import Mapping

from flyte.ai.agents import Agent

from agent_loop_common.agents import run_agent
from agent_loop_common.records import TraceStep
from agent_loop_common.staging import ChangePlan, DecompositionPlan
from agent_loop_common.verify._coverage import Coverage
from agent_loop_common.verify._render import RenderLimits, render_verifier_prompt
from agent_loop_common.verify._verdict import Verdict, VerifierError, parse_verdict

__all__ = ["run_verifier"]


async def run_verifier(
    agent: Agent,
    plan: ChangePlan | DecompositionPlan,
    *,
    request: str,
    request_label: str = "request",
    originals: Mapping[str, str | None] | None = None,
    context: str = "",
    limits: RenderLimits | None = None,
    trace: list[TraceStep] | None = None,
    instructions: str = "",
    evidence: str = "",
    coverage: Coverage | None = None,
) -> Verdict:
    """Ask the verifier `agent` about `plan` and return its verdict.

    Args:
        agent: A verifier from `make_verifier_agent` of the matching kind.
        plan: The submitted proposal.
        request: What was asked (issue text, or feedback and failing checks); fenced as
            untrusted data in the prompt.
        request_label: Label for the request block, e.g. `"issue #42"`.
        originals: Base-branch contents per path, so changes render as diffs.
        context: Extra background for the verifier, fenced.
        limits: Prompt size budgets.
        trace: When given, the verifier's steps are appended to it (also on failure).
        instructions: The maintainers' instructions section, from the base branch.
        evidence: What the pipeline checked by code (the tests' results), shown as such.
        coverage: Filled with the files shown whole in the prompt; give the verifier's
            read tools its `reads` so pages it reads count too.

    Returns:
        The verdict; anything but a JSON `true` in the final answer is a rejection.

    Raises:
        VerifierError: The run failed (the model call failed or the turns ran out), so
            there is no verdict.
    """
    prompt = render_verifier_prompt(
        plan,
        request=request,
        request_label=request_label,
        originals=originals,
        context=context,
        limits=limits,
        instructions=instructions,
        evidence=evidence,
        coverage=coverage,
    )
    run = await run_agent(agent, prompt)
    if trace is not None:
        trace.extend(run.trace)
    if run.result.error:
        raise VerifierError(f"the verifier run failed: {run.result.error}", trace=run.trace)
    return parse_verdict(run.result.summary)
