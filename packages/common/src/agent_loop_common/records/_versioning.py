"""Reading records of any version without losing one.

The rule that lets one agent be rolled out ahead of the others:

- same major, any minor: read it; fields this reader does not know are ignored;
- unknown major (or a version that does not parse): do not guess. The record is
  returned as `UnknownMajor`, which callers count and keep un-ingested so that an
  upgraded reader can pick it up later;
- JSON that is not a record, or a known major that fails validation: `InvalidRecord`,
  also counted, never dropped silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

from pydantic import ValidationError

from agent_loop_common.records._run_record import SCHEMA_VERSION, RunRecord

__all__ = [
    "KNOWN_MAJORS",
    "RECORD_MAJORS",
    "InvalidRecord",
    "ParsedRecord",
    "RecordParse",
    "UnknownMajor",
    "major_of",
    "parse_record",
]

KNOWN_MAJORS: frozenset[int] = frozenset({1})
"""Major versions of the single-writer documents (ledger, lessons, rollups, grades) this
reader understands. Run records have their own: `RECORD_MAJORS`."""

RECORD_MAJORS: frozenset[int] = frozenset({1, 2, int(SCHEMA_VERSION.split(".")[0])})
"""Major versions of run records this reader understands: 1; 2, which only added the
outcomes `interrupted` and `preflight_failed`; 3, which only added the tests' status
`tampered` (every 1.x and 2.x record reads unchanged)."""


@dataclass(frozen=True, slots=True)
class ParsedRecord:
    """A record this reader understands."""

    record: RunRecord


@dataclass(frozen=True, slots=True)
class UnknownMajor:
    """A record written by a newer (or unknown) major version: leave it for a newer reader."""

    schema_version: str
    run_id: str


@dataclass(frozen=True, slots=True)
class InvalidRecord:
    """Bytes that are not a readable record of a known major."""

    reason: str
    run_id: str = ""


RecordParse: TypeAlias = ParsedRecord | UnknownMajor | InvalidRecord


def major_of(schema_version: str) -> int | None:
    """Return the major of `"<major>.<minor>"`, or `None` when it does not parse."""
    head = schema_version.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def parse_record(raw: str | bytes) -> RecordParse:
    """Classify and parse one stored record. Never raises on bad input."""
    try:
        loaded: Any = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return InvalidRecord(reason=f"not JSON: {exc}")
    if not isinstance(loaded, dict):
        return InvalidRecord(reason="not a JSON object")
    data = cast(dict[str, Any], loaded)
    run_id = data.get("run_id")
    run_id_text = run_id if isinstance(run_id, str) else ""
    version = data.get("schema_version")
    if not isinstance(version, str):
        return InvalidRecord(reason="missing schema_version", run_id=run_id_text)
    major = major_of(version)
    if major is None or major not in RECORD_MAJORS:
        return UnknownMajor(schema_version=version, run_id=run_id_text)
    try:
        return ParsedRecord(RunRecord.model_validate(data))
    except ValidationError as exc:
        return InvalidRecord(reason=_short(exc), run_id=run_id_text)


def _short(exc: ValidationError) -> str:
    """First few validation errors, compact enough to keep in a ledger."""
    parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3]]
    return "; ".join(parts)
