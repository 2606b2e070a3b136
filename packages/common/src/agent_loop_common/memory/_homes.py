"""Small single-owner state: the GitHub ETag cache, "reviewed head" marks, grades.

Back-off is not here: it lives on GitHub with the claims (see
`agent_loop_common.claims`), where every run sees it without a memory round trip.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, NonNegativeInt

from agent_loop_common.memory._docs import read_doc, write_doc
from agent_loop_common.memory._layout import ETAG_PATH, REVIEWED_PATH, grade_path, month_of
from agent_loop_common.memory._location import (
    MemoryLocation,
    append_store,
    open_store,
    save_store,
)
from agent_loop_common.records import Grade, Outcome, Role

__all__ = [
    "EtagCache",
    "EtagEntry",
    "ReviewedMark",
    "grade_month",
    "mark_reviewed",
    "read_etag_cache",
    "read_grades",
    "read_reviewed",
    "write_etag_cache",
    "write_grades",
]


class EtagEntry(BaseModel):
    """One conditional-request validator and the body it validates."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    etag: str
    """The `ETag` response header, sent back as `If-None-Match`."""
    last_modified: str = ""
    """The `Last-Modified` header, if any."""
    body: str = ""
    """The response body to reuse when GitHub answers 304 (empty if the caller keeps none)."""
    stored_at: AwareDatetime
    """When the entry was stored; the oldest entries are evicted first."""


class EtagCache(BaseModel):
    """A role's `etags/cache.json`: URL -> validator, capped in size."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    schema_version: str = "1.0"
    """Same versioning rule as `RunRecord`."""
    entries: dict[str, EtagEntry] = Field(default_factory=dict[str, EtagEntry])
    """Cached validators by request URL."""

    def put(self, url: str, entry: EtagEntry, *, max_entries: int = 500) -> EtagCache:
        """Return a cache with `entry` stored, evicting the oldest beyond `max_entries`."""
        entries = {**self.entries, url: entry}
        if len(entries) > max_entries:
            keep = sorted(entries.items(), key=lambda kv: kv[1].stored_at)[-max_entries:]
            entries = dict(keep)
        return EtagCache(entries=entries)


async def read_etag_cache(location: MemoryLocation, role: Role) -> EtagCache:
    """The ETag cache of `role` (empty when none was saved)."""
    store = await open_store(location, location.keys.etags(role))
    return await read_doc(store, ETAG_PATH, EtagCache) or EtagCache()


async def write_etag_cache(
    location: MemoryLocation, role: Role, cache: EtagCache, *, previous: EtagCache | None
) -> bool:
    """Save `cache` if it differs from `previous` (what was read); returns whether it saved.

    Parallel runs of one role share the key: the last saver wins the whole file, which
    only costs a cache miss later.
    """
    if previous is not None and cache == previous:
        return False
    store = append_store(location, location.keys.etags(role))
    await write_doc(store, ETAG_PATH, cache, actor=role.value)
    await save_store(location, store)
    return True


class ReviewedMark(BaseModel):
    """The head commit of an agent PR the reviewer last reviewed."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    schema_version: str = "1.0"
    """Same versioning rule as `RunRecord`."""
    pr: NonNegativeInt
    """Pull request number."""
    head_sha: str
    """The reviewed head; a new head means a new review is due."""
    reviewed_at: AwareDatetime
    """When the review finished."""
    run_id: str = ""
    """The reviewer run that reviewed it."""
    outcome: Outcome | None = None
    """How that review ended."""


async def read_reviewed(location: MemoryLocation, pr: int) -> ReviewedMark | None:
    """The last reviewed head of `pr`, if any (one tiny key per PR: flat at any history)."""
    store = await open_store(location, location.keys.reviewed(pr))
    return await read_doc(store, REVIEWED_PATH, ReviewedMark)


async def mark_reviewed(location: MemoryLocation, mark: ReviewedMark) -> None:
    """Record that the reviewer reviewed `mark.head_sha` of `mark.pr`."""
    store = append_store(location, location.keys.reviewed(mark.pr))
    await write_doc(store, REVIEWED_PATH, mark, actor=Role.REVIEWER.value)
    await save_store(location, store)


def grade_month(grade: Grade) -> str:
    """The monthly grades key a grade lives in: the month its PR was opened."""
    moment = grade.opened_at or grade.graded_at
    return month_of(moment.astimezone(UTC).date())


async def read_grades(location: MemoryLocation, month: str) -> list[Grade]:
    """Every grade of the PRs opened in `month` (`YYYYMM`)."""
    store = await open_store(location, location.keys.grades(month))
    grades: list[Grade] = []
    for path in store.list_paths("grades"):
        grade = await read_doc(store, path, Grade)
        if grade is not None:
            grades.append(grade)
    return grades


async def write_grades(location: MemoryLocation, grades: Iterable[Grade]) -> None:
    """Write (or re-write) grades, one file per PR, without downloading the month."""
    by_month: defaultdict[str, list[Grade]] = defaultdict(list)
    for grade in grades:
        by_month[grade_month(grade)].append(grade)
    for month, month_grades in by_month.items():
        store = append_store(location, location.keys.grades(month))
        for grade in month_grades:
            await write_doc(store, grade_path(grade.target), grade, actor=Role.DISTILLER.value)
        await save_store(location, store)
