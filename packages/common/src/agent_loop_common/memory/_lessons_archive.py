"""Lessons that left the book, and the operator's edits: two append-only keys.

Nothing about a lesson is silently deleted. When the distiller retires, merges or
expires a lesson, or applies an operator's or a maintainer's retirement, the lesson is
written once to `<prefix>-lessons-retired` (`retired/<id>.json`) with why, by whom and
what replaced it. The operator's `agent-loop lessons retire|pin` edits go to
`<prefix>-lessons-operator`, one file each, re-applied by every distiller tick.

Writers use `append_store` (they upload only their own files), so a write costs the same
whatever either key holds. Only the CLI and the report read them whole.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent_loop_common.memory._docs import read_doc, write_doc
from agent_loop_common.memory._layout import lesson_file_name
from agent_loop_common.memory._location import (
    MemoryLocation,
    append_store,
    open_store,
    save_store,
)
from agent_loop_common.records import OperatorEdit, RetiredLesson, Role

__all__ = ["archive_lessons", "read_operator_edits", "read_retired", "record_operator_edit"]

_RETIRED = "retired"
_OPS = "ops"


async def archive_lessons(location: MemoryLocation, retired: Iterable[RetiredLesson]) -> int:
    """Keep retired or superseded lessons for good; returns how many were written."""
    items = list(retired)
    if not items:
        return 0
    store = append_store(location, location.keys.lessons_retired)
    for item in items:
        path = f"{_RETIRED}/{lesson_file_name(item.lesson.id)}.json"
        await write_doc(store, path, item, actor=Role.DISTILLER.value)
    await save_store(location, store)
    return len(items)


async def read_retired(location: MemoryLocation) -> list[RetiredLesson]:
    """Every retired lesson, most recently retired first (downloads the whole key)."""
    store = await open_store(location, location.keys.lessons_retired)
    out: list[RetiredLesson] = []
    for path in store.list_paths(_RETIRED):
        doc = await read_doc(store, path, RetiredLesson)
        if doc is not None:
            out.append(doc)
    return sorted(out, key=lambda r: (r.at, r.lesson.id), reverse=True)


async def record_operator_edit(location: MemoryLocation, edit: OperatorEdit) -> None:
    """Keep an operator's edit for every later distiller tick to apply."""
    store = append_store(location, location.keys.lessons_operator)
    path = f"{_OPS}/{edit.at:%Y%m%dT%H%M%S%f}-{edit.op}-{lesson_file_name(edit.lesson_id)}.json"
    await write_doc(store, path, edit, actor="operator")
    await save_store(location, store)


async def read_operator_edits(location: MemoryLocation) -> list[OperatorEdit]:
    """The operator's edits, oldest first (so the latest pin or unpin wins)."""
    store = await open_store(location, location.keys.lessons_operator)
    out: list[OperatorEdit] = []
    for path in store.list_paths(_OPS):
        doc = await read_doc(store, path, OperatorEdit)
        if doc is not None:
            out.append(doc)
    return sorted(out, key=lambda e: (e.at, e.lesson_id))
