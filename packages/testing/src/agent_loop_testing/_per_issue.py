"""`ModelPerIssue`: each issue's runs answered by its own scripted model.

A `ScriptedModel` plays one script in order, so runs on different issues working at the
same time (a benchmark's instances K at a time, a tick's parallel slots) would take each
other's turns. This provider gives every run a `call_llm` that reads which issue the
conversation is about (the builder's first message names it: `# Issue #7`; the
verifier's names it too: `issue #7`) and hands the call to that issue's model, so each
issue keeps its own strict script, whatever order the runs interleave in. Usage is
recorded on the run's own meter, as the real model call does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from flyte.ai.agents import LLMCallable, LLMMessage

from agent_loop_common.llm import Budget, UsageMeter
from agent_loop_common.records import Role
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing._scripted import ScriptedModel, ScriptMismatch

__all__ = ["ModelPerArm", "ModelPerIssue"]

_ISSUE = re.compile(r"issue #(\d+)", re.IGNORECASE)


def _first_user(messages: list[dict[str, Any]]) -> str:
    return next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")


class ModelPerIssue:
    """A `use_model` provider routing each call to the `ScriptedModel` of its issue.

    Args:
        models: Issue number -> the model that answers that issue's runs (the agent and
            its verifier: route the verifier inside that model, `routes=`).
    """

    model_label = "scripted"

    def __init__(self, models: Mapping[int, ScriptedModel]) -> None:
        self.models = dict(models)

    def __call__(self, role: Role, purpose: str, usage: UsageMeter, budget: Budget) -> LLMCallable:
        """The `ModelProvider` shape: one run's `call_llm`."""

        async def answer(
            model: str,
            system: str,
            messages: list[dict[str, Any]],
            tools: list[dict[str, Any]] | None,
        ) -> LLMMessage:
            first = _first_user(messages)
            found = _ISSUE.search(first)
            number = int(found.group(1)) if found else None
            scripted = self.models.get(number) if number is not None else None
            if scripted is None:
                raise ScriptMismatch(
                    f"ModelPerIssue: no model for issue {number} (first message {first[:200]!r})"
                )
            reply = await scripted(model, system, messages, tools)
            spent: dict[str, Any] = reply.raw.get("usage", {}) if reply.raw else {}
            usage.record(
                model,
                prompt_tokens=int(spent.get("prompt_tokens", 0)),
                completion_tokens=int(spent.get("completion_tokens", 0)),
                cost_usd=reply.raw.get("cost_usd") if reply.raw else None,
            )
            return reply

        return answer

    def assert_finished(self) -> None:
        """Every issue's model used its whole script, and none saw a mismatch."""
        for model in self.models.values():
            model.assert_finished()


class ModelPerArm:
    """A `use_model` provider for paired replays: per issue, one model answers the runs
    whose builder prompt shows `marker` (a lesson's text) and another the runs that do not.

    The builder's first message names the issue and holds the lessons it is shown, so
    the arm of a builder call is read from it. The verifier is shown no lesson: its
    calls go to the model of the arm whose build it checks (the last builder call on
    that issue), which holds the verdict in its verifier route. The two builds of a
    pair run one after the other, so that is always the right arm.

    Args:
        marker: A string only the lesson's text has.
        shown: Issue number -> the model of the runs shown the lesson.
        hidden: Issue number -> the model of the runs not shown it.
    """

    model_label = "scripted"

    def __init__(
        self,
        marker: str,
        shown: Mapping[int, ScriptedModel],
        hidden: Mapping[int, ScriptedModel],
    ) -> None:
        self.marker = marker
        self.shown = dict(shown)
        self.hidden = dict(hidden)
        self._last: dict[int, bool] = {}
        self.arms: list[tuple[int, bool]] = []
        """Every builder run's (issue, shown the lesson), in the order they started."""

    def __call__(self, role: Role, purpose: str, usage: UsageMeter, budget: Budget) -> LLMCallable:
        """The `ModelProvider` shape: one run's `call_llm`."""

        async def answer(
            model: str,
            system: str,
            messages: list[dict[str, Any]],
            tools: list[dict[str, Any]] | None,
        ) -> LLMMessage:
            first = _first_user(messages)
            found = _ISSUE.search(first)
            if found is None:
                raise ScriptMismatch(f"ModelPerArm: no issue in {first[:200]!r}")
            number = int(found.group(1))
            if VERIFIER_MARKER in system:
                if number not in self._last:
                    raise ScriptMismatch(f"ModelPerArm: a verifier before any build of #{number}")
                shown = self._last[number]
            else:
                shown = self.marker in first
                if len(messages) == 1:  # a build's first turn
                    self.arms.append((number, shown))
                self._last[number] = shown
            scripted = (self.shown if shown else self.hidden).get(number)
            if scripted is None:
                arm = "shown" if shown else "hidden"
                raise ScriptMismatch(f"ModelPerArm: no {arm} model for issue {number}")
            reply = await scripted(model, system, messages, tools)
            spent: dict[str, Any] = reply.raw.get("usage", {}) if reply.raw else {}
            usage.record(
                model,
                prompt_tokens=int(spent.get("prompt_tokens", 0)),
                completion_tokens=int(spent.get("completion_tokens", 0)),
                cost_usd=reply.raw.get("cost_usd") if reply.raw else None,
            )
            return reply

        return answer

    def assert_finished(self) -> None:
        """Every model used its whole script, and none saw a mismatch."""
        for model in [*self.shown.values(), *self.hidden.values()]:
            model.assert_finished()
