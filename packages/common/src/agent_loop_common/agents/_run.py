"""Running one `flyte.ai.agents.Agent` and keeping its trace.

`run_agent` is the single place the pipelines call an agent from: it installs a
`TraceCollector` on the `agent_progress_cb` context variable for the duration of the
run (chained after any callback already installed, so an outer run or a UI still sees
the events), and returns the `AgentResult` together with the flat trace and the wall
time. It does not interpret the result: a model failure stays in `result.error`, and
what the agent proposed is read from its stage, not from its text.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from flyte.ai.agents import Agent, AgentEvent, AgentResult, MemoryStore, agent_progress_cb

from agent_loop_common.agents._trace import LLM_STEP, TraceCollector
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
    collector = TraceCollector(
        agent_name=agent.name,
        refusal_prefixes=refusal_prefixes,
        include_llm_steps=include_llm_steps,
    )
    outer = agent_progress_cb.get()

    async def callback(event: AgentEvent) -> None:
        await collector(event)
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
