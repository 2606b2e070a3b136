"""What the attempt loop returns, raises, and asks of the agent that plugs into it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from flyte.ai.agents import Agent

from agent_loop_common.agents import AgentRun
from agent_loop_common.checks import CheckReport
from agent_loop_common.llm import AgentRunFailed
from agent_loop_common.repo import ReadTool
from agent_loop_common.staging import ChangePlan, DecompositionPlan
from agent_loop_common.verify import Coverage, VerifierKind

__all__ = [
    "AgentFailed",
    "AttemptResult",
    "Declined",
    "Plan",
    "Proposer",
    "Rejected",
    "Verified",
    "VerifierInput",
]

Plan = ChangePlan | DecompositionPlan
"""A submitted proposal: files to change, or sub-issues to file."""


class AgentFailed(AgentRunFailed):
    """The agent's own model call failed (provider error), so the try has no proposal."""


@dataclass(frozen=True)
class Verified:
    """A try's proposal passed the verifier."""

    plan: Plan
    notes: str
    """The verifier's notes on the accepted try."""
    tries: int
    """Tries used, this one included."""
    tests: CheckReport | None = None
    """What the tests said about the accepted change (`None`: no checks, a decomposition)."""


@dataclass(frozen=True)
class Declined:
    """The agent chose not to act (`skip_issue`, `no_changes`), with its reason."""

    reason: str
    tries: int = 0


@dataclass(frozen=True)
class Rejected:
    """No try passed: the verifier rejected each submission, or the agent never submitted."""

    notes: str
    """The last try's feedback (the verifier's notes, or that nothing was submitted)."""
    tries: int
    turn_limit: bool = False
    """The last try ran out of model turns without submitting."""


AttemptResult = Verified | Declined | Rejected


@dataclass(frozen=True)
class VerifierInput:
    """What the verifier of one proposal is shown."""

    kind: VerifierKind
    tools: Sequence[ReadTool]
    """Read-only tools (never staging tools)."""
    request: str
    """What was asked (the issue, or the feedback to address)."""
    request_label: str
    originals: Mapping[str, str | None] | None = None
    """Contents before the change, per path, so the change renders as diffs."""
    context: str = ""
    extra: Sequence[str] = field(default_factory=tuple[str, ...])
    """Further background blocks shown to the verifier (fenced as untrusted data); the
    tests' results are added by the attempt loop itself."""
    instructions: str = ""
    """The maintainers' instructions section (`RepoInstructions.render(level=2)`), read
    from the base branch."""
    coverage: Coverage | None = None
    """Whose `reads` the verifier's `read_file` fills (`repo_tools(..., log=...)`), so
    pages of the proposed tree it read count as shown; `None`: only the prompt counts."""


class Proposer(Protocol):
    """An agent as the attempt loop drives it (the builder's or the reviewer's)."""

    @property
    def agent(self) -> Agent:
        """The agent that proposes (read tools plus staging tools bound to its stages)."""
        ...

    @property
    def work_stage(self) -> str:
        """The run stage its tries are timed under (`build`, `review`)."""
        ...

    @property
    def not_submitted(self) -> str:
        """The feedback after a try that ended without submitting."""
        ...

    def prompt(self, number: int, notes: str) -> str:
        """The user message of try `number` (`notes`: the last try's feedback, or "")."""
        ...

    def proposal(self, run: AgentRun) -> Plan | Declined | None:
        """What the try left in the stages: a submitted plan, a decline, or nothing."""
        ...

    def staged_paths(self) -> list[str]:
        """What is staged now (for the try's record)."""
        ...

    def reopen(self) -> None:
        """Keep the stages' content but allow another submission (before a retry)."""
        ...

    async def verifier_input(self, plan: Plan) -> VerifierInput:
        """What the verifier is shown for `plan`."""
        ...
