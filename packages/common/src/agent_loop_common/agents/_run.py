"""Running one `flyte.ai.agents.Agent` and keeping its trace.

`run_agent` is the single place the pipelines call an agent from: it installs a
`TraceCollector` on the `agent_progress_cb` context variable for the duration of the
run (chained after any callback already installed, so an outer run or a UI still sees
the events), and returns the `AgentResult` together with the flat trace and the wall
time. It does not interpret the result: a model failure stays in `result.error`, and
what the agent proposed is read from its stage, not from its text.

It is also where every agent's work becomes live progress (`agent_loop_common.progress`):
each tool call as it starts (`agent.tool`, with the argument a person recognises it by)
and each step of the trace as it finishes (`agent.step`), so `agent-loop run`, the demo
and the report show the verifier's reads as well as the builder's edits.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from flyte.ai.agents import Agent, AgentEvent, AgentResult, MemoryStore, agent_progress_cb

from agent_loop_common.agents._trace import LLM_STEP, TraceCollector, short_args
from agent_loop_common.progress import current_run, emit, subject_of
from agent_loop_common.records import TraceStep
from agent_loop_common.staging import REFUSAL_PREFIX

__all__ = ["AgentRun", "AgentStop", "EventHook", "run_agent"]

AgentStop = Literal["answered", "turn_limit", "model_error"]
"""How an agent run ended: a final answer, out of turns, or a failed model call."""

EventHook = Callable[[AgentEvent], Awaitable[None]]
"""An extra async subscriber to the run's events (logs, a live report)."""


@dataclass(frozen=True)
class AgentRun:
    """The outcome of one agent run: the SDK's result plus what happened along the way."""

    result: AgentResult
    """`summary` (final text), `error` (empty on success), `attempts` (model turns)."""
    trace: list[TraceStep] = field(default_factory=list[TraceStep])
    """Model turns and tool calls in order (see `TraceCollector`)."""
    elapsed_ms: int = 0
    """Wall time of the whole run."""
    stop: AgentStop = "answered"
    """How the loop ended, read from its events (never from the error's wording)."""

    @property
    def ok(self) -> bool:
        """Whether the loop finished with a final answer (no model error, no turn limit)."""
        return self.result.error == ""

    @property
    def tool_steps(self) -> list[TraceStep]:
        """The trace without the model turns."""
        return [step for step in self.trace if step.tool != LLM_STEP]

    @property
    def tools_called(self) -> list[str]:
        """Names of the tools called, in order."""
        return [step.tool for step in self.tool_steps]


async def run_agent(
    agent: Agent,
    prompt: str,
    *,
    memory: list[dict[str, Any]] | MemoryStore | None = None,
    on_event: EventHook | None = None,
    refusal_prefixes: Sequence[str] = (REFUSAL_PREFIX,),
    include_llm_steps: bool = True,
) -> AgentRun:
    """Run `agent` on `prompt` and collect its trace.

    Args:
        agent: The agent to run (its `call_llm` decides which model answers).
        prompt: The user message that starts the run.
        memory: Prior transcript or store, passed through to `Agent.run`.
        on_event: Also called with every event of this run (after the collector).
        refusal_prefixes: Tool results starting with these are failed steps.
        include_llm_steps: Add an `llm` step per model turn.

    Returns:
        The result, the trace and the elapsed time. Never raises for a model or tool
        failure (the SDK reports those in `result.error` and the tool results).
    """
    who = _who(agent.name)

    def finished(step: TraceStep) -> None:
        emit("agent.step", agent=who, tool=step.tool, ok=step.ok, ms=step.ms, error=step.error)

    collector = TraceCollector(
        agent_name=agent.name,
        refusal_prefixes=refusal_prefixes,
        include_llm_steps=include_llm_steps,
        on_step=finished,
        label=who,
    )
    outer = agent_progress_cb.get()

    async def callback(event: AgentEvent) -> None:
        seen = collector.events
        await collector(event)
        if event.type == "tool_start" and collector.events > seen:  # this run's own call
            _tool_started(who, event.data)
        if on_event is not None and event.run_id in ("", collector.run_id):
            await on_event(event)
        if outer is not None:
            await outer(event)

    token = agent_progress_cb.set(callback)
    started = time.monotonic()
    try:
        result: AgentResult = await agent.run.aio(prompt, memory)
    finally:
        agent_progress_cb.reset(token)
    elapsed = int((time.monotonic() - started) * 1000)
    stop: AgentStop = "answered"
    if result.error:
        stop = "model_error" if collector.model_failed else "turn_limit"
    return AgentRun(result=result, trace=collector.steps, elapsed_ms=elapsed, stop=stop)


def _who(name: str) -> str:
    """Who an agent is on a progress line: `verifier`, else the run's role (`builder`)."""
    if name.startswith("verifier"):
        return "verifier"
    run = current_run()
    return run.role if run is not None and run.role else name


def _tool_started(who: str, data: dict[str, Any]) -> None:
    raw: Any = data["args"] if "args" in data else data.get("code", "")
    shown = short_args(raw)
    arguments: dict[str, Any] = cast("dict[str, Any]", raw) if isinstance(raw, dict) else {}
    emit(
        "agent.tool",
        agent=who,
        tool=str(data.get("tool", "")),
        subject=subject_of(arguments),
        args=shown,
    )
