"""The context key: digest and lessons, read by every agent run, written by the distiller.

Agents open it with `read_only_prefixes=AGENT_READ_ONLY_PREFIXES`, so even a handle
that leaked into a tool cannot write `context/`; and they never save it. The key holds
only the current digest and lessons (bounded by the distiller's budget), so reading it
costs the same at any history size.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace

from flyte.ai.agents import MemoryStore

from agent_loop_common.memory._docs import read_doc, write_doc
from agent_loop_common.memory._layout import (
    AGENT_READ_ONLY_PREFIXES,
    DIGEST_PATH,
    LESSONS_PATH,
    general_path,
    repo_prefix,
)
from agent_loop_common.memory._location import (
    MemoryLocation,
    append_store,
    open_store,
    save_store,
)
from agent_loop_common.records import Lesson, LessonBook, Role

__all__ = [
    "ContextView",
    "may_share",
    "open_context_read_only",
    "read_context",
    "read_context_from",
    "write_general_lessons",
]


@dataclass(frozen=True, slots=True)
class ContextView:
    """What an agent run gets from memory."""

    digest: str
    """`context/digest.md`: the distiller's budgeted summary (untrusted context)."""
    lessons: LessonBook
    """`context/lessons.json`: itemized lessons with ids to quote in the run record."""
    lessons_corrupt: bool = False
    """`lessons.json` is there but unreadable (read as empty; its writer replaces it)."""

    def without(self, lesson_ids: Iterable[str]) -> ContextView:
        """This view with those lessons out of the book and out of the digest.

        The digest quotes each lesson on a line of its own starting `- [<id>]`, so a
        lesson a run must not show (held out, or hidden by a broken citation) leaves both
        places, and no model of the run sees it.
        """
        hidden = set(lesson_ids)
        if not hidden:
            return self
        kept = [x for x in self.lessons.lessons if x.id not in hidden]
        marks = tuple(f"- [{i}]" for i in hidden)
        lines = [line for line in self.digest.splitlines(keepends=True)
                 if not line.startswith(marks)]  # fmt: skip
        return replace(
            self, digest="".join(lines), lessons=self.lessons.model_copy(update={"lessons": kept})
        )


async def open_context_read_only(location: MemoryLocation) -> MemoryStore:
    """Open the context key with `context/` read-only (the agents' handle)."""
    return await open_store(
        location, location.keys.context, read_only_prefixes=AGENT_READ_ONLY_PREFIXES
    )


async def read_context_from(store: MemoryStore) -> ContextView:
    """Read digest and lessons from an opened context store."""
    digest = await store.read_text.aio(DIGEST_PATH, default="")
    read = await read_doc(store, LESSONS_PATH, LessonBook)
    present = bool((await store.read_text.aio(LESSONS_PATH, default="")).strip())
    return ContextView(
        digest=digest, lessons=read or LessonBook(), lessons_corrupt=read is None and present
    )


def may_share(lesson: Lesson, path: str, shared: MemoryLocation, *, sources: Collection[str],
              reader_public: bool) -> bool:  # fmt: skip
    """Whether a lesson found at `path` of the general key may reach another repository.

    Only a lesson marked general, from a repository the operator listed in
    `AGENT_LOOP_SHARE_LESSONS_FROM`, stored in that repository's own file (so no
    distiller speaks for another repository), and never one of a private (or unknown
    visibility) repository into a public one.
    """
    if not lesson.general or lesson.repo.lower() not in {s.lower() for s in sources}:
        return False
    if path != general_path(repo_prefix(shared.prefix, lesson.repo)):
        return False
    return not reader_public or lesson.visibility == "public"


async def read_context(
    location: MemoryLocation,
    *,
    shared: MemoryLocation | None = None,
    share_from: Collection[str] = (),
    reader_public: bool = True,
) -> ContextView:
    """Download the context key read-only and return digest and lessons.

    Args:
        location: The run's namespace.
        shared: With `AGENT_LOOP_REPOS`, the bare-prefix location: the general lessons
            of the repositories in `share_from` are added after this one's own (one
            small key, whatever the number of repositories), as `may_share` allows.
        share_from: `AGENT_LOOP_SHARE_LESSONS_FROM`; empty (the default): nothing is
            shared and the shared key is not even read.
        reader_public: The reading repository is public (or its visibility unknown):
            only lessons of public repositories may reach it.
    """
    view = await read_context_from(await open_context_read_only(location))
    if shared is None or not share_from:
        return view
    store = await open_store(shared, shared.keys.general)
    own = {lesson.id for lesson in view.lessons.lessons}
    extra: list[Lesson] = []
    for path in store.list_paths("general"):
        if path == general_path(location.prefix):
            continue
        book = await read_doc(store, path, LessonBook)
        for lesson in book.lessons if book else []:
            if lesson.id not in own and may_share(
                lesson, path, shared, sources=share_from, reader_public=reader_public
            ):
                extra.append(lesson)
                own.add(lesson.id)
    if not extra:
        return view
    lessons = LessonBook(lessons=[*view.lessons.lessons, *extra])
    return ContextView(view.digest, lessons, view.lessons_corrupt)


async def write_general_lessons(
    shared: MemoryLocation, namespace: MemoryLocation, book: LessonBook
) -> None:
    """Publish the general lessons of one repository's book (`AGENT_LOOP_REPOS` only).

    Each repository's distiller writes only its own file, through a handle that uploads
    only that file, so the distillers of different repositories never overwrite each
    other.
    """
    store = append_store(shared, shared.keys.general)
    general = LessonBook(lessons=[x for x in book.lessons if x.general])
    await write_doc(store, general_path(namespace.prefix), general, actor=Role.DISTILLER.value)
    await save_store(shared, store)
