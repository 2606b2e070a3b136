"""Turning the Agent's progress events into a flat trace of steps.

`flyte.ai.agents.Agent` emits an `AgentEvent` for every model turn and tool call through
the `agent_progress_cb` context variable. `TraceCollector` is such a callback: it pairs
`tool_start` with `tool_end`/`tool_error`, times each model turn, and produces the
`TraceStep`s a run record and the report show. Events carry the id of the run that
emitted them; the collector keeps only its own run's, so a sub-agent called from a tool
(or a concurrent run in the same process) does not leak into the trace.

A tool that refuses a call returns text rather than raising (the staging tools do so
the model can correct itself); results starting with one of `refusal_prefixes` are
recorded as failed steps so the trace shows them.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from flyte.ai.agents import AgentEvent

from agent_loop_common.records import TraceStep
from agent_loop_common.staging import REFUSAL_PREFIX

__all__ = ["LLM_STEP", "TraceCollector", "short_args"]

LLM_STEP = "llm"
"""`TraceStep.tool` of a model turn."""

_VALUE_CHARS = 60
_ERROR_CHARS = 300


def short_args(args: object, limit: int = 200) -> str:
    """A one-line rendering of tool arguments: long strings shortened, then capped.

    Long values (a staged file's content) are cut first so the short ones (its path)
    stay readable within `limit` characters.
    """
    if isinstance(args, dict):
        shown: object = {
            str(k): _short_value(v) for k, v in cast("dict[object, object]", args).items()
        }
    else:
        shown = _short_value(args)
    text = json.dumps(shown, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def _short_value(value: object) -> object:
    if isinstance(value, str) and len(value) > _VALUE_CHARS:
        return f"{value[:_VALUE_CHARS]}…(+{len(value) - _VALUE_CHARS} chars)"
    return value


@dataclass
class _Open:
    tool: str
    args: str
    started: float
    slot: int


class TraceCollector:
    """An `agent_progress_cb` callback that builds the trace of one agent run.

    Args:
        agent_name: Only follow the first run of the agent with this name (its
            `agent_start` event fixes the run id); `None` follows the first run seen.
        refusal_prefixes: Tool results starting with one of these count as failures.
        include_llm_steps: Add one `llm` step per model turn (its duration, and the
            error when the call failed).
        args_chars: Length cap of `TraceStep.args`.
        clock: Monotonic seconds; injectable for tests.
        on_step: Called with each step as soon as it finished (live progress).
        label: Who the steps are by, on each step (`TraceStep.agent`: the run's role or
            `verifier`).
    """

    def __init__(
        self,
        *,
        agent_name: str | None = None,
        refusal_prefixes: Sequence[str] = (REFUSAL_PREFIX,),
        include_llm_steps: bool = True,
        args_chars: int = 200,
        clock: Callable[[], float] = time.monotonic,
        on_step: Callable[[TraceStep], None] | None = None,
        label: str = "",
    ) -> None:
        self._agent_name = agent_name
        self._refusals = tuple(refusal_prefixes)
        self._llm = include_llm_steps
        self._args_chars = args_chars
        self._clock = clock
        self._on_step = on_step
        self._label = label
        self.run_id: str | None = None
        self.events = 0
        self._slots: list[TraceStep | _Open] = []
        self._open: dict[str, deque[_Open]] = {}
        self._turn: tuple[int, float] | None = None
        self._approval_args: dict[str, str] = {}
        self.model_failed = False
        """The run ended inside a model turn: the model call itself failed (not the turn limit)."""

    @property
    def steps(self) -> list[TraceStep]:
        """The trace so far; a step that never finished is shown as failed."""
        return [
            slot
            if isinstance(slot, TraceStep)
            else TraceStep(
                agent=self._label,
                tool=slot.tool,
                args=slot.args,
                ok=False,
                ms=self._ms(slot.started),
                error="did not finish",
            )
            for slot in self._slots
        ]

    async def __call__(self, event: AgentEvent) -> None:
        """Consume one event (the `agent_progress_cb` signature)."""
        if not self._accept(event):
            return
        self.events += 1
        data = event.data
        match event.type:
            case "turn_start":
                self._turn = (int(data.get("turn", 0)), self._clock())
            case "message":
                self._on_message()
            case "agent_end":
                self._on_agent_end(data)
            case "tool_start":
                self._on_tool_start(data)
            case "tool_end":
                self._on_tool_end(data)
            case "tool_error":
                self._on_tool_error(data)
            case "approval_request":
                self._approval_args[str(data.get("tool", ""))] = short_args(
                    data.get("args", {}), self._args_chars
                )
            case "approval_decision":
                self._on_approval_decision(data)
            case _:
                pass

    def _accept(self, event: AgentEvent) -> bool:
        if self.run_id is None:
            if event.type != "agent_start":
                return False
            if self._agent_name is not None and event.agent != self._agent_name:
                return False
            self.run_id = event.run_id
            return True
        return event.run_id in ("", self.run_id)

    def _ms(self, started: float) -> int:
        return max(int((self._clock() - started) * 1000), 0)

    def _on_message(self) -> None:
        if self._turn is not None and self._llm:
            turn, started = self._turn
            self._add(
                TraceStep(
                    agent=self._label,
                    tool=LLM_STEP,
                    args=f"turn {turn}",
                    ok=True,
                    ms=self._ms(started),
                )
            )
        self._turn = None

    def _on_agent_end(self, data: dict[str, Any]) -> None:
        # a turn that started but produced no message: the model call itself failed
        self.model_failed = self._turn is not None and bool(data.get("error"))
        if self._turn is not None and self._llm:
            turn, started = self._turn
            error = str(data.get("error") or "model call failed")[:_ERROR_CHARS]
            self._add(
                TraceStep(
                    agent=self._label,
                    tool=LLM_STEP,
                    args=f"turn {turn}",
                    ok=False,
                    ms=self._ms(started),
                    error=error,
                )
            )
        self._turn = None

    def _on_tool_start(self, data: dict[str, Any]) -> None:
        tool = str(data.get("tool", ""))
        args = data["args"] if "args" in data else data.get("code", "")
        pending = _Open(tool, short_args(args, self._args_chars), self._clock(), len(self._slots))
        self._slots.append(pending)
        self._open.setdefault(tool, deque()).append(pending)

    def _finish(self, tool: str, *, ok: bool, error: str) -> None:
        queue = self._open.get(tool)
        if not queue:
            # no start event: an unknown tool, or a call refused before it started
            args = self._approval_args.pop(tool, "")
            self._add(TraceStep(agent=self._label, tool=tool, args=args, ok=ok, ms=0, error=error))
            return
        pending = queue.popleft()
        step = TraceStep(
            agent=self._label,
            tool=tool,
            args=pending.args,
            ok=ok,
            ms=self._ms(pending.started),
            error=error,
        )
        self._slots[pending.slot] = step
        if self._on_step is not None:
            self._on_step(step)

    def _add(self, step: TraceStep) -> None:
        self._slots.append(step)
        if self._on_step is not None:
            self._on_step(step)

    def _on_tool_end(self, data: dict[str, Any]) -> None:
        result = str(data.get("result", ""))
        refused = bool(self._refusals) and result.startswith(self._refusals)
        self._finish(
            str(data.get("tool", "")),
            ok=not refused,
            error=result[:_ERROR_CHARS] if refused else "",
        )

    def _on_tool_error(self, data: dict[str, Any]) -> None:
        error = str(data.get("error") or "tool failed")[:_ERROR_CHARS]
        self._finish(str(data.get("tool", "")), ok=False, error=error)

    def _on_approval_decision(self, data: dict[str, Any]) -> None:
        tool = str(data.get("tool", ""))
        if data.get("approved"):
            self._approval_args.pop(tool, None)
            return
        self._finish(tool, ok=False, error="declined by the approval callback")
