"""Small single-owner state: the GitHub ETag cache, "reviewed head" marks, grades.

Back-off is not here: it lives on GitHub with the claims (see
`agent_loop_common.claims`), where every run sees it without a memory round trip.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

from pydantic import AwareDatetime, BaseModel, ConfigDict, NonNegativeInt

from agent_loop_common.memory._docs import read_doc, write_doc
from agent_loop_common.memory._layout import (
    ETAG_PATH,
    IDLE_PROOF_PATH,
    REVIEWED_PATH,
    TURNS_PATH,
    grade_path,
    month_of,
)
from agent_loop_common.memory._location import (
    MemoryLocation,
    append_store,
    open_store,
    save_store,
)
from agent_loop_common.records import Grade, Outcome, Role

__all__ = [
    "ReviewedMark",
    "grade_month",
    "mark_reviewed",
    "read_etag_state",
    "read_grades",
    "read_reviewed",
    "read_turns",
    "write_etag_state",
    "write_grades",
    "write_idle_proof",
    "write_turns",
]


async def read_etag_state(location: MemoryLocation, role: Role) -> dict[str, Any] | None:
    """The saved ETag cache of `role` (the GitHub facade's `ETagCache.dump()`), if any.

    The facade owns the cache's format; memory only gives it a home that survives the
    fresh container every scheduled run starts in. Unreadable content reads as `None`
    (a lost cache costs one full poll, never a run).
    """
    store = await open_store(location, location.keys.etags(role))
    text = await store.read_text.aio(ETAG_PATH, default="")
    if not text.strip():
        return None
    try:
        loaded: Any = json.loads(text)
    except ValueError:
        return None
    return cast("dict[str, Any]", loaded) if isinstance(loaded, dict) else None


async def write_etag_state(location: MemoryLocation, role: Role, state: Mapping[str, Any]) -> None:
    """Save `role`'s ETag cache; call only when the facade's cache says it `changed`.

    Parallel runs of one role share the key: the last saver wins the whole file, which
    only costs a cache miss later.
    """
    store = append_store(location, location.keys.etags(role))
    await store.write_text.aio(
        ETAG_PATH, json.dumps(state, separators=(",", ":")), actor=role.value
    )
    await save_store(location, store)


async def write_idle_proof(location: MemoryLocation, role: Role, text: str) -> None:
    """Save `role`'s idle proof (`runtime.IdleProof.to_json()`, or a void one).

    Written by every untargeted and targeted tick of the role, read by the next tick's
    lean path from the local memory; one tiny file, uploaded alone.
    """
    store = append_store(location, location.keys.idle_proof(role))
    await store.write_text.aio(IDLE_PROOF_PATH, text, actor=role.value)
    await save_store(location, store)


class ReviewedMark(BaseModel):
    """The head commit of an agent PR the reviewer last reviewed."""

    model_config = ConfigDict(extra="ignore", frozen=True)

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
    """Record that the reviewer reviewed `mark.head_sha` of `mark.pr`.

    The key is downloaded first (one tiny file), so a corrupt mark is set aside under
    `quarantine/` rather than overwritten unseen.
    """
    store = await open_store(location, location.keys.reviewed(mark.pr))
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


async def read_turns(location: MemoryLocation, role: Role) -> dict[str, datetime]:
    """When `role` last served each repository (`AGENT_LOOP_REPOS` only), by `owner/name`.

    The fair rotation across repositories reads it at the start of a tick; unreadable
    content reads as empty (a lost rotation only lets one tick start from the oldest
    work again).
    """
    store = await open_store(location, location.keys.turns(role))
    text = await store.read_text.aio(TURNS_PATH, default="")
    try:
        loaded: Any = json.loads(text) if text.strip() else {}
        return {str(k): datetime.fromisoformat(str(v)) for k, v in dict(loaded).items()}
    except (ValueError, TypeError):
        return {}


async def write_turns(location: MemoryLocation, role: Role, served: Mapping[str, datetime]) -> None:
    """Save when `role` last served each repository.

    Parallel ticks of one role share the key: the last saver wins, which costs at most
    one repository a turn out of order, never a lost record.
    """
    store = append_store(location, location.keys.turns(role))
    data = {repo: moment.isoformat() for repo, moment in sorted(served.items())}
    await store.write_text.aio(
        TURNS_PATH, json.dumps(data, separators=(",", ":")), actor=role.value
    )
    await save_store(location, store)
