"""The reviewer in the shared attempt loop: its agent, pass prompt, stage and verifier input.

One pass's review is the common `attempt_loop` driving a `ReviewProposer`: the agent
reviews the PR with read-only tools and proposes through the shared staging tools
(`stage_file`, `edit_file`, `unstage_file`, `delete_file`, then `submit_fix` or
`no_changes`); a submitted fix is tested by the loop's `Checks` against the head it applies to, then goes
to the verifier (kind `fix`), and a rejection's notes start the next try, which keeps
the staged files. The maintainers' instructions come from the pull request's base
branch, never from its head.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flyte.ai.agents import Agent

from agent_loop_common.agents import AgentRun
from agent_loop_common.attempts import Declined, Plan, VerifierInput
from agent_loop_common.checks import Checks, run_tests_instructions
from agent_loop_common.repo import RepoSnapshot, repository_instructions
from agent_loop_common.runtime import Runtime
from agent_loop_common.staging import ChangePlan, ChangeStage, StagingPolicy
from agent_loop_common.verify import Coverage
from agent_loop_reviewer._prompts import (
    REVIEWER_NAME,
    PassPrompt,
    render_pass_prompt,
    render_request,
    reviewer_instructions,
)
from agent_loop_reviewer._tools import read_tools, reviewer_tools

__all__ = ["ReviewProposer"]

_NOT_SUBMITTED = (
    "You ended without calling submit_fix or no_changes, so nothing was proposed. Finish "
    "with exactly one of them."
)


@dataclass
class ReviewProposer:
    """The reviewer agent over one pass of one PR (a `Proposer` of the attempt loop)."""

    runtime: Runtime
    prompt_parts: PassPrompt
    head: RepoSnapshot
    base: RepoSnapshot | None = None
    """The pull request's base branch: where the maintainers' instructions are read."""
    checks: Checks | None = None
    """The pass's tests: `run_tests` for the agent, and what its instructions say of them."""
    stage: ChangeStage = field(default_factory=ChangeStage)
    work_stage: str = "review"
    not_submitted: str = _NOT_SUBMITTED
    _agent: Agent | None = None

    @property
    def agent(self) -> Agent:
        if self._agent is None:
            rt, parts = self.runtime, self.prompt_parts
            a = parts.assessment
            instructions = reviewer_instructions()
            if self.checks is not None:
                instructions += "\n\n" + run_tests_instructions(self.checks)
            self._agent = Agent(
                name=REVIEWER_NAME,
                instructions=instructions,
                model=rt.agent_model(),
                tools=reviewer_tools(
                    rt.github,
                    parts.pull,
                    self.head,
                    [*a.people, *a.failing],
                    self.stage,
                    StagingPolicy.from_settings(rt.settings),
                    {item.id for item in a.people},
                    self.checks,
                ),
                max_turns=rt.settings.max_turns("reviewer"),
                call_llm=rt.call_llm("agent"),
                parallel_tool_calls=False,
            )
        return self._agent

    def prompt(self, number: int, notes: str) -> str:
        return render_pass_prompt(
            self.prompt_parts, retry_notes=notes, staged=self.stage.describe()
        )

    def proposal(self, run: AgentRun) -> Plan | Declined | None:
        if self.stage.status == "declined":
            return Declined(self.stage.decline_reason)
        return self.stage.to_plan() if self.stage.submitted else None

    def staged_paths(self) -> list[str]:
        return sorted(self.stage.files)

    def reopen(self) -> None:
        self.stage.reopen()

    async def verifier_input(self, plan: Plan) -> VerifierInput:
        parts = self.prompt_parts
        a = parts.assessment
        coverage = Coverage()
        change = plan if isinstance(plan, ChangePlan) else None
        paths = sorted(_files(plan))
        rules = (
            (await repository_instructions(self.base, paths)).render(level=2)
            if self.base is not None
            else ""
        )
        return VerifierInput(
            kind="fix",
            tools=read_tools(
                self.runtime.github,
                parts.pull,
                self.head,
                [*a.people, *a.failing],
                stage=change,
                staged_by="the proposal",
                log=coverage.reads,
            ),
            request=render_request(parts),
            request_label=f"feedback on PR #{parts.pull.number}",
            originals=await self.head.originals(paths),
            context=f"{parts.pull.title}\n\n{parts.pull.body}",
            instructions=rules,
            coverage=coverage,
        )


def _files(plan: Plan) -> list[str]:
    return list(plan.files) if isinstance(plan, ChangePlan) else []
