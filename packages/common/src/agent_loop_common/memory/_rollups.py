"""Daily rollups in monthly keys: the aggregates that outlive the raw records.

A month key holds at most 31 small files, so folding a pass into it, or reading a
window for a report, costs the same at any history size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, timedelta

from agent_loop_common.memory._docs import read_doc, write_doc
from agent_loop_common.memory._layout import month_of, rollup_path
from agent_loop_common.memory._location import MemoryLocation, open_store, save_store
from agent_loop_common.memory._runs import IdleCount
from agent_loop_common.metrics import DailyRollup, fold_records
from agent_loop_common.records import Role, RunRecord

__all__ = ["fold_into_rollups", "read_rollups"]


def _months(first: date, last: date) -> list[str]:
    months: list[str] = []
    day = first.replace(day=1)
    while day <= last:
        months.append(month_of(day))
        day = (day + timedelta(days=32)).replace(day=1)
    return months


async def read_rollups(location: MemoryLocation, first: date, last: date) -> list[DailyRollup]:
    """Rollups of the days from `first` to `last` (inclusive) that have any, oldest first."""
    out: list[DailyRollup] = []
    for month in _months(first, last):
        store = await open_store(location, location.keys.rollups(month))
        for path in store.list_paths("days"):
            rollup = await read_doc(store, path, DailyRollup)
            if rollup is not None and first <= rollup.day <= last:
                out.append(rollup)
    return sorted(out, key=lambda r: r.day)


async def fold_into_rollups(
    location: MemoryLocation, records: Iterable[RunRecord], idle: Iterable[IdleCount]
) -> int:
    """Count `records` (once per run id) and the latest idle counts; returns days written."""
    months: defaultdict[str, list[RunRecord]] = defaultdict(list)
    idle_by_month: defaultdict[str, list[IdleCount]] = defaultdict(list)
    for record in records:
        months[month_of(record.finished_at.astimezone(UTC).date())].append(record)
    for count in idle:
        idle_by_month[month_of(count.day)].append(count)
    written = 0
    for month in sorted(set(months) | set(idle_by_month)):
        store = await open_store(location, location.keys.rollups(month))
        existing: dict[date, DailyRollup] = {}
        for path in store.list_paths("days"):
            rollup = await read_doc(store, path, DailyRollup)
            if rollup is not None:
                existing[rollup.day] = rollup
        changed = fold_records(existing, months.get(month, []))
        for count in idle_by_month.get(month, []):
            base = changed.get(count.day) or existing.get(count.day) or DailyRollup(day=count.day)
            if base.idle_runs.get(count.role) != count.count:
                idle_runs: dict[Role, int] = {**base.idle_runs, count.role: count.count}
                changed[count.day] = base.model_copy(update={"idle_runs": idle_runs})
        for day, rollup in changed.items():
            await write_doc(store, rollup_path(day), rollup, actor=Role.DISTILLER.value)
        if changed:
            await save_store(location, store)
            written += len(changed)
    return written
