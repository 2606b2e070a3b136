"""`ReplayModel`: a replayed model that drives the real agent loops of a whole story.

A demo (or an end-to-end test) runs many agent runs in a row: builder ticks, their
verifiers, reviewer ticks, the distiller. Each run gets its `call_llm` from the
provider installed with `agent_loop_common.runtime.use_model`. `ReplayModel` is that
provider. It holds one `Episode` per piece of the story, and answers each call from the
episode it belongs to:

- an agent call goes to the first unfinished episode of the run's role whose `match`
  text (an issue or PR title) occurs in the conversation, so the script does not depend
  on the order in which the agents pick their work;
- a verifier call (its system prompt opens with `VERIFIER_MARKER`) goes to the episode
  that answered the last agent call of that role: the verifier checks what that agent
  just proposed.

Within an episode the turns are a strict `ScriptedModel`: a tool the agent does not
offer, a tool result that does not say what was expected, or a turn too many fails the
run, is kept in `errors`, and `assert_finished()` re-raises it. Usage is recorded on the
run's meter with token counts estimated from the text (4 characters a token) and no
cost: a replayed model is free, and the figures still show what a run would send.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from flyte.ai.agents import LLMCallable, LLMMessage

from agent_loop_common.llm import Budget, UsageMeter
from agent_loop_common.records import Role
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import ScriptedModel, ScriptMismatch, Turn

__all__ = ["REPLAYED_MODEL", "Episode", "ReplayModel"]

REPLAYED_MODEL = "replayed"
"""The model name the replayed calls are recorded under."""


@dataclass
class Episode:
    """The turns of one agent run (and of the verifier checking it)."""

    name: str
    """Shown in progress lines and errors, e.g. `builder #1`."""
    role: Role
    """The agent whose runs this episode answers."""
    match: str
    """Text that identifies the run's subject in its conversation (an issue or PR title);
    empty matches any run of the role."""
    agent: Sequence[Turn]
    """The agent's turns, in order, across all of the run's tries."""
    verifier: Sequence[Turn] = ()
    """The verifier's turns, in order, across all of the run's tries."""
    model: ScriptedModel = field(init=False)

    def __post_init__(self) -> None:
        routes = {VERIFIER_MARKER: list(self.verifier)} if self.verifier else None
        self.model = ScriptedModel(list(self.agent), routes=routes, name=self.name)

    @property
    def agent_turns_left(self) -> int:
        """Agent turns not played yet."""
        return self.model.remaining().get("", 0)


class ReplayModel:
    """A model provider for `use_model` that replays a story of episodes."""

    def __init__(self, episodes: Sequence[Episode] = ()) -> None:
        self.episodes: list[Episode] = list(episodes)
        self.errors: list[ScriptMismatch] = []
        self._current: dict[Role, Episode] = {}

    def add(self, *episodes: Episode) -> None:
        """Add episodes (a story can be extended as it unfolds, e.g. once an id is known)."""
        self.episodes.extend(episodes)

    def __call__(self, role: Role, purpose: str, usage: UsageMeter, budget: Budget) -> LLMCallable:
        """The `ModelProvider` shape: a `call_llm` for one agent of one run."""

        async def call_llm(
            model: str,
            system: str,
            messages: list[dict[str, Any]],
            tools: list[dict[str, Any]] | None,
        ) -> LLMMessage:
            usage.ensure_within(budget)
            verifying = VERIFIER_MARKER in system
            episode = self._episode(role, verifying, system, messages)
            reply = await episode.model(model, system, messages, tools)
            prompt = json.dumps([system, messages, tools or []], default=str)
            completion = json.dumps([reply.content, reply.tool_calls], default=str)
            usage.record(
                REPLAYED_MODEL,
                prompt_tokens=max(1, len(prompt) // 4),
                completion_tokens=max(1, len(completion) // 4),
                cost_usd=None,
            )
            return reply

        return call_llm

    def _episode(
        self, role: Role, verifying: bool, system: str, messages: list[dict[str, Any]]
    ) -> Episode:
        if verifying:
            current = self._current.get(role)
            if current is None:
                return self._fail(
                    f"a {role.value} verifier was called before any {role.value} agent"
                )
            return current
        conversation = "\n".join([system, *(str(m.get("content") or "") for m in messages)])
        for episode in self.episodes:
            if episode.role is role and episode.agent_turns_left and episode.match in conversation:
                self._current[role] = episode
                return episode
        current = self._current.get(role)
        if current is not None and current.match in conversation:
            return current  # its script is used up: the ScriptedModel says so precisely
        waiting = [e.name for e in self.episodes if e.role is role and e.agent_turns_left]
        return self._fail(
            f"no episode for this {role.value} run: none of the unfinished episodes "
            f"{waiting} matches its conversation (it starts {conversation[:300]!r})"
        )

    def _fail(self, problem: str) -> NoReturn:
        error = ScriptMismatch(f"ReplayModel: {problem}")
        self.errors.append(error)
        raise error

    def problems(self) -> list[str]:
        """Every mismatch seen and every turn left unplayed, as readable lines."""
        lines = [str(e) for e in self.errors]
        for episode in self.episodes:
            lines += [str(e) for e in episode.model.errors]
            left = {
                ("verifier" if route else "agent"): n
                for route, n in episode.model.remaining().items()
                if n
            }
            if left:
                lines.append(f"episode {episode.name!r} has unplayed turns: {left}")
        return lines

    def assert_finished(self) -> None:
        """Raise the first mismatch, or a `ScriptMismatch` for unplayed turns."""
        if self.errors:
            raise self.errors[0]
        for episode in self.episodes:
            episode.model.assert_finished()
