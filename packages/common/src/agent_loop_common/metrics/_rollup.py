"""Daily rollups: the aggregates kept after raw records age out.

A rollup counts each run id at most once, so folding the same records in twice (a
distiller pass that crashed after saving rollups but before advancing its ledger, then
re-read the same records) does not double count.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, date

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

from agent_loop_common.metrics._tally import VERIFIED_ROLES, Tally, tally_records, unverified
from agent_loop_common.records import Role, RunRecord

__all__ = ["DailyRollup", "fold_records", "total_tally"]


class DailyRollup(BaseModel):
    """Per-role tallies of the records that finished on one UTC day."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    schema_version: str = "1.1"
    """Same versioning rule as `RunRecord` (1.1: the tallies count `interrupted` and
    `preflight_failed`)."""
    day: date
    """The UTC day of `RunRecord.finished_at`."""
    by_role: dict[Role, Tally] = Field(default_factory=dict[Role, Tally])
    """Tally per role."""
    run_ids: list[str] = Field(default_factory=list[str])
    """Runs already counted: makes folding idempotent."""
    idle_runs: dict[Role, NonNegativeInt] = Field(default_factory=dict[Role, NonNegativeInt])
    """Runs that claimed nothing (from the idle counters); latest value, not a sum."""

    @property
    def tally(self) -> Tally:
        """All roles together."""
        return total_tally([self])


def fold_records(
    existing: Mapping[date, DailyRollup], records: Iterable[RunRecord]
) -> dict[date, DailyRollup]:
    """Return the rollups of the days `records` touch, with the new records counted once.

    Days that receive no new record are not returned (nothing to save).
    """
    fresh: dict[date, dict[Role, list[RunRecord]]] = defaultdict(lambda: defaultdict(list))
    seen: dict[date, set[str]] = {}
    for r in records:
        day = r.finished_at.astimezone(UTC).date()
        known = seen.setdefault(day, set(existing[day].run_ids) if day in existing else set())
        if r.run_id in known:
            continue
        known.add(r.run_id)
        fresh[day][r.role].append(r)
    out: dict[date, DailyRollup] = {}
    for day, by_role in fresh.items():
        base = existing.get(day) or DailyRollup(day=day)
        tallies = dict(base.by_role)
        for role, recs in by_role.items():
            tallies[role] = tallies.get(role, Tally()) + tally_records(recs)
        ids = base.run_ids + [r.run_id for recs in by_role.values() for r in recs]
        out[day] = base.model_copy(update={"by_role": tallies, "run_ids": ids})
    return out


def total_tally(rollups: Iterable[DailyRollup], role: Role | None = None) -> Tally:
    """Sum the tallies of several days, for one role or all of them.

    A role no verifier judges (the distiller) adds nothing to the verification counts,
    also in rollups folded before `tally_records` left them out.
    """
    total = Tally()
    for rollup in rollups:
        for r, t in rollup.by_role.items():
            if role is None or r is role:
                total = total + (t if r in VERIFIED_ROLES else unverified(t))
    return total
