"""The verifier's verdict and how it is read from the model's final answer (pure).

Parsing fails closed: the proposal is applied only when the answer contains a JSON
object with `"verified": true`, a real JSON boolean. A missing verdict, a string
`"true"`, `1` or anything else is a rejection whose notes say why, so a confused or
truncated answer can never open a pull request. A failed run (the model call itself
failed) is not a verdict at all: `run_verifier` raises `VerifierError` for it, so the
pipeline records an error instead of posting a rejection nobody made.

```
VerifierError      the verifier run failed (model error, turn limit): no verdict
```
"""

from __future__ import annotations

import json
from typing import Any, cast

from pydantic import BaseModel, ConfigDict

from agent_loop_common.llm import AgentRunFailed, LLMError
from agent_loop_common.records import TraceStep

__all__ = ["Verdict", "VerifierError", "parse_verdict"]

_SCAN_CHARS = 200_000
_decoder = json.JSONDecoder()


class Verdict(BaseModel):
    """Whether the proposal may be applied, and the verifier's notes (fed to a retry)."""

    model_config = ConfigDict(frozen=True)

    verified: bool
    """True only for a JSON `true` in the verifier's final answer."""
    notes: str = ""
    """The verifier's notes, or why its answer could not be read as a pass."""


class VerifierError(AgentRunFailed):
    """The verifier run failed, so there is no verdict (not the same as a rejection).

    Attributes:
        trace: The steps the verifier took before failing, for the run record.
        cause: The model failure behind it, when a model call failed (set by the caller
            that holds the run's usage meter).
    """

    def __init__(
        self, message: str, trace: list[TraceStep] | None = None, *, cause: LLMError | None = None
    ) -> None:
        super().__init__(message, cause=cause)
        self.trace: list[TraceStep] = list(trace or [])


def parse_verdict(text: str) -> Verdict:
    """Read the verdict from the verifier's final answer.

    The verdict is the last top-level JSON object in `text` that has a `"verified"`
    key; it may sit in a fenced code block or among prose. Only a JSON `true` passes.
    """
    found: dict[str, Any] | None = None
    for obj in _json_objects(text[-_SCAN_CHARS:]):
        if "verified" in obj:
            found = obj
    if found is None:
        tail = " ".join(text.split())[-300:]
        return Verdict(
            verified=False,
            notes=(
                'Not verified: the verifier\'s answer contained no JSON object with a "verified" '
                f"key, so it fails closed. The answer ended with: {tail!r}"
            ),
        )
    raw_notes = found.get("notes", "")
    notes = raw_notes if isinstance(raw_notes, str) else json.dumps(raw_notes, ensure_ascii=False)
    verified = found["verified"]
    if isinstance(verified, bool):
        return Verdict(verified=verified, notes=notes)
    return Verdict(
        verified=False,
        notes=(
            f'Not verified: "verified" was {json.dumps(verified, ensure_ascii=False)}, not a JSON '
            f"boolean, so it fails closed. Notes: {notes}"
        ),
    )


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in `text`, in order (nested ones are not listed)."""
    objects: list[dict[str, Any]] = []
    position = text.find("{")
    while position != -1:
        try:
            value, end = _decoder.raw_decode(text, position)
        except ValueError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            objects.append(cast(dict[str, Any], value))
        position = text.find("{", end)
    return objects
