"""The builder replayed offline: one issue's build on a snapshot in hand, no GitHub at all.

The benchmark (`agent-loop eval run`) measures the builder by replaying merged work: the
issue's text, the commit the fix was merged onto, and hidden tests from the real fix.
For the measure to mean anything it must be the builder itself, and nothing from after
that commit may reach it. So `replay_build` runs the very `build` a live tick runs (same
agent, tools, prompts, lessons, checks in the sandbox on the base tree, verifier and
attempt loop, up to `AGENT_LOOP_MAX_TRIES` tries) with the problem statement as the
issue, and only the GitHub parts left out: nothing is selected or claimed, nothing is
concluded (no branch, pull request, comment or back-off), and no record is written to
the live memory (the benchmark's results are its record; lessons are only read).

The snapshot must come from a tarball in hand (`RepoSnapshot.from_archive`), so every
read tool, the verifier's reads and the sandbox's tree come from those bytes, and the
runtime should be opened `offline` (its facade refuses every request):
`ReplayedBuild.github_requests` counts what was asked of it anyway.

```python
snapshot = RepoSnapshot.from_archive(tarball, base_sha, base_sha[:7])
async with open_runtime(settings, Role.BUILDER, offline=True) as rt:
    replay = await replay_build(rt, ReplayAsk(number=42, statement=text), snapshot)
```
"""

from __future__ import annotations

import time
from typing import Literal

import structlog
from pydantic import BaseModel, ConfigDict, Field

from agent_loop_builder._build import BuildAsk, LessonChoice, build
from agent_loop_builder._prompts import render_problem
from agent_loop_common.attempts import AttemptResult, Declined, Rejected, Verified
from agent_loop_common.llm import BudgetExceeded
from agent_loop_common.records import Attempt, TestEvidence
from agent_loop_common.repo import RepoSnapshot
from agent_loop_common.runtime import RunScope, Runtime, preflight_model
from agent_loop_common.staging import ChangePlan

__all__ = ["ReplayAsk", "ReplayOutcome", "ReplayedBuild", "replay_build"]

_log = structlog.get_logger(__name__)

ReplayOutcome = Literal[
    "change", "decomposition", "declined", "rejected", "budget_exceeded", "error"
]
"""How a replayed build ended: a verified `change` (the only one with files), a verified
`decomposition` (sub-issues, which fix nothing by themselves), the agent `declined`, every
try `rejected`, the `budget_exceeded`, or an `error` (the model, the verifier, the sandbox)."""


class ReplayAsk(BaseModel):
    """The issue a replay works on."""

    model_config = ConfigDict(frozen=True)

    number: int = Field(ge=0)
    """The issue's number, as the prompts name it (0 when unknown: a SWE-bench instance
    made elsewhere names no issue, and the prompts then call it "the issue")."""
    statement: str
    """The problem statement: the issue's title and body as they were, in one text."""
    lessons: LessonChoice = LessonChoice("all")
    """Which lessons from memory the build is shown (`on` by default)."""


class ReplayedBuild(BaseModel):
    """What a replayed build produced, and what it cost."""

    outcome: ReplayOutcome
    reason: str = ""
    """Why nothing was produced (the decline, the last notes, the error)."""
    files: dict[str, str | None] = Field(default_factory=dict[str, str | None])
    """The verified change: path -> full new content, `None` for a deletion (as a diff
    against the base: the benchmark's `diff_files` of the snapshot and these)."""
    tries: int = 0
    """Tries made (the attempt loop's)."""
    attempts: list[Attempt] = Field(default_factory=list[Attempt])
    """Each try with the verifier's verdict and notes and the tests' line."""
    tests: TestEvidence | None = None
    """The visible tests' evidence on the last change checked (base vs change)."""
    tokens_in: int = 0
    tokens_out: int = 0
    llm_calls: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    """Wall time of the replay."""
    stage_seconds: dict[str, float] = Field(default_factory=dict[str, float])
    lesson_ids: list[str] = Field(default_factory=list[str])
    """The lessons that reached the prompt."""
    github_requests: int = 0
    """Requests the runtime's facade was asked to send (0 for an honest replay)."""


async def replay_build(runtime: Runtime, ask: ReplayAsk, snapshot: RepoSnapshot) -> ReplayedBuild:
    """Build `ask` on `snapshot` as a live tick would, writing nothing anywhere.

    Never raises for the run's own failures: a model, verifier, sandbox or budget
    failure is a `ReplayedBuild` with its outcome and reason.

    Raises:
        ValueError: `snapshot` reads GitHub (it must come from `from_archive`).
    """
    if not snapshot.offline:
        raise ValueError("a replay reads a snapshot built from a tarball in hand only")
    scope = RunScope(runtime=runtime, started_at=runtime.clock())
    started = time.perf_counter()
    build_ask = BuildAsk(
        number=ask.number,
        issue_text=render_problem(ask.number, ask.statement),
        request=ask.statement,
        lessons=ask.lessons,
    )
    try:
        preflight_model(runtime.settings)
        runtime.warm_model()
        result: AttemptResult | None = await build(scope, build_ask, snapshot)
        outcome, reason = _ended(result)
    except BudgetExceeded as exc:
        result, outcome, reason = None, "budget_exceeded", str(exc)
    except Exception as exc:
        _log.warning("builder.replay_failed", error=repr(exc))
        result, outcome, reason = None, "error", f"{type(exc).__name__}: {exc}"
    if runtime.usage.exceeded and outcome != "error":
        outcome, reason = "budget_exceeded", runtime.usage.exceeded
    files: dict[str, str | None] = {}
    if isinstance(result, Verified) and isinstance(result.plan, ChangePlan):
        files = dict(result.plan.files)
    usage = runtime.usage
    return ReplayedBuild(
        outcome=outcome,
        reason=reason,
        files=files,
        tries=len(scope.attempts),
        attempts=scope.attempts,
        tests=scope.tests,
        tokens_in=usage.prompt_tokens,
        tokens_out=usage.completion_tokens,
        llm_calls=usage.llm_calls,
        cost_usd=usage.cost_usd,
        seconds=round(time.perf_counter() - started, 3),
        stage_seconds=scope.stage_seconds,
        lesson_ids=scope.lesson_ids,
        github_requests=runtime.github.stats.total,
    )


def _ended(result: AttemptResult) -> tuple[ReplayOutcome, str]:
    match result:
        case Verified(plan=ChangePlan()):
            return "change", ""
        case Verified():
            return "decomposition", "the builder split the issue into sub-issues"
        case Declined(reason=reason):
            return "declined", reason
        case Rejected(notes=notes, turn_limit=turn_limit):
            why = "the last try ran out of turns" if turn_limit else "no try was verified"
            return "rejected", f"{why}: {notes}"
