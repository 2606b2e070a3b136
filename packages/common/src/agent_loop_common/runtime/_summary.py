"""The typed contract between an agent's tick and whoever fired it (CLI, gateway, demo).

Every agent's scheduled task returns a `TickSummary`: the same fields for the builder,
the reviewer and the distiller, so a caller never guesses a shape. It crosses the task
boundary as JSON (a pydantic model, never pickled), and `agent-loop run --json` prints
exactly it. Each agent package exports a `run_once` of the `AgentEntry` shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agent_loop_common.records import Outcome, Role

if TYPE_CHECKING:  # the idle tick's lean path imports this module: no githubkit, no Flyte
    from agent_loop_common.records import RunRecord
    from agent_loop_common.runtime._interrupt import Interrupt
    from agent_loop_common.runtime._pause import Pause
    from agent_loop_common.settings import Settings

__all__ = [
    "IDLE",
    "PAUSED",
    "AgentEntry",
    "TickOutcome",
    "TickSummary",
    "summarize",
    "summarize_many",
]

IDLE: Literal["idle"] = "idle"
"""The outcome of a tick that looked for work and found none (no record, no claim)."""

PAUSED: Literal["paused"] = "paused"
"""The outcome of a tick that started no new work because the GitHub rate-limit reserve
was reached (no record, no claim, no back-off; `note` says why, `details` until when)."""

TickOutcome = Outcome | Literal["idle", "paused"]
"""A record's outcome, or `idle`, or `paused`."""

_NUMBER = re.compile(r"/(?:pull|issues)/(\d+)")


class TickSummary(BaseModel):
    """What one tick did, in the same shape for every agent."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event: Literal["tick.summary"] = "tick.summary"
    """What this object is among `agent-loop run --json`'s lines, each keyed by `event`:
    the progress events (`run.claimed`, `tests.ran`, ..., `run.ended`) as they happen,
    then this summary, the last line."""
    role: Role
    """Which agent ticked."""
    outcome: TickOutcome
    """The run record's outcome, `idle` when nothing needed work, or `paused` when the
    GitHub rate-limit reserve held new work back."""
    run_id: str = ""
    """The run's id (its record's key); empty for an idle tick."""
    target: str = ""
    """What the run worked on: `issue#3`, `pr#4` or `repo`; empty for an idle tick."""
    pr_url: str = ""
    """The pull request opened or updated."""
    issue_urls: list[str] = Field(default_factory=list[str])
    """Issues filed (a decomposition's sub-issues)."""
    error: str = ""
    """Why the run did not succeed (the record's error)."""
    note: str = ""
    """One line for people: why the tick was idle or paused, or what the pass did."""
    tries: int = 0
    """Tries of the attempt loop (verifier verdicts included)."""
    llm_calls: int = 0
    """Model calls of the run (the verifier's included)."""
    tokens: int = 0
    """Prompt plus completion tokens of the run."""
    tokens_cache_read: int = 0
    """Of the prompt tokens, those read from the provider's prompt cache."""
    cost_usd: float = 0.0
    """Estimated cost of the run's model calls, in US dollars (0 for a replayed,
    scripted or unpriced model)."""
    github_requests: int = 0
    """GitHub requests of the run, its durable writes included."""
    details: dict[str, str] = Field(default_factory=dict[str, str])
    """Figures only one agent has (the distiller: `pass`, `ingested`, `lessons`)."""
    report: str = ""
    """The tick's Flyte report (HTML) on this machine: `<AGENT_LOOP_HOME>/reports/<role>-<run id>.html` after a local tick; empty on a cluster (see the run in the Flyte UI)."""
    tests: list[str] = Field(default_factory=list[str])
    """The tests' verdict on each try whose change was tested, in order, e.g. `try 1
    failed: 1 failed, 2 passed (base: 2 passed)`; empty when no change was tested."""
    repo: str = ""
    """The repository (`owner/name`) the run worked on; empty for an idle tick."""
    runs: list[TickSummary] = Field(default_factory=list["TickSummary"])
    """Each run of a tick that worked several targets (many repositories, or
    `AGENT_LOOP_<ROLE>_PARALLEL` above 1), in order; empty when one run or none. The
    fields above then describe the lead run (the first that worked and did not fail,
    else the first that worked), `note` lists every run, and the counts (`tries`,
    `llm_calls`, `tokens`, `tokens_cache_read`, `cost_usd`, `github_requests`) are the
    sums over all runs."""

    @classmethod
    def of_record(
        cls, record: RunRecord, *, note: str = "", details: Mapping[str, str] | None = None
    ) -> TickSummary:
        """The summary of a recorded run."""
        target = record.target
        named = f"{target.kind.value}#{target.number}" if target.number else target.kind.value
        return cls(
            role=record.role,
            outcome=record.outcome,
            run_id=record.run_id,
            target=named,
            pr_url=record.links.pr_url,
            issue_urls=list(record.links.issue_urls),
            error=record.error,
            note=note,
            tries=len(record.attempts),
            llm_calls=record.usage.llm_calls,
            tokens=record.usage.tokens,
            tokens_cache_read=record.usage.tokens_cache_read,
            cost_usd=record.usage.cost_usd,
            github_requests=record.github.requests,
            details=dict(details or {}),
            tests=[f"try {a.number} {a.tests}" for a in record.attempts if a.tests],
            repo=record.repo,
        )

    @property
    def idle(self) -> bool:
        """The tick found nothing to do."""
        return self.outcome == IDLE

    @property
    def paused(self) -> bool:
        """The rate-limit reserve held new work back (not a failure: exit code 0)."""
        return self.outcome == PAUSED

    @property
    def failed(self) -> bool:
        """The run (or any run of the tick) ended in outcome `error` (the CLI exits 1)."""
        return self.outcome == Outcome.ERROR or any(r.failed for r in self.runs)

    @property
    def preflight_failed(self) -> bool:
        """The run (or any run of the tick) never reached its target: a wrong repository,
        a refused token, a missing issue or PR, an unreachable model (the CLI exits 2)."""
        return self.outcome == Outcome.PREFLIGHT_FAILED or any(
            r.preflight_failed for r in self.runs
        )

    @property
    def interrupted(self) -> bool:
        """The operator stopped the run (or a run of the tick) at a safe point."""
        return self.outcome == Outcome.INTERRUPTED or any(r.interrupted for r in self.runs)

    @property
    def links(self) -> list[str]:
        """URLs of what the tick made or updated (PR first, then issues)."""
        return [u for u in (self.pr_url, *self.issue_urls) if u]

    @property
    def made(self) -> list[int]:
        """Numbers of the PR and issues in `links`."""
        return [int(n) for url in self.links for n in _NUMBER.findall(url)]

    @property
    def target_number(self) -> int | None:
        """The issue or PR number of `target`, if it has one."""
        _, _, number = self.target.partition("#")
        return int(number) if number.isdigit() else None

    @property
    def target_label(self) -> str:
        """`issue #3`, `PR #4` or `repo`, for people."""
        kind, _, number = self.target.partition("#")
        if not number:
            return kind
        return f"{'PR' if kind == 'pr' else kind} #{number}"


def summarize(
    role: Role,
    record: RunRecord | None,
    *,
    idle: str,
    note: str = "",
    details: Mapping[str, str] | None = None,
    paused: Pause | None = None,
    interrupted: Interrupt | None = None,
) -> TickSummary:
    """The one summary of a tick: of its record, paused (with why and until when),
    interrupted before it claimed anything, or idle (with the agent's `idle` note)."""
    if record is None and interrupted is not None:
        return TickSummary(
            role=role,
            outcome=Outcome.INTERRUPTED,
            note=f"stopped by the operator ({interrupted.name}) before it claimed anything: "
            "nothing to release, no run record",
            details=dict(details or {}),
        )
    if record is None and paused is not None:
        extra = {"resumes_after": paused.until.isoformat()} if paused.until else {}
        return TickSummary(
            role=role, outcome=PAUSED, note=paused.note, details={**(details or {}), **extra}
        )
    if record is None:
        return TickSummary(role=role, outcome=IDLE, note=note or idle, details=dict(details or {}))
    return TickSummary.of_record(record, note=note, details=details)


def summarize_many(role: Role, results: Sequence[TickSummary], *, idle: str) -> TickSummary:
    """The one summary of a tick that ran several runs (see `TickSummary.runs`).

    One result is returned as it is, so a tick with one run reads exactly as before; no
    result, or only idle ones, is an idle tick.
    """
    if len(results) == 1:
        return results[0]
    worked = [r for r in results if not r.idle and not r.paused]
    if not worked:  # nothing was worked: the reserve's reason, else an idle tick
        held = next((r for r in results if r.paused), None)
        return held if held is not None else summarize(role, None, idle=idle)
    lead = next((r for r in worked if not (r.failed or r.preflight_failed)), worked[0])
    made = ", ".join(f"{r.repo} {r.target_label}: {r.outcome}" for r in worked)
    runs = "1 run" if len(worked) == 1 else f"{len(worked)} runs"
    return lead.model_copy(
        update={
            "note": f"{runs} ({made})",
            "tries": sum(r.tries for r in results),
            "llm_calls": sum(r.llm_calls for r in results),
            "tokens": sum(r.tokens for r in results),
            "tokens_cache_read": sum(r.tokens_cache_read for r in results),
            "cost_usd": sum(r.cost_usd for r in results),
            "github_requests": sum(r.github_requests for r in results),
            "runs": list(results),
        }
    )


class AgentEntry(Protocol):
    """`run_once` of every agent package: fire one tick of its scheduled task."""

    def __call__(
        self,
        *,
        target: int | None = None,
        remote: bool = False,
        settings: Settings | None = None,
        retry_now: bool = False,
    ) -> TickSummary:
        """Run one tick (Flyte local mode, or the deployed task with `remote`).

        Args:
            target: Work on this issue (builder) or pull request (reviewer) only; the
                distiller takes none.
            remote: Fire the deployed task on the configured cluster.
            settings: The configuration; `load_settings()` by default.
            retry_now: Ignore the target's back-off (the operator's reset).
        """
        ...
