"""The builder in the shared attempt loop: its agent, prompts, stages and verifier input.

One issue's build is the common `attempt_loop` driving a `BuildProposer`: the builder
agent stages either a change (`ChangeStage`) or a decomposition (`DecompositionStage`)
and submits one; the loop tests a change (`Checks`), then the verifier of the matching
kind judges it. Both stages live for the whole run, so a retry starts from the previous
proposal and gets the notes. The agent can try its change with `run_tests`; the
verifier reads the tree as the change would leave it and the maintainers' instructions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from flyte.ai.agents import Agent

from agent_loop_builder._prompts import (
    BUILDER_NAME,
    builder_instructions,
    issue_name,
    retry_prompt,
)
from agent_loop_builder._tools import builder_tools, verifier_tools
from agent_loop_common.agents import AgentRun
from agent_loop_common.attempts import Declined, Plan, VerifierInput
from agent_loop_common.checks import Checks, run_tests_instructions
from agent_loop_common.repo import RepoSnapshot, repository_instructions
from agent_loop_common.runtime import Runtime
from agent_loop_common.staging import ChangePlan, ChangeStage, DecompositionStage, StagingPolicy
from agent_loop_common.verify import Coverage

__all__ = ["BuildJob", "BuildProposer"]

_SUBMITS = {"submit_implementation": "change", "submit_decomposition": "decomposition"}

_NOT_SUBMITTED = (
    "You finished without submitting. Stage the change and call "
    "submit_implementation (or stage sub-issues and call submit_decomposition)."
)

PlanKind = Literal["change", "decomposition"]


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
    snapshot: RepoSnapshot
    may_decompose: bool = True
    """Whether the issue may be split into sub-issues (its depth allows it)."""


@dataclass
class BuildProposer:
    """The builder agent over one issue (a `Proposer` of the attempt loop)."""

    runtime: Runtime
    job: BuildJob
    checks: Checks | None = None
    """The run's tests: `run_tests` for the agent, and what its instructions say of them."""
    change: ChangeStage = field(default_factory=ChangeStage)
    spec: DecompositionStage = field(default_factory=DecompositionStage)
    work_stage: str = "build"
    not_submitted: str = _NOT_SUBMITTED
    _agent: Agent | None = None
    _last: PlanKind | None = None

    @property
    def agent(self) -> Agent:
        if self._agent is None:
            settings = self.runtime.settings
            instructions = builder_instructions(
                settings.repo, self.job.snapshot.branch, may_decompose=self.job.may_decompose
            )
            if self.checks is not None:
                instructions += "\n\n" + run_tests_instructions(self.checks)
            self._agent = Agent(
                name=BUILDER_NAME,
                instructions=instructions,
                model=self.runtime.agent_model(),
                tools=builder_tools(
                    self.job.issue_text,
                    self.job.snapshot,
                    self.change,
                    self.spec,
                    StagingPolicy.from_settings(settings),
                    self.checks,
                    may_decompose=self.job.may_decompose,
                ),
                max_turns=settings.max_turns("builder"),
                call_llm=self.runtime.call_llm("agent"),
                parallel_tool_calls=False,
            )
        return self._agent

    def prompt(self, number: int, notes: str) -> str:
        if number == 1:
            return self.job.prompt
        what = self._last or (
            "decomposition" if self.spec.items and not self.change.files else "change"
        )
        staged = self.spec.describe() if what == "decomposition" else self.change.describe()
        return retry_prompt(
            self.job.prompt,
            attempt=number,
            tries=self.runtime.settings.max_tries,
            notes=notes,
            staged=staged,
            kind=what,
        )

    def proposal(self, run: AgentRun) -> Plan | Declined | None:
        reason = self.spec.decline_reason or self.change.decline_reason
        if reason:
            return Declined(reason)
        self._last = _submitted(run, self.change, self.spec)
        if self._last == "change":
            return self.change.to_plan()
        if self._last == "decomposition":
            return self.spec.to_plan()
        return None

    def staged_paths(self) -> list[str]:
        return sorted(self.change.files)

    def reopen(self) -> None:
        self.change.reopen()
        self.spec.reopen()

    async def verifier_input(self, plan: Plan) -> VerifierInput:
        job = self.job
        coverage = Coverage()
        change = plan if isinstance(plan, ChangePlan) else None
        paths = sorted(change.files) if change is not None else []
        rules = await repository_instructions(job.snapshot, paths)
        return VerifierInput(
            kind="change" if change is not None else "decomposition",
            tools=verifier_tools(job.issue_text, job.snapshot, change, coverage.reads),
            request=job.request,
            request_label=issue_name(job.number),
            originals=await job.snapshot.originals(paths) if change is not None else None,
            context=job.background,
            instructions=rules.render(level=2),
            coverage=coverage,
        )


def _submitted(run: AgentRun, change: ChangeStage, spec: DecompositionStage) -> PlanKind | None:
    """Which stage stands submitted; if both do, the one submitted last counts."""
    if change.submitted and spec.submitted:
        last = [_SUBMITS[t] for t in run.tools_called if t in _SUBMITS]
        return "decomposition" if last and last[-1] == "decomposition" else "change"
    if change.submitted:
        return "change"
    return "decomposition" if spec.submitted else None
