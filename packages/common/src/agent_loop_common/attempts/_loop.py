"""The attempt loop itself: up to N tries of agent -> tests -> verifier, feedback carried.

The stages live for the whole run, so a retry after a rejection starts from the previous
proposal (reopened, not emptied) and gets the notes. What the agent proposed is read
from its stages, never from its text. Running out of turns is a try that submitted
nothing (unless it did submit before the limit); a failed model call is a failed run,
never a rejection.

With `checks`, every submitted change is tested before any model judges it (issue 14):
the repository's tests run on the exact staged tree and on its base, and a hard-rule
failure (a regression, a new non-zero exit, a timeout) rejects the try by code, its
failing names and output tail fed back as the notes, without asking the verifier. A
change that passes is shown to the verifier with that evidence and any tampering flags.
A change whose code reaches into the test runner (`tampered`: found by the scan of the
change or by the pytest guard in the run) is not rejected by code, since a finding is
about the evidence, not proof of intent (a pytest plugin project touches the plugin
manager): like a run that proves nothing, it is judged by the verifier on reading
alone, shown what was found and told to reject code that steers the runner; when the
verifier rejects it, the findings go back to the agent with its notes, and when it
accepts, the pull request can only open as a draft saying why.
A decomposition has no tests to run.

A verdict counts only when the verifier was shown the whole change (issue 16): each
written file whole in its prompt, or every line of it through `read_file` on the
proposed tree. Otherwise the try is not accepted, so nothing unseen is committed.

Each try is live progress (`agent_loop_common.progress`): `try.started`, what it
proposed (`change.proposed`, with lines added and removed per file), the tests
(`tests.ran`, from the checks), the verdict (`verifier.verdict`) and how it ended
(`try.ended`). The last proposed change is kept as a diff against its base for the
record (`RunScope.diff`), committed or not.
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
from agent_loop_common.checks import CheckReport, Checks
from agent_loop_common.llm import BudgetExceeded
from agent_loop_common.progress import NOTE_CHARS, emit
from agent_loop_common.records import DIFF_CHARS
from agent_loop_common.runtime import RunScope
from agent_loop_common.staging import ChangePlan, change_diff
from agent_loop_common.verify import (
    Coverage,
    Verdict,
    VerifierError,
    make_verifier_agent,
    run_verifier,
)

__all__ = ["attempt_loop"]


async def attempt_loop(
    scope: RunScope,
    proposer: Proposer,
    *,
    tries: int,
    before_retry: Callable[[], Awaitable[object]] | None = None,
    checks: Checks | None = None,
) -> AttemptResult:
    """Run up to `tries` tries of `proposer`; each try is recorded on `scope.attempts`.

    Args:
        scope: The run (its runtime's model calls, its trace and attempts).
        proposer: The agent, its prompts, stages and verifier input.
        tries: Most tries in total (`settings.max_tries`).
        before_retry: Awaited before every try after the first (e.g. renew the claim).
        checks: The run's tests (`open_checks`): each submitted change is tested before
            the verifier, and the last report lands on `scope.tests`. `None`: none.

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
        if checks is not None:
            checks.new_try()
        emit("try.started", number=number, tries=tries)
        started = scope.tokens()
        async with scope.stage(proposer.work_stage):
            run = await run_agent(proposer.agent, proposer.prompt(number, notes))
        scope.trace.extend(run.trace)
        _raise_if_failed(scope, run, proposer.agent.name)
        proposal = proposer.proposal(run)
        if isinstance(proposal, Declined):
            _ended(number, "declined", proposal.reason)
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
            _ended(number, "not_submitted", notes)
            continue
        turn_limit = False
        await _proposed(scope, proposal, checks)
        report: CheckReport | None = None
        if checks is not None and isinstance(proposal, ChangePlan):
            async with scope.stage("test"):
                report = await checks.check(proposal.files)
            scope.tests = report.evidence(runs=checks.runs)
            if report.rejects:
                notes = report.feedback()
                scope.add_attempt(
                    number,
                    verified=False,
                    notes=notes,
                    staged_paths=_paths(proposal),
                    tokens_at_start=started,
                    tests=report.line,
                )
                _ended(number, "tests_failed", notes)
                continue
        async with scope.stage("verify"):
            verdict = await _verify(scope, proposer, proposal, number, started, report)
        scope.add_attempt(
            number,
            verified=verdict.verified,
            notes=verdict.notes,
            staged_paths=_paths(proposal),
            tokens_at_start=started,
            tests=report.line if report else "",
        )
        emit(
            "verifier.verdict", number=number, verified=verdict.verified, notes=_note(verdict.notes)
        )
        _ended(number, "verified" if verdict.verified else "rejected", verdict.notes)
        if verdict.verified:
            return Verified(proposal, verdict.notes, number, tests=report)
        notes = verdict.notes
        if report is not None and report.status == "tampered":
            notes = "\n".join([notes, "", *report.tamper_notes()])
    if checks is not None and scope.tests is not None:
        scope.tests = scope.tests.model_copy(update={"runs": checks.runs})
    return Rejected(notes, tries, turn_limit)


def _note(text: str) -> str:
    return text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 1] + "…"


def _ended(number: int, result: str, notes: str) -> None:
    emit("try.ended", number=number, result=result, notes=_note(notes))


async def _proposed(scope: RunScope, plan: Plan, checks: Checks | None) -> None:
    """Say what a try submitted, and keep a change's diff against its base for the record.

    The base is the checks' tree (the commit the change applies to); without checks the
    change is listed by path only.
    """
    if not isinstance(plan, ChangePlan):
        emit("change.proposed", issues=[item.title for item in plan.items])
        return
    if checks is None:
        emit("change.proposed", paths=sorted(plan.files), files=sorted(plan.files))
        return
    diff = change_diff(plan, await checks.tree.originals(sorted(plan.files)))
    scope.diff = diff.capped(DIFF_CHARS)
    emit(
        "change.proposed",
        paths=[f.path for f in diff.files],
        files=[f"{f.path} (+{f.added} -{f.removed})" for f in diff.files],
        added=sum(f.added for f in diff.files),
        removed=sum(f.removed for f in diff.files),
    )


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
    scope: RunScope,
    proposer: Proposer,
    plan: Plan,
    number: int,
    started: int,
    report: CheckReport | None,
) -> Verdict:
    rt = scope.runtime
    shown = await proposer.verifier_input(plan)
    coverage = shown.coverage if shown.coverage is not None else Coverage()
    verifier = make_verifier_agent(
        rt.call_llm("verifier"),
        rt.agent_model("verifier"),
        shown.tools,
        rt.settings.max_turns("verifier"),
        shown.kind,
    )
    context = "\n\n".join(part for part in (shown.context, *shown.extra) if part)
    try:
        verdict = await run_verifier(
            verifier,
            plan,
            request=shown.request,
            request_label=shown.request_label,
            originals=shown.originals,
            context=context,
            trace=scope.trace,
            instructions=shown.instructions,
            evidence=report.for_verifier() if report is not None else "",
            coverage=coverage,
        )
    except VerifierError as exc:
        exc.cause = exc.cause or rt.usage.failure
        scope.add_attempt(
            number,
            verified=False,
            notes=str(exc)[:2_000],
            staged_paths=_paths(plan),
            tokens_at_start=started,
            tests=report.line if report else "",
        )
        if rt.usage.exceeded:  # the budget stopped the verifier: say so, not "error"
            raise BudgetExceeded(rt.usage.exceeded) from exc
        raise
    unseen = coverage.unseen(plan) if isinstance(plan, ChangePlan) else []
    if verdict.verified and unseen:
        return Verdict(verified=False, notes=_unseen_notes(unseen))
    return verdict


def _unseen_notes(unseen: list[str]) -> str:
    """Why a verdict on a change the verifier did not fully see does not count."""
    return (
        "Not accepted: the verifier approved the change without being shown all of it ("
        + "; ".join(unseen[:10])
        + "), and nothing the verifier has not seen is committed. Keep the change small "
        "enough to be read whole: split large files, or leave generated and data files "
        "out of it."
    )


def _paths(plan: Plan) -> list[str]:
    if isinstance(plan, ChangePlan):
        return sorted(plan.files)
    return [f"issue:{item.title}" for item in plan.items]
