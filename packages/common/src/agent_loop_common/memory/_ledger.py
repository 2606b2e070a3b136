"""The distiller's ingest ledger and the pure planning of a pass over the run buckets.

How the distiller finds every record without listing keys: records go to the hourly
bucket of the moment they are written, so the buckets that can hold records it has not
seen are exactly those from its `watermark` up to now. A bucket is *closed* once
`settle` has passed since its end (longer than any upload plus clock skew): no record
can land in it after that. The watermark only moves past closed buckets, so every
bucket behind it was read after it closed. Buckets at or after the watermark are
re-read each pass; `seen` lists the run ids already taken from them, so only new
records are parsed.

Retention: buckets older than `retention_days` are never read (they are not deleted:
MemoryStore has no delete). A ledger that fell that far behind skips them and counts
them in `aged_out_buckets`; daily rollups keep the aggregates of what was ingested.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, NonNegativeInt

from agent_loop_common.memory._layout import bucket_of, buckets_between
from agent_loop_common.records import RECORD_MAJORS, major_of

__all__ = ["DeferredRecord", "IngestLedger", "IngestPolicy", "ScanPlan", "plan_scan"]


class DeferredRecord(BaseModel):
    """A stored record this distiller could not ingest: counted and kept, never dropped."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    bucket: str
    """Bucket id holding it."""
    run_id: str
    """File name stem (`runs/<run_id>.json`)."""
    reason: Literal["unknown_major", "invalid"]
    """`unknown_major`: retried once this reader knows the major; `invalid`: kept for humans."""
    schema_version: str = ""
    """The record's declared version, when it had one."""
    detail: str = ""
    """Why it could not be read."""
    seen_at: AwareDatetime
    """When the distiller first met it."""


class IngestLedger(BaseModel):
    """`ledger/ingest.json`: how far the distiller has read. Bounded in size."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: str = "1.0"
    """Same versioning rule as `RunRecord`."""
    watermark: str | None = None
    """First bucket still re-read; every earlier bucket was read after it closed."""
    seen: dict[str, list[str]] = Field(default_factory=dict[str, list[str]])
    """Run ids already ingested or deferred, for buckets at or after the watermark only."""
    deferred: list[DeferredRecord] = Field(default_factory=list[DeferredRecord])
    """Records left un-ingested (unknown major or invalid)."""
    ingested_total: NonNegativeInt = 0
    """Records ingested since the ledger began."""
    aged_out_buckets: NonNegativeInt = 0
    """Buckets skipped because they were older than the retention window."""
    updated_at: AwareDatetime | None = None
    """When the ledger was last committed."""

    @property
    def unknown_major(self) -> int:
        """Records waiting for a newer reader."""
        return sum(d.reason == "unknown_major" for d in self.deferred)

    @property
    def invalid(self) -> int:
        """Records no version can read."""
        return sum(d.reason == "invalid" for d in self.deferred)


@dataclass(frozen=True, slots=True)
class IngestPolicy:
    """Knobs of the distiller's pass."""

    retention_days: int = 30
    """Raw buckets older than this are no longer read (rollups keep the aggregates)."""
    settle: timedelta = timedelta(minutes=30)
    """How long after its end a bucket may still receive a record (upload time + skew)."""
    parallel: int = 8
    """Buckets downloaded at once."""


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """What one pass reads and where the watermark goes afterwards."""

    buckets: tuple[str, ...]
    """Buckets to scan for unseen records, oldest first."""
    retry: dict[str, frozenset[str]]
    """Deferred records (bucket -> run ids) whose major this reader now knows."""
    next_watermark: str
    """Watermark after this pass: the first bucket not yet closed."""
    aged_out: int
    """Buckets between the old watermark and the retention horizon, skipped."""


def plan_scan(ledger: IngestLedger, now: datetime, policy: IngestPolicy) -> ScanPlan:
    """Plan a pass at `now`. Pure: no I/O, same answer for the same inputs."""
    horizon = bucket_of(now - timedelta(days=policy.retention_days))
    first = ledger.watermark or horizon
    aged_out = 0
    if first < horizon:  # fixed-width digits: string order is time order
        aged_out = len(buckets_between(first, horizon)) - 1
        first = horizon
    last = bucket_of(now)
    settled = bucket_of(now - policy.settle)
    next_watermark = max(first, min(settled, last))
    retry: dict[str, set[str]] = {}
    for d in ledger.deferred:
        if d.reason == "unknown_major" and major_of(d.schema_version) in RECORD_MAJORS:
            retry.setdefault(d.bucket, set()).add(d.run_id)
    return ScanPlan(
        buckets=tuple(buckets_between(first, last)),
        retry={b: frozenset(ids) for b, ids in retry.items()},
        next_watermark=next_watermark,
        aged_out=aged_out,
    )
