"""`InstantModel`: a stateless model that takes any builder run to a verified change.

`ScriptedModel` plays one script in order, so runs working at the same time would
take each other's turns. This one decides each answer from the conversation alone, so
any number of concurrent runs (a tick's parallel slots, a benchmark over many
repositories) each get the same few turns: the builder stages one file named after its
issue and submits it, the verifier passes it. It answers in no time and uses no network.
"""

from __future__ import annotations

import re
from typing import Any

from flyte.ai.agents import LLMMessage

from agent_loop_common.verify import VERIFIER_MARKER

__all__ = ["InstantModel"]

_ISSUE = re.compile(r"#(\d+)")
_VERDICT = '{"verified": true, "notes": "Checked against the request."}'


class InstantModel:
    """A `call_llm` (and a `use_model` provider) that finishes every builder run at once."""

    def __init__(self) -> None:
        self.calls = 0
        """Model calls answered so far (every run and purpose)."""

    def __call__(self, *_: object) -> Any:
        """The provider shape of `use_model`: the same model for every run and purpose."""
        return self.answer

    async def answer(
        self,
        model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
    ) -> LLMMessage:
        """One answer, from the conversation so far."""
        self.calls += 1
        if VERIFIER_MARKER in system:
            return LLMMessage(content=_VERDICT, tool_calls=[])
        done = [str(m.get("content", "")) for m in messages if m.get("role") == "tool"]
        if not done:
            first = str(messages[0].get("content", "")) if messages else ""
            number = _ISSUE.search(first)
            path = f"notes/issue-{number.group(1) if number else 'x'}.md"
            return _call("stage_file", path=path, content="Done.\n")
        if len(done) == 1:
            return _call("submit_implementation", title="Do it", body="Done.", summary="One note.")
        return LLMMessage(content="Submitted.", tool_calls=[])


def _call(name: str, **arguments: Any) -> LLMMessage:
    return LLMMessage(
        content="", tool_calls=[{"id": f"call_{name}", "name": name, "arguments": arguments}]
    )
