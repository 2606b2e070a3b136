"""Memory layout and the distiller's scan plan: pure, no I/O."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from agent_loop_common.memory import (
    DeferredRecord,
    IngestLedger,
    IngestPolicy,
    Keys,
    LocationError,
    MemoryLocation,
    bucket_of,
    bucket_start,
    buckets_between,
    grade_path,
    month_of,
    plan_scan,
    rollup_path,
    run_path,
)
from agent_loop_common.records import SCHEMA_VERSION, Role, Target, TargetKind

NOW = datetime(2026, 3, 10, 14, 20, tzinfo=UTC)
NEXT_MAJOR = str(int(SCHEMA_VERSION.partition(".")[0]) + 1) + ".0"
"""A major this code does not know yet: one past the current schema."""


def test_buckets_are_utc_hours_in_time_order() -> None:
    assert bucket_of(NOW) == "2026031014"
    assert bucket_of(NOW.astimezone(timezone(timedelta(hours=-5)))) == "2026031014"
    assert bucket_start("2026031014") == datetime(2026, 3, 10, 14, tzinfo=UTC)
    assert buckets_between("2026022823", "2026030101") == ["2026022823", "2026030100", "2026030101"]
    assert buckets_between("2026030101", "2026030100") == []
    with pytest.raises(ValueError, match="not a bucket"):
        bucket_start("2026-03-01")


def test_key_and_path_names() -> None:
    keys = Keys("loop")
    assert keys.context == "loop-context"
    assert keys.ledger == "loop-ledger"
    assert keys.runs("2026031014") == "loop-runs-2026031014"
    assert keys.idle(Role.BUILDER, date(2026, 3, 10)) == "loop-idle-builder-20260310"
    assert keys.rollups("202603") == "loop-rollups-202603"
    assert keys.grades("202603") == "loop-grades-202603"
    assert keys.etags(Role.REVIEWER) == "loop-etags-reviewer"
    assert keys.reviewed(7) == "loop-reviewed-pr-7"
    assert run_path("abc") == "runs/abc.json"
    assert rollup_path(date(2026, 3, 1)) == "days/2026-03-01.json"
    assert grade_path(Target(kind=TargetKind.PR, number=4)) == "grades/pr-4.json"
    assert month_of(date(2026, 3, 31)) == "202603"
    with pytest.raises(ValueError, match="prefix"):
        Keys("Bad/Prefix")


def test_location_paths_and_validation() -> None:
    loc = MemoryLocation(org="o", project="p", domain="d", root="/x/mem/")
    assert loc.remote_path("k") == "/x/mem/agents/memory-store/v0/o/p/d/k"
    with pytest.raises(LocationError):
        loc.remote_path("a/b")
    with pytest.raises(LocationError):
        MemoryLocation(org="o/x", project="p", domain="d")
    with pytest.raises(LocationError, match="rd/"):
        MemoryLocation(org="o", project="p", domain="d", root="/x/rd/run1")


def test_first_pass_reads_the_retention_window_and_settles() -> None:
    policy = IngestPolicy(retention_days=2, settle=timedelta(minutes=30))
    plan = plan_scan(IngestLedger(), NOW, policy)
    assert plan.buckets[0] == "2026030814"
    assert plan.buckets[-1] == "2026031014"
    assert len(plan.buckets) == 49
    assert plan.next_watermark == "2026031013"  # 13:50 is in the 13h bucket: not closed yet
    assert plan.aged_out == 0


def test_regular_pass_reads_from_watermark_only() -> None:
    ledger = IngestLedger(watermark="2026031012")
    plan = plan_scan(ledger, NOW, IngestPolicy(settle=timedelta(minutes=10)))
    assert plan.buckets == ("2026031012", "2026031013", "2026031014")
    assert plan.next_watermark == "2026031014"


def test_watermark_never_moves_back() -> None:
    ledger = IngestLedger(watermark="2026031014")
    plan = plan_scan(ledger, NOW, IngestPolicy(settle=timedelta(hours=5)))
    assert plan.next_watermark == "2026031014"
    assert plan.buckets == ("2026031014",)


def test_ledger_behind_retention_skips_and_counts_aged_out_buckets() -> None:
    ledger = IngestLedger(watermark="2026030100")
    plan = plan_scan(ledger, NOW, IngestPolicy(retention_days=1))
    assert plan.buckets[0] == "2026030914"
    assert plan.aged_out == len(buckets_between("2026030100", "2026030913"))


def test_deferred_records_of_a_now_known_major_are_retried() -> None:
    seen_at = NOW - timedelta(days=40)
    ledger = IngestLedger(
        watermark="2026031013",
        deferred=[
            DeferredRecord(
                bucket="2026010100",
                run_id="a",
                reason="unknown_major",
                schema_version="1.2",
                seen_at=seen_at,
            ),
            DeferredRecord(
                bucket="2026010100",
                run_id="b",
                reason="unknown_major",
                schema_version=NEXT_MAJOR,
                seen_at=seen_at,
            ),
            DeferredRecord(bucket="2026010200", run_id="c", reason="invalid", seen_at=seen_at),
        ],
    )
    plan = plan_scan(ledger, NOW, IngestPolicy())
    assert plan.retry == {"2026010100": frozenset({"a"})}
    assert ledger.unknown_major == 2
    assert ledger.invalid == 1
