"""The distiller's view of memory: collect unseen records, then commit in a safe order.

```python
memory = await DistillerMemory.open(location)
batch = await memory.collect()
context = await memory.context()          # current lessons and digest, to edit
...                                        # grade, learn, render (pure)
await memory.commit(batch, lessons=new_lessons, digest=new_digest, grades=grades)
```

`commit` saves in this order, each step only after the previous one succeeded:
lessons and digest (context key) -> grades -> rollups -> ledger. A single `save()`
uploads files one by one in no promised order, so putting ledger and lessons in one
save would not guarantee the ledger lands last; separate saves do. If anything fails
before the ledger is saved, the next pass re-reads the same records: rollups count a
run id once, and lessons carry their source run ids so the distiller can skip repeats.
Run one distiller at a time (its schedule must not overlap itself).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TypeVar

from flyte.ai.agents import MemoryStore
from pydantic import BaseModel

from agent_loop_common.memory._context import ContextView, read_context_from
from agent_loop_common.memory._docs import read_doc, write_doc
from agent_loop_common.memory._errors import AgentMemoryError
from agent_loop_common.memory._homes import write_grades
from agent_loop_common.memory._layout import (
    DIGEST_PATH,
    EFFECTS_PATH,
    LEDGER_PATH,
    LESSONS_PATH,
    bucket_start,
)
from agent_loop_common.memory._ledger import (
    DeferredRecord,
    IngestLedger,
    IngestPolicy,
    ScanPlan,
    plan_scan,
)
from agent_loop_common.memory._location import MemoryLocation, open_store, save_store
from agent_loop_common.memory._rollups import fold_into_rollups
from agent_loop_common.memory._runs import IdleCount, read_idle_count
from agent_loop_common.records import (
    Grade,
    InvalidRecord,
    LessonBook,
    ParsedRecord,
    Role,
    RunRecord,
    parse_record,
)

__all__ = ["DistillerMemory", "IngestBatch"]

M = TypeVar("M", bound=BaseModel)

_ACTOR = Role.DISTILLER.value


@dataclass(frozen=True, slots=True)
class IngestBatch:
    """What one pass found, and the ledger that commits it."""

    base: IngestLedger
    """The ledger the pass started from (a commit on top of another one is refused)."""
    ledger: IngestLedger
    """The ledger after this batch is committed."""
    records: tuple[RunRecord, ...]
    """Records not ingested before, oldest bucket first."""
    deferred: tuple[DeferredRecord, ...]
    """Records newly left un-ingested (unknown major, or invalid in a closed bucket)."""
    idle: tuple[IdleCount, ...]
    """Idle counters of the days the pass covers."""
    buckets_scanned: int
    """Buckets the pass looked at (existence checks)."""
    buckets_read: int
    """Buckets that existed and were downloaded."""

    @property
    def has_news(self) -> bool:
        """Whether there is anything to learn from (new records or newly deferred ones)."""
        return bool(self.records or self.deferred)


@dataclass(frozen=True, slots=True)
class _BucketScan:
    records: list[RunRecord]
    deferred: list[DeferredRecord]
    seen: list[str]
    existed: bool


class DistillerMemory:
    """The single writer of the context, ledger, rollups and grades keys."""

    def __init__(
        self,
        location: MemoryLocation,
        policy: IngestPolicy,
        ledger: IngestLedger,
        ledger_store: MemoryStore,
    ) -> None:
        """Use `DistillerMemory.open`."""
        self.location = location
        self.policy = policy
        self.ledger = ledger
        self._ledger_store = ledger_store
        self._seen: dict[str, str] = {}
        """Ledger-key documents this handle read or wrote, as text (see `write_doc`)."""
        self._context_store: MemoryStore | None = None

    @classmethod
    async def open(
        cls, location: MemoryLocation, policy: IngestPolicy | None = None
    ) -> DistillerMemory:
        """Download the ledger (small, bounded) and get ready to collect."""
        store = await open_store(location, location.keys.ledger)
        ledger = await read_doc(store, LEDGER_PATH, IngestLedger) or IngestLedger()
        return cls(location, policy or IngestPolicy(), ledger, store)

    async def context(self) -> ContextView:
        """Current digest and lessons (downloaded once, writable by the distiller only)."""
        if self._context_store is None:
            self._context_store = await open_store(self.location, self.location.keys.context)
        return await read_context_from(self._context_store)

    async def read_effects(self, model: type[M]) -> M | None:
        """The lesson-effect state (`ledger/effects.json`, in the already downloaded
        ledger key), as `model`; `None` before the first measurement."""
        return await read_doc(self._ledger_store, EFFECTS_PATH, model, seen=self._seen)

    async def collect(self, now: datetime | None = None) -> IngestBatch:
        """Read every record not yet ingested, from the watermark's bucket up to now."""
        moment = now or datetime.now(UTC)
        plan = plan_scan(self.ledger, moment, self.policy)
        gate = asyncio.Semaphore(max(1, self.policy.parallel))
        scan_buckets = set(plan.buckets)
        targets = sorted(scan_buckets | set(plan.retry))

        async def scan(bucket: str) -> _BucketScan:
            async with gate:
                return await self._scan_bucket(bucket, plan, bucket in scan_buckets, moment)

        scans = await asyncio.gather(*(scan(b) for b in targets))
        idle = await self._read_idle(plan, moment, gate)
        records = [r for s in scans for r in s.records]
        deferred = [d for s in scans for d in s.deferred]
        retried = {
            (r.run_id)
            for b, s in zip(targets, scans, strict=True)
            if b in plan.retry
            for r in s.records
        }
        seen = {b: list(ids) for b, ids in self.ledger.seen.items()}
        for bucket, s in zip(targets, scans, strict=True):
            seen.setdefault(bucket, []).extend(i for i in s.seen if i not in seen[bucket])
        kept = [d for d in self.ledger.deferred if d.run_id not in retried]
        ledger = IngestLedger(
            watermark=plan.next_watermark,
            seen={b: ids for b, ids in sorted(seen.items()) if b >= plan.next_watermark and ids},
            deferred=kept + deferred,
            ingested_total=self.ledger.ingested_total + len(records),
            aged_out_buckets=self.ledger.aged_out_buckets + plan.aged_out,
            updated_at=moment,
        )
        return IngestBatch(
            base=self.ledger,
            ledger=ledger,
            records=tuple(records),
            deferred=tuple(deferred),
            idle=tuple(idle),
            buckets_scanned=len(targets),
            buckets_read=sum(s.existed for s in scans),
        )

    async def _scan_bucket(
        self, bucket: str, plan: ScanPlan, scanning: bool, moment: datetime
    ) -> _BucketScan:
        store = await open_store(self.location, self.location.keys.runs(bucket))
        already = set(self.ledger.seen.get(bucket, ()))
        wanted = plan.retry.get(bucket, frozenset())
        out = _BucketScan(records=[], deferred=[], seen=[], existed=bool(store.list_paths()))
        for path in store.list_paths("runs"):
            run_id = path.removeprefix("runs/").removesuffix(".json")
            if not ((scanning and run_id not in already) or run_id in wanted):
                continue
            parsed = parse_record(await store.read_text.aio(path))
            if isinstance(parsed, ParsedRecord) and parsed.record.run_id == run_id:
                out.records.append(parsed.record)
                out.seen.append(run_id)
            elif isinstance(parsed, ParsedRecord | InvalidRecord):
                # A bucket that is still open may be showing a half-written file: retry it
                # next pass; once the bucket has closed, keep it as invalid for humans.
                if bucket < plan.next_watermark and run_id not in wanted:
                    detail = (
                        parsed.reason
                        if isinstance(parsed, InvalidRecord)
                        else f"run_id {parsed.record.run_id!r} does not match its file name"
                    )
                    out.deferred.append(
                        DeferredRecord(
                            bucket=bucket,
                            run_id=run_id,
                            reason="invalid",
                            detail=detail,
                            seen_at=moment,
                        )
                    )
                    out.seen.append(run_id)
            elif run_id not in wanted:
                out.deferred.append(
                    DeferredRecord(
                        bucket=bucket,
                        run_id=run_id,
                        reason="unknown_major",
                        schema_version=parsed.schema_version,
                        seen_at=moment,
                    )
                )
                out.seen.append(run_id)
        return out

    async def _read_idle(
        self, plan: ScanPlan, moment: datetime, gate: asyncio.Semaphore
    ) -> list[IdleCount]:
        first = bucket_start(plan.buckets[0]).date()
        days = [
            first + timedelta(days=i)
            for i in range((moment.astimezone(UTC).date() - first).days + 1)
        ]

        async def one(role: Role, day: date) -> IdleCount:
            async with gate:
                return await read_idle_count(self.location, role, day)

        counts = await asyncio.gather(*(one(role, day) for role in Role for day in days))
        return [c for c in counts if c.count]

    async def commit(
        self,
        batch: IngestBatch,
        *,
        lessons: LessonBook | None = None,
        digest: str | None = None,
        grades: Iterable[Grade] = (),
        effects: BaseModel | None = None,
    ) -> None:
        """Save lessons/digest, grades, rollups, effects, and only then the ledger.

        `effects` (the lesson-effect state) is saved on its own before the ledger: a pass
        that dies in between re-reads the same records, which the state already lists
        as counted (`recent_run_ids`), so none counts twice. It is compact JSON (read and
        written every tick, by the distiller only).
        """
        if batch.base is not self.ledger:
            raise AgentMemoryError("batch was not collected from the current ledger")
        if lessons is not None or digest is not None:
            await self._save_context(lessons, digest)
        grade_list: Sequence[Grade] = list(grades)
        if grade_list:
            await write_grades(self.location, grade_list)
        await fold_into_rollups(self.location, batch.records, batch.idle)
        if effects is not None:
            await write_doc(
                self._ledger_store,
                EFFECTS_PATH,
                effects,
                actor=_ACTOR,
                indent=None,
                seen=self._seen,
            )
            await save_store(self.location, self._ledger_store)
        if batch.ledger.model_dump(exclude={"updated_at"}) != self.ledger.model_dump(
            exclude={"updated_at"}
        ):
            await write_doc(self._ledger_store, LEDGER_PATH, batch.ledger, actor=_ACTOR)
            await save_store(self.location, self._ledger_store)
        self.ledger = batch.ledger

    async def _save_context(self, lessons: LessonBook | None, digest: str | None) -> None:
        if self._context_store is None:
            self._context_store = await open_store(self.location, self.location.keys.context)
        store = self._context_store
        if lessons is not None:
            await write_doc(store, LESSONS_PATH, lessons, actor=_ACTOR)
        if digest is not None:
            await store.write_text.aio(DIGEST_PATH, digest, actor=_ACTOR)
        await save_store(self.location, store)
