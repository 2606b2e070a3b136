"""What a builder or reviewer run writes: its record, or (claimed nothing) one count.

Neither write downloads anything that grows with history:

- a record goes to the bucket of the hour it is written, at `runs/<run_id>.json`,
  through an `append_store` that uploads that one file (plus the SDK's `meta/` sidecar
  and `messages.json`). Concurrent writers never meet: distinct paths, and `save()`
  never deletes. Re-writing the same run id (a retried Flyte action) overwrites the
  same file: idempotent.
- an idle run bumps `idle/count.json` in a tiny per-role, per-day key. That is a
  read-modify-write: two idle runs of one role finishing at the same instant can lose
  one increment. It is an approximate counter by design (nothing is learned from idle
  runs); a run that claimed something always writes a record instead.
- a tick paused by the GitHub rate-limit reserve bumps the same document's `paused`
  counter and says why and until when: it claimed nothing, so it owes no record, yet
  people must see that the loop is holding back, not stuck.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime

from agent_loop_common.memory._docs import read_doc, write_doc
from agent_loop_common.memory._idle import IdleCount
from agent_loop_common.memory._layout import IDLE_PATH, bucket_of, run_path
from agent_loop_common.memory._location import (
    MemoryLocation,
    append_store,
    open_store,
    save_store,
)
from agent_loop_common.records import Role, RunRecord

__all__ = [
    "IdleCount",
    "RecordRef",
    "count_idle_run",
    "count_paused_run",
    "read_idle_count",
    "write_run_record",
]


@dataclass(frozen=True, slots=True)
class RecordRef:
    """Where a record was written."""

    bucket: str
    """Hourly bucket id (`YYYYMMDDHH`)."""
    key: str
    """Store key of the bucket."""
    path: str
    """Path of the record inside the key."""


async def write_run_record(
    location: MemoryLocation, record: RunRecord, *, now: datetime | None = None
) -> RecordRef:
    """Append `record` to the bucket of `now` (default: the current time)."""
    bucket = bucket_of(now or datetime.now(UTC))
    key = location.keys.runs(bucket)
    path = run_path(record.run_id)
    store = append_store(location, key)
    await store.write_text.aio(path, record.model_dump_json(), actor=record.role.value)
    await save_store(location, store)
    return RecordRef(bucket=bucket, key=key, path=path)


async def read_idle_count(location: MemoryLocation, role: Role, day: date) -> IdleCount:
    """The idle counter of `role` on `day` (zero when absent)."""
    store = await open_store(location, location.keys.idle(role, day))
    return await read_doc(store, IDLE_PATH, IdleCount) or IdleCount(role=role, day=day)


async def count_idle_run(
    location: MemoryLocation, role: Role, *, now: datetime | None = None
) -> IdleCount:
    """Add one idle run to today's counter of `role`; returns the new count."""
    return await _bump(location, role, now, lambda c, at: c.counted(at))


async def count_paused_run(
    location: MemoryLocation,
    role: Role,
    *,
    note: str,
    until: datetime | None,
    now: datetime | None = None,
) -> IdleCount:
    """Add one paused tick (rate-limit reserve) to today's document of `role`, with why."""
    return await _bump(
        location,
        role,
        now,
        lambda c, at: c.model_copy(
            update={
                "paused": c.paused + 1,
                "paused_at": at,
                "paused_note": note,
                "paused_until": until,
            }
        ),
    )


async def _bump(
    location: MemoryLocation,
    role: Role,
    now: datetime | None,
    change: Callable[[IdleCount, datetime], IdleCount],
) -> IdleCount:
    moment = now or datetime.now(UTC)
    day = moment.astimezone(UTC).date()
    store = await open_store(location, location.keys.idle(role, day))
    current = await read_doc(store, IDLE_PATH, IdleCount) or IdleCount(role=role, day=day)
    updated = change(current, moment)
    await write_doc(store, IDLE_PATH, updated, actor=role.value)
    await save_store(location, store)
    return updated
