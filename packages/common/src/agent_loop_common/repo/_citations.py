"""Checking a lesson's citations against the commit a run works on.

A lesson that names `src/app/config.py`, the function `load_config` or the command
`make lint` is only as good as those still being there. Before a run shows a lesson it
checks each citation against its base tree, read through the run's own `RepoSnapshot`
(the tree listing the run reads anyway; a symbol search uses the tarball the sandbox
downloads for its tests), so the check adds no request a run would not make:

- `path`: a file, or a folder holding one, at that path;
- `symbol`: the name as a whole word in the named file, or in any text file;
- `command`: every repository path the command line names (`./scripts/x`, `tests/`,
  `tools/run.py`) exists, and `make <target>` names a target of the root `Makefile`.
  Program names (`pytest`, `uv`) are the machine's, not the tree's: not checked.

A lesson with a missing citation is hidden from the run and reported as a `StaleLesson`,
so the distiller marks it stale, to fix or retire.
"""

from __future__ import annotations

import re
import shlex
import weakref
from collections.abc import Iterable

from agent_loop_common.records import Citation, Lesson, StaleLesson
from agent_loop_common.repo._snapshot import RepoSnapshot

__all__ = ["broken_citations", "stale_lessons"]

_PATHLIKE = re.compile(r"^(?:\./)?[\w.@+-]+(?:/[\w.@+-]*)+$|^[\w-]+\.[A-Za-z0-9]{1,8}$")
"""A token that names a repository path: has a slash, or is `name.ext`."""


def _norm(path: str) -> str:
    clean = path.strip().strip("`")
    while clean.startswith("./"):
        clean = clean[2:]
    return clean.rstrip("/")


def _path_exists(path: str, paths: set[str], folders: set[str]) -> bool:
    clean = _norm(path)
    return bool(clean) and (clean in paths or clean in folders)


def _folders(paths: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for path in paths:
        parts = path.split("/")[:-1]
        out.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return out


_WORD = re.compile(r"\w+")
_WORDS: weakref.WeakKeyDictionary[RepoSnapshot, frozenset[str]] = weakref.WeakKeyDictionary()
"""Every identifier-like word of a snapshot's text files, built once per snapshot: a book
of symbols is then checked in one pass over the code, not one pass per symbol."""


async def _symbol_found(snapshot: RepoSnapshot, citation: Citation) -> bool:
    name = citation.value.strip()
    word = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")
    if citation.path:
        text = await snapshot.text(_norm(citation.path))
        return text is not None and word.search(text) is not None
    index = await snapshot.search_index()
    if _WORD.fullmatch(name):
        if snapshot not in _WORDS:
            _WORDS[snapshot] = frozenset(w for text in index.values() for w in _WORD.findall(text))
        return name in _WORDS[snapshot]
    return any(word.search(text) for text in index.values())


async def _command_ok(
    snapshot: RepoSnapshot, command: str, paths: set[str], folders: set[str]
) -> bool:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    for i, word in enumerate(words):
        if word.startswith("-") or "://" in word or "=" in word:
            continue
        if _PATHLIKE.match(word) and not _path_exists(word, paths, folders):
            return False
        if word == "make" and i + 1 < len(words) and not words[i + 1].startswith("-"):
            makefile = await snapshot.text("Makefile") or ""
            target = re.escape(words[i + 1])
            if not re.search(rf"^{target}\s*:", makefile, re.MULTILINE):
                return False
    return True


async def _listing(snapshot: RepoSnapshot) -> tuple[set[str], set[str]]:
    paths = set(await snapshot.paths())
    return paths, _folders(paths)


async def broken_citations(
    snapshot: RepoSnapshot,
    citations: Iterable[Citation],
    listing: tuple[set[str], set[str]] | None = None,
) -> list[str]:
    """The citations missing from the snapshot's commit, by `Citation.label`.

    `listing`: the commit's files and folders, when the caller checks many lessons (built
    once instead of once per lesson).
    """
    paths, folders = listing or await _listing(snapshot)
    broken: list[str] = []
    for citation in citations:
        match citation.kind:
            case "path":
                ok = _path_exists(citation.value, paths, folders)
            case "symbol":
                ok = await _symbol_found(snapshot, citation)
            case "command":
                ok = await _command_ok(snapshot, citation.value, paths, folders)
        if not ok:
            broken.append(citation.label())
    return broken


async def stale_lessons(snapshot: RepoSnapshot, lessons: Iterable[Lesson]) -> list[StaleLesson]:
    """The lessons a run must hide: those with a citation missing at the snapshot."""
    out: list[StaleLesson] = []
    cited = [lesson for lesson in lessons if lesson.citations]
    if not cited:
        return out
    listing = await _listing(snapshot)
    for lesson in cited:
        broken = await broken_citations(snapshot, lesson.citations, listing)
        if broken:
            out.append(StaleLesson(lesson_id=lesson.id, broken=broken, base_sha=snapshot.sha))
    return out
