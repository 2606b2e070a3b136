"""The distiller's exceptions: non-local exits of a tick, drawn as a tree.

```
DistillerError
├── EditRefused          an itemized lesson edit broke a rule (shown to the model as text)
└── DistillationFailed   the tick learned nothing it may commit; the ledger stays put
    ├── ModelFailed      the model call failed or the agent ran out of turns
    └── EditsRejected    the agent's edits did not pass validation (no `finish`, bad book)
```
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_loop_common.records import TraceStep

__all__ = [
    "DistillationFailed",
    "DistillerError",
    "EditRefused",
    "EditsRejected",
    "ModelFailed",
]


class DistillerError(Exception):
    """Base of every distiller error."""


class EditRefused(DistillerError):
    """A lesson edit was refused; the message tells the model how to correct it."""


class DistillationFailed(DistillerError):
    """Nothing may be committed from this tick: the next tick re-reads the same records."""

    def __init__(self, message: str, trace: Sequence[TraceStep] = ()) -> None:
        super().__init__(message)
        self.trace: list[TraceStep] = list(trace)
        """The agent's steps up to the failure, for the run record."""


class ModelFailed(DistillationFailed):
    """The distiller agent did not finish (model error, turn limit)."""


class EditsRejected(DistillationFailed):
    """The agent finished, but its edits are not acceptable as a whole."""
