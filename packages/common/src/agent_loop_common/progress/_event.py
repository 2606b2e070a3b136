"""`ProgressEvent`: one thing a run did, the moment it did it (a value, no I/O).

A run's progress is a flat sequence of these: the claim, each try, every tool call of
every agent (the verifier's included), what was staged, each test run with its counts,
the verifier's verdict, and the end with tokens, cost and duration. The same events
are printed live by `agent-loop run` and the demo, written as JSON lines for log
shippers (`run --json`), and listed in the tick's Flyte report: one source, so what a
person watches, what a log pipeline stores and what the report shows agree.

`data` holds only JSON values (strings, numbers, booleans, lists of strings), never a
model's whole output or a file's content: tool arguments are shortened where they are
read (`agent_loop_common.agents.short_args`), notes are capped here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = ["NOTE_CHARS", "ProgressEvent", "ProgressKind"]

NOTE_CHARS = 300
"""Longest free text (notes, errors) an event carries; the record keeps the whole."""

ProgressKind = Literal[
    "run.claimed",
    "try.started",
    "agent.tool",
    "agent.step",
    "change.proposed",
    "tests.ran",
    "verifier.verdict",
    "try.ended",
    "run.ended",
]
"""What happened:

- `run.claimed`: the run holds its target (`target`, `title`).
- `try.started`: try `number` of `tries` of the attempt loop begins.
- `agent.tool`: an agent (`agent`: the run's role, or `verifier`) calls `tool`;
  `subject` is the argument a person recognises (a path, a title), `args` all of them,
  shortened.
- `agent.step`: a model turn (`tool` = `llm`) or tool call finished: `ok`, `ms`,
  `error` (a refusal, a failed call); the same step as the record's trace.
- `change.proposed`: a try submitted `files` (paths, `added`/`removed` lines) or
  `issues` (sub-issue titles).
- `tests.ran`: the repository's tests ran, `by` the pipeline's `check` of a submitted
  change or the agent's `run_tests`; `status`, `summary` (with counts), `failing`.
- `verifier.verdict`: the verifier's `verified` and `notes` on try `number`.
- `try.ended`: try `number` ended: `result` is `verified`, `rejected`,
  `tests_failed`, `not_submitted` or `declined`, with its `notes`.
- `run.ended`: the run is recorded: `outcome`, `tokens`, `cost_usd`, `llm_calls`,
  `seconds`, `links`.
"""


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """One step of one run, with the run it belongs to."""

    kind: ProgressKind
    role: str = ""
    """The run's role (`builder`, `reviewer`, `distiller`); empty outside a run."""
    run_id: str = ""
    """The run's id (its record's key); empty outside a run."""
    target: str = ""
    """What the run works on, as people say it (`issue #5`, `PR #7`); empty until claimed."""
    at: float = field(default_factory=time.time)
    """When it happened (seconds since the epoch)."""
    data: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """What happened, by `kind` (see `ProgressKind`)."""

    def as_dict(self) -> dict[str, Any]:
        """The event as one flat JSON object: `event`, `timestamp`, the run, its data.

        `target` is written as the tick's summary writes it (`issue#5`, `pr#7`, `repo`),
        the last of `run --json`'s lines: one spelling in one stream."""
        head: dict[str, Any] = {
            "event": self.kind,
            "timestamp": datetime.fromtimestamp(self.at, UTC).isoformat(),
            "role": self.role,
            "run_id": self.run_id,
            "target": _target_key(self.target),
        }
        return {**head, **{k: v for k, v in self.data.items() if k not in head}}


def _target_key(label: str) -> str:
    """`issue #5` -> `issue#5`, `PR #7` -> `pr#7`, `repo` stays: a progress line's target
    as `TickSummary.target` and the records' keys spell it."""
    kind, _, number = label.partition(" #")
    return f"{kind.lower()}#{number}" if number else label
