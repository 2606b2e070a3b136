"""The attempt loop itself: up to N tries of agent -> verifier, feedback carried forward.

The stages live for the whole run, so a retry after a rejection starts from the previous
proposal (reopened, not emptied) and gets the verifier's notes. What the agent proposed
is read from its stages, never from its text. Running out of turns is a try that
submitted nothing (unless it did submit before the limit); a failed model call is a
failed run, never a rejection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agent_loop_common.agents import AgentRun, run_agent
from agent_loop_common.attempts._types import (
    AgentFailed,
    AttemptResult,
    Declined,
    Plan,
    Proposer,
    Rejected,
    Verified,
)
from agent_loop_common.llm import BudgetExceeded
from agent_loop_common.runtime import RunScope
from agent_loop_common.staging import ChangePlan
from agent_loop_common.verify import Verdict, VerifierError, make_verifier_agent, run_verifier

__all__ = ["attempt_loop"]


async def attempt_loop(
    scope: RunScope,
    proposer: Proposer,
    *,
    tries: int,
    before_retry: Callable[[], Awaitable[object]] | None = None,
) -> AttemptResult:
    """Run up to `tries` tries of `proposer`; each try is recorded on `scope.attempts`.

    Args:
        scope: The run (its runtime's model calls, its trace and attempts).
        proposer: The agent, its prompts, stages and verifier input.
        tries: Most tries in total (`settings.max_tries`).
        before_retry: Awaited before every try after the first (e.g. renew the claim).

    Raises:
        AgentFailed: The agent's model call failed.
        BudgetExceeded: The run's budget stopped a model call.
        VerifierError: The verifier's run failed (no verdict).
    """
    notes = ""
    turn_limit = False
    for number in range(1, tries + 1):
        if number > 1:
            if before_retry is not None:
                await before_retry()
            proposer.reopen()
        started = scope.tokens()
        async with scope.stage(proposer.work_stage):
            run = await run_agent(proposer.agent, proposer.prompt(number, notes))
        scope.trace.extend(run.trace)
        _raise_if_failed(scope, run, proposer.agent.name)
        proposal = proposer.proposal(run)
        if isinstance(proposal, Declined):
            return Declined(proposal.reason, number)
        if proposal is None:
            notes, turn_limit = proposer.not_submitted, run.stop == "turn_limit"
            scope.add_attempt(
                number,
                verified=False,
                notes=notes,
                staged_paths=proposer.staged_paths(),
                tokens_at_start=started,
            )
            continue
        turn_limit = False
        async with scope.stage("verify"):
            verdict = await _verify(scope, proposer, proposal, number, started)
        scope.add_attempt(
            number,
            verified=verdict.verified,
            notes=verdict.notes,
            staged_paths=_paths(proposal),
            tokens_at_start=started,
        )
        if verdict.verified:
            return Verified(proposal, verdict.notes, number)
        notes = verdict.notes
    return Rejected(notes, tries, turn_limit)


def _raise_if_failed(scope: RunScope, run: AgentRun, name: str) -> None:
    """A failed model call ends the run: as a budget stop when the budget refused it."""
    exceeded = scope.runtime.usage.exceeded
    if exceeded:
        raise BudgetExceeded(exceeded)
    if run.stop == "model_error":
        raise AgentFailed(
            f"the {name} agent's model run failed: {run.result.error}",
            cause=scope.runtime.usage.failure,
        )


async def _verify(
    scope: RunScope, proposer: Proposer, plan: Plan, number: int, started: int
) -> Verdict:
    rt = scope.runtime
    shown = await proposer.verifier_input(plan)
    verifier = make_verifier_agent(
        rt.call_llm("verifier"),
        rt.agent_model("verifier"),
        shown.tools,
        rt.settings.max_turns("verifier"),
        shown.kind,
    )
    context = "\n\n".join(part for part in (shown.context, *shown.extra) if part)
    try:
        return await run_verifier(
            verifier,
            plan,
            request=shown.request,
            request_label=shown.request_label,
            originals=shown.originals,
            context=context,
            trace=scope.trace,
        )
    except VerifierError as exc:
        exc.cause = exc.cause or rt.usage.failure
        scope.add_attempt(
            number,
            verified=False,
            notes=str(exc)[:2_000],
            staged_paths=_paths(plan),
            tokens_at_start=started,
        )
        if rt.usage.exceeded:  # the budget stopped the verifier: say so, not "error"
            raise BudgetExceeded(rt.usage.exceeded) from exc
        raise


def _paths(plan: Plan) -> list[str]:
    if isinstance(plan, ChangePlan):
        return sorted(plan.files)
    return [f"issue:{item.title}" for item in plan.items]
