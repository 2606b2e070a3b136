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

from agent_loop_common.memory._context import read_context_from
from agent_loop_common.memory._docs import read_doc, write_doc
from agent_loop_common.memory._layout import DIGEST_PATH, LESSONS_PATH, lesson_file_name
from agent_loop_common.memory._location import (
    MemoryLocation,
    append_store,
    open_store,
    save_store,
)
from agent_loop_common.records import (
    Lesson,
    OperatorEdit,
    RetiredLesson,
    Role,
    apply_operator_edits,
)

__all__ = [
    "archive_lessons",
    "edit_as_operator",
    "find_lesson",
    "read_operator_edits",
    "read_retired",
    "record_operator_edit",
]

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


def find_lesson(lessons: Iterable[Lesson], wanted: str) -> Lesson | None:
    """The lesson with id `wanted`, or the one whose id ends in `#<wanted>` (the id
    without its repository), when exactly one does."""
    items = list(lessons)
    exact = [x for x in items if x.id == wanted]
    short = [x for x in items if x.id.endswith(f"#{wanted}")]
    found = exact or short
    return found[0] if len(found) == 1 else None


async def edit_as_operator(location: MemoryLocation, edit: OperatorEdit) -> Lesson | RetiredLesson:
    """Apply an operator's edit to the book at once, and keep it for the distiller.

    The edit is recorded first, so even if a distiller tick overwrites the book in
    between, its next tick applies the edit again. A retired lesson leaves the book and
    the digest and is archived as the operator's.

    Raises:
        LookupError: No lesson (or more than one) has that id.
    """
    store = await open_store(location, location.keys.context)
    view = await read_context_from(store)
    lesson = find_lesson(view.lessons.lessons, edit.lesson_id)
    if lesson is None:
        raise LookupError(f"no lesson {edit.lesson_id!r} in the book (agent-loop lessons list)")
    edit = edit.model_copy(update={"lesson_id": lesson.id})
    await record_operator_edit(location, edit)
    book, retired = apply_operator_edits(view.lessons, [edit], edit.at)
    if book is not view.lessons:
        await write_doc(store, LESSONS_PATH, book, actor="operator")
        if retired:
            await store.write_text.aio(DIGEST_PATH, view.without([lesson.id]).digest)
        await save_store(location, store)
    await archive_lessons(location, retired)
    if retired:
        return retired[0]
    return next(x for x in book.lessons if x.id == lesson.id)
