"""`ScriptedModel`: a deterministic `call_llm` that plays a script of model turns.

It stands in for the model at the one seam the Agent offers (`Agent(call_llm=...)`),
so tests drive the real agent loop, the real tools and the real stage. It is strict on
purpose: a call the script did not plan for, a tool the agent does not offer, or a tool
result that does not say what the script expects raises `ScriptMismatch` naming the call
and what was expected. The Agent turns exceptions from `call_llm` into
`AgentResult.error` instead of raising, so every mismatch is also kept in
`ScriptedModel.errors`, and `assert_finished()` re-raises the first one (and checks that
every scripted turn was used): call it at the end of each test.

```python
model = ScriptedModel(
    [
        turn(tool_calls=[call("stage_file", path="a.py", content="x = 1\\n").expecting("Staged")]),
        turn(tool_calls=[call("submit_implementation", title="t", body="b", summary="s")]),
        turn("Done."),
    ],
    routes={"strict verifier": [turn('{"verified": true, "notes": "ok"}')]},
)
```
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

from flyte.ai.agents import LLMMessage

from agent_loop_common.llm import Budget, BudgetExceeded, LLMError, UsageMeter

__all__ = [
    "DEFAULT_ROUTE",
    "RecordedCall",
    "ScriptMismatch",
    "ScriptedCall",
    "ScriptedModel",
    "Turn",
    "call",
    "turn",
]

DEFAULT_ROUTE = ""
"""Route name of the script given positionally (calls that match no marker)."""


class ScriptMismatch(AssertionError):
    """The agent asked the scripted model for something the script did not plan."""


@dataclass(frozen=True)
class ScriptedCall:
    """One tool call the scripted model makes, and what its result must contain."""

    name: str
    arguments: dict[str, Any]
    expect_result: tuple[str, ...] = ()

    def expecting(self, *substrings: str) -> ScriptedCall:
        """The same call, requiring each of `substrings` in the tool result fed back."""
        return replace(self, expect_result=self.expect_result + substrings)


@dataclass(frozen=True)
class Turn:
    """One model reply: text and/or tool calls, its usage, and checks on its input."""

    text: str | None = None
    tool_calls: tuple[ScriptedCall, ...] = ()
    prompt_tokens: int = 100
    completion_tokens: int = 20
    cached_tokens: int = 0
    cost_usd: float | None = None
    error: Exception | None = None
    expect_tool_result_contains: tuple[str, ...] = ()
    expect_in_messages: tuple[str, ...] = ()
    expect_in_system: tuple[str, ...] = ()


def call(name: str, /, **arguments: Any) -> ScriptedCall:
    """A scripted tool call: `call("stage_file", path="a.py", content="...")`."""
    return ScriptedCall(name=name, arguments=arguments)


def turn(
    text: str | None = None,
    tool_calls: Sequence[ScriptedCall] = (),
    *,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    cached_tokens: int = 0,
    cost_usd: float | None = None,
    error: Exception | None = None,
    expect_tool_result_contains: str | Sequence[str] = (),
    expect_in_messages: str | Sequence[str] = (),
    expect_in_system: str | Sequence[str] = (),
) -> Turn:
    """Build a `Turn`.

    Args:
        text: The reply text (the final answer when there are no tool calls).
        tool_calls: Tool calls to make, in order.
        prompt_tokens: Usage recorded for this call (budget tests).
        completion_tokens: Usage recorded for this call.
        cached_tokens: Of `prompt_tokens`, read from the provider's prompt cache, as
            OpenAI reports it (`usage.prompt_tokens_details.cached_tokens`, which
            `serve_chat_model` sends).
        cost_usd: Cost recorded for this call (`None`: unpriced).
        error: Raise this instead of replying (a provider failure).
        expect_tool_result_contains: Substrings the tool results fed into this call
            (those since the previous reply) must contain.
        expect_in_messages: Substrings the conversation so far must contain.
        expect_in_system: Substrings the system prompt must contain.
    """
    return Turn(
        text=text,
        tool_calls=tuple(tool_calls),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cached_tokens=cached_tokens,
        cost_usd=cost_usd,
        error=error,
        expect_tool_result_contains=_tuple(expect_tool_result_contains),
        expect_in_messages=_tuple(expect_in_messages),
        expect_in_system=_tuple(expect_in_system),
    )


def _tuple(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@dataclass(frozen=True)
class RecordedCall:
    """One call the agent made to the scripted model, as it was made."""

    index: int
    """1-based position among all calls to this model."""
    route: str
    """The route that answered (`DEFAULT_ROUTE` for the positional script)."""
    model: str
    system: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered to the model on this call."""
        return [str(t.get("function", {}).get("name", "")) for t in self.tools]

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """The `tool` messages since the last assistant message (this turn's input)."""
        out: list[dict[str, Any]] = []
        for message in reversed(self.messages):
            if message.get("role") != "tool":
                break
            out.insert(0, message)
        return out


class ScriptedModel:
    """A strict, scripted `call_llm` (see the module docstring).

    Args:
        script: Turns for calls that match no route marker.
        routes: Marker -> turns: a call is answered from the first route whose marker
            occurs in its system prompt (e.g. a phrase of the verifier's instructions),
            so one model can serve an agent and its verifier. Separate instances per
            agent work as well.
        name: Shown in error messages.
        usage: When given, each answered call is recorded on it (tokens and cost).
        budget: When given with `usage`, checked before each call exactly as the real
            model call does, raising `BudgetExceeded`.
        check_tool_names: Refuse a scripted call to a tool the agent does not offer
            (switch off to script a model that hallucinates a tool name).
    """

    def __init__(
        self,
        script: Sequence[Turn] = (),
        *,
        routes: Mapping[str, Sequence[Turn]] | None = None,
        name: str = "scripted",
        usage: UsageMeter | None = None,
        budget: Budget | None = None,
        check_tool_names: bool = True,
    ) -> None:
        self.name = name
        self.check_tool_names = check_tool_names
        self.usage = usage
        self.budget = budget
        self._scripts: dict[str, list[Turn]] = {
            marker: list(turns) for marker, turns in (routes or {}).items()
        }
        self._has_default = bool(script) or not routes
        self._scripts[DEFAULT_ROUTE] = list(script)
        self._used: dict[str, int] = dict.fromkeys(self._scripts, 0)
        self._expected_results: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._ids = 0
        self.calls: list[RecordedCall] = []
        self.errors: list[ScriptMismatch] = []

    def calls_for(self, route: str = DEFAULT_ROUTE) -> list[RecordedCall]:
        """The recorded calls answered by `route`."""
        return [c for c in self.calls if c.route == route]

    def remaining(self) -> dict[str, int]:
        """Unused turns per route."""
        return {route: len(turns) - self._used[route] for route, turns in self._scripts.items()}

    def assert_finished(self) -> None:
        """Raise the first mismatch seen, or `ScriptMismatch` if turns were left unused."""
        if self.errors:
            raise self.errors[0]
        left = {route or "(default)": n for route, n in self.remaining().items() if n}
        if left:
            raise ScriptMismatch(
                f"ScriptedModel {self.name!r}: scripted turns were never used: {left}."
            )

    async def __call__(
        self,
        model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
    ) -> LLMMessage:
        """Answer one call from the script (the `flyte.ai.agents.LLMCallable` shape)."""
        route = self._route(system)
        recorded = RecordedCall(
            index=len(self.calls) + 1,
            route=route if route is not None else "?",
            model=model,
            system=system,
            messages=copy.deepcopy(messages),
            tools=copy.deepcopy(tools or []),
        )
        self.calls.append(recorded)
        if route is None:
            markers = [m for m in self._scripts if m]
            self._fail(
                recorded,
                f"its system prompt contains none of the route markers {markers} and there is no default script",
            )
        self._check_budget()
        script = self._scripts[route]
        position = self._used[route]
        if position >= len(script):
            self._fail(
                recorded,
                f"the script has no turn left (it had {len(script)}); the agent wanted another turn",
            )
        step = script[position]
        self._used[route] = position + 1
        self._check_inputs(recorded, step, position + 1)
        if step.error is not None:
            if self.usage is not None and isinstance(step.error, LLMError):
                self.usage.failure = step.error  # as the real model call keeps it
            raise step.error
        if self.usage is not None:
            self.usage.record(
                model,
                prompt_tokens=step.prompt_tokens,
                completion_tokens=step.completion_tokens,
                cost_usd=step.cost_usd,
                cache_read_tokens=step.cached_tokens,
            )
        return self._reply(recorded, step, position + 1)

    def _route(self, system: str) -> str | None:
        for marker in self._scripts:
            if marker and marker in system:
                return marker
        return DEFAULT_ROUTE if self._has_default else None

    def _check_budget(self) -> None:
        if self.usage is None:
            return
        if self.usage.exceeded is not None:
            raise BudgetExceeded(self.usage.exceeded)
        if self.budget is not None and (reason := self.budget.exceeded_by(self.usage)) is not None:
            self.usage.exceeded = reason
            raise BudgetExceeded(reason)

    def _check_inputs(self, recorded: RecordedCall, step: Turn, number: int) -> None:
        where = f"turn {number} of route {recorded.route or '(default)'!r}"
        results = recorded.tool_results
        for message in results:
            expected = self._expected_results.pop(str(message.get("tool_call_id")), None)
            if expected is None:
                continue
            tool, substrings = expected
            content = str(message.get("content", ""))
            for sub in substrings:
                if sub not in content:
                    self._fail(
                        recorded,
                        f"the result of the scripted {tool!r} call should contain {sub!r} but was {content[:500]!r}",
                    )
        fed_back = "\n".join(str(m.get("content", "")) for m in results)
        for sub in step.expect_tool_result_contains:
            if sub not in fed_back:
                self._fail(
                    recorded,
                    f"{where} expects the tool results fed back to contain {sub!r}; they were {fed_back[:500]!r}",
                )
        conversation = json.dumps(recorded.messages, ensure_ascii=False)
        for sub in step.expect_in_messages:
            if sub not in conversation and not any(
                sub in str(m.get("content", "")) for m in recorded.messages
            ):
                self._fail(recorded, f"{where} expects the conversation to contain {sub!r}")
        for sub in step.expect_in_system:
            if sub not in recorded.system:
                self._fail(recorded, f"{where} expects the system prompt to contain {sub!r}")
        offered = set(recorded.tool_names)
        for scripted in step.tool_calls if self.check_tool_names else ():
            if scripted.name not in offered:
                self._fail(
                    recorded,
                    f"{where} calls tool {scripted.name!r}, which the agent does not offer (offered: {sorted(offered)})",
                )

    def _reply(self, recorded: RecordedCall, step: Turn, number: int) -> LLMMessage:
        tool_calls: list[dict[str, Any]] = []
        for scripted in step.tool_calls:
            self._ids += 1
            call_id = f"call_{self._ids}"
            if scripted.expect_result:
                self._expected_results[call_id] = (scripted.name, scripted.expect_result)
            tool_calls.append(
                {
                    "id": call_id,
                    "name": scripted.name,
                    "arguments": copy.deepcopy(scripted.arguments),
                }
            )
        raw = {
            "scripted": self.name,
            "route": recorded.route,
            "turn": number,
            "usage": {
                "prompt_tokens": step.prompt_tokens,
                "completion_tokens": step.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": step.cached_tokens},
            },
            "cost_usd": step.cost_usd,
        }
        return LLMMessage(content=step.text or "", tool_calls=tool_calls, raw=raw)

    def _fail(self, recorded: RecordedCall, problem: str) -> NoReturn:
        last = recorded.messages[-1] if recorded.messages else {}
        error = ScriptMismatch(
            f"ScriptedModel {self.name!r}: unexpected call #{recorded.index}: {problem}. "
            f"Last message: role={last.get('role')!r} content={str(last.get('content', ''))[:300]!r}."
        )
        self.errors.append(error)
        raise error
