"""Itemized edits of the lesson book, and the deterministic upkeep around them. Pure.

The distiller agent never rewrites the book: it calls one tool per edit (add, confirm,
merge, reword, retire), and `LessonEditor` applies each edit to a working copy,
refusing any edit that breaks a rule with a message the model can act on. Provenance is
not the model's to write: the editor derives each lesson's source runs, the issues and
PRs they touched, its hit count and last-seen time from the evidence run ids, which must
name records the tick actually read.

Upkeep that needs no model (ranking, freshness, expiry) lives in `upkeep`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from agent_loop_common.records import (
    Citation,
    CitationKind,
    CitationStatus,
    Lesson,
    LessonAuthor,
    LessonBook,
    LessonEvent,
    LessonState,
    RetiredLesson,
    Role,
    RunRecord,
    Visibility,
)
from agent_loop_distiller._diagnosis import QUOTED, cues_of
from agent_loop_distiller._errors import EditRefused
from agent_loop_distiller._upkeep import hits_of, rank_lessons, seen_at, with_event

__all__ = [
    "Edit",
    "EditOp",
    "Evidence",
    "LessonEditor",
    "LessonLimits",
    "evidence_of",
    "lesson_id",
    "parse_citations",
    "prescriptive_problem",
]

EditOp = Literal["add", "confirm", "merge", "reword", "retire", "narrow"]
"""The agent's edits, and `narrow` (the distiller acting on a diagnosis, `_act`)."""

_PR_URL = re.compile(r"/pull/(\d+)(?:[/?#]|$)")
_ISSUE_URL = re.compile(r"/issues/(\d+)(?:[/?#]|$)")


@dataclass(frozen=True, slots=True)
class Evidence:
    """What one run contributes to a lesson's provenance."""

    run_id: str
    """The run whose record (or graded outcome) backs the lesson."""
    refs: tuple[str, ...]
    """Issues and PRs it worked on or opened (`issue-12`, `pr-15`)."""
    seen_at: datetime
    """When it happened (the record's finish, or the grade's time)."""


def evidence_of(record: RunRecord) -> Evidence:
    """The provenance a record lends: its target and what it opened on GitHub."""
    refs: list[str] = []
    if record.target.number is not None:
        refs.append(record.target.ref)
    if match := _PR_URL.search(record.links.pr_url):
        refs.append(f"pr-{match.group(1)}")
    found = (_ISSUE_URL.search(url) for url in record.links.issue_urls)
    refs.extend(f"issue-{m.group(1)}" for m in found if m)
    return Evidence(record.run_id, tuple(dict.fromkeys(refs)), record.finished_at)


@dataclass(frozen=True, slots=True)
class LessonLimits:
    """Bounds that keep the book (and so every agent's context) small."""

    max_lessons: int = 30
    """Most lessons in the book; beyond it the model must merge or retire first."""
    max_text_chars: int = 400
    """Longest lesson text."""
    max_sources: int = 20
    """Most source run ids (and refs) kept per lesson, the most recent."""


@dataclass(frozen=True, slots=True)
class Edit:
    """One applied edit, for the run's trace and the report."""

    op: EditOp
    lesson_id: str
    """The lesson created or changed (for `merge`: the new one)."""
    detail: str
    """What changed: merged ids, the retire reason, the new text."""


def lesson_id(text: str, seed: str) -> str:
    """A stable id from the text and its first evidence (`L-` + 8 hex digits)."""
    digest = hashlib.sha256(f"{seed}\n{' '.join(text.split()).casefold()}".encode()).hexdigest()
    return f"L-{digest[:8]}"


_CITATION_KINDS: tuple[CitationKind, ...] = ("path", "symbol", "command")


def parse_citations(cites: Sequence[str]) -> list[Citation]:
    """`path:src/a.py`, `symbol:load_config` (or `symbol:load_config@src/a.py`),
    `command:make lint` -> citations; `EditRefused` for anything else."""
    out: list[Citation] = []
    for raw in cites:
        kind, sep, value = str(raw).partition(":")
        kind, value = kind.strip().lower(), value.strip()
        if not sep or kind not in _CITATION_KINDS or not value or len(value) > 200:
            raise EditRefused(
                f"bad citation {raw!r}: write path:<file or folder>, symbol:<name> "
                "(or symbol:<name>@<file>), or command:<command line>."
            )
        path = ""
        if kind == "symbol" and "@" in value:
            value, _, path = (p.strip() for p in value.partition("@"))
        citation = Citation.model_validate({"kind": kind, "value": value, "path": path})
        if citation not in out:
            out.append(citation)
    return out


_NEGATIVE = re.compile(r"^\W*(never|don'?t|do not|avoid|no)\b", re.IGNORECASE)


def prescriptive_problem(text: str) -> str | None:
    """Why `text` is not a prescriptive lesson (what to do, naming the command, file or
    API in backticks, so a run's trace can show it was followed), or `None`."""
    if _NEGATIVE.match(text):
        return (
            "say what to do instead of what not to do (a lesson starting with "
            "'never' or 'do not' is rarely followed)."
        )
    if not QUOTED.search(text):
        return "name the command, file or API to use in backticks, e.g. `make lint`."
    return None


def _last(items: Iterable[str], limit: int) -> list[str]:
    """Unique items in order, keeping the `limit` most recent (last)."""
    unique = list(dict.fromkeys(items))
    return unique[-limit:]


@dataclass
class LessonEditor:
    """A working copy of the book that takes one itemized edit at a time.

    Args:
        book: The lessons as stored.
        evidence: Run id -> provenance, for every run the tick may cite.
        now: The tick's time (`created_at`/`updated_at` of edited lessons).
        limits: Size bounds.
    """

    book: LessonBook
    evidence: Mapping[str, Evidence]
    now: datetime
    limits: LessonLimits = field(default_factory=LessonLimits)
    repo: str = ""
    """The book's repository: new ids carry it (`owner/name#L-1a2b3c4d`)."""
    visibility: Visibility = ""
    """That repository's visibility, recorded on new lessons."""
    measured: frozenset[str] = frozenset()
    """Lessons whose effect is being measured (runs showed them or held them out): a new
    wording of one is a new version with a new id (`reword`), never an edit in place."""
    edits: list[Edit] = field(default_factory=list[Edit])
    retired: list[RetiredLesson] = field(default_factory=list[RetiredLesson])
    """Lessons this editing took out of the book (retired or merged), to archive."""
    summary: str | None = None
    """Set by `finish`; `None` while the agent is still editing."""
    _lessons: dict[str, Lesson] = field(init=False, default_factory=dict[str, Lesson])

    def __post_init__(self) -> None:
        self._lessons = {lesson.id: lesson for lesson in self.book.lessons}

    @property
    def lessons(self) -> list[Lesson]:
        """Current lessons, in book order (new ones last)."""
        return list(self._lessons.values())

    def result(self) -> LessonBook:
        """The edited book, ranked (most hits, then most recently seen, first)."""
        return self.book.model_copy(update={"lessons": rank_lessons(self.lessons)})

    # ------------------------------------------------------------------ edits
    def add(
        self,
        text: str,
        evidence_run_ids: Sequence[str],
        roles: Sequence[str] = (),
        *,
        general: bool = False,
        cites: Sequence[str] = (),
    ) -> Lesson:
        """Add a new lesson learned from the given runs (`general`: for every repository;
        `cites`: what it names, see `parse_citations`)."""
        self._open()
        clean = self._text(text)
        self._no_duplicate(clean)
        if len(self._lessons) >= self.limits.max_lessons:
            raise EditRefused(
                f"the book holds {len(self._lessons)} lessons, the limit. Merge related "
                "lessons or retire a stale one first, or confirm an existing lesson instead."
            )
        evidence = self._evidence(evidence_run_ids)
        citations = parse_citations(cites)
        new_id = self._new_id(clean, evidence[0].run_id)
        lesson = Lesson(
            id=new_id,
            text=clean,
            roles=self._roles(roles),
            source_run_ids=_last((e.run_id for e in evidence), self.limits.max_sources),
            source_refs=_last((r for e in evidence for r in e.refs), self.limits.max_sources),
            hits=len(evidence),
            last_seen_at=max(e.seen_at for e in evidence),
            created_at=self.now,
            updated_at=self.now,
            general=general,
            repo=self.repo,
            visibility=self.visibility,
            citations=citations,
            history=[LessonEvent(at=self.now, op="added")],
        )
        self._lessons[new_id] = lesson
        self.edits.append(Edit("add", new_id, clean))
        return lesson

    def confirm(self, lesson_id_: str, evidence_run_ids: Sequence[str]) -> Lesson:
        """Count new runs as backing an existing lesson (hits, provenance, last seen)."""
        self._open()
        lesson = self._get(lesson_id_)
        evidence = self._evidence(evidence_run_ids)
        fresh = [e for e in evidence if e.run_id not in lesson.source_run_ids]
        if not fresh:
            raise EditRefused(f"{lesson.id} already lists every one of these runs as its evidence.")
        updated = lesson.model_copy(
            update={
                "source_run_ids": _last(
                    [*lesson.source_run_ids, *(e.run_id for e in fresh)], self.limits.max_sources
                ),
                "source_refs": _last(
                    [*lesson.source_refs, *(r for e in fresh for r in e.refs)],
                    self.limits.max_sources,
                ),
                "hits": hits_of(lesson) + len(fresh),
                "last_seen_at": max([seen_at(lesson), *(e.seen_at for e in fresh)]),
            }
        )
        self._lessons[lesson.id] = updated
        self.edits.append(Edit("confirm", lesson.id, ", ".join(e.run_id for e in fresh)))
        return updated

    def merge(self, lesson_ids: Sequence[str], text: str) -> Lesson:
        """Replace two or more lessons by one, keeping all their provenance."""
        self._open()
        ids = list(dict.fromkeys(lesson_ids))
        if len(ids) < 2:
            raise EditRefused("merge_lessons needs at least two different lesson ids.")
        parts = [self._changeable(self._get(i)) for i in ids]
        clean = self._text(text)
        self._no_duplicate(clean, ignore=set(ids))
        roles: list[Role] = []
        if all(p.roles for p in parts):
            roles = list(dict.fromkeys(r for p in parts for r in p.roles))
        sources = sorted(
            {(e, p.updated_at) for p in parts for e in p.source_run_ids}, key=lambda x: x[1]
        )
        new_id = self._new_id(clean, "+".join(sorted(ids)))
        merged = Lesson(
            id=new_id,
            text=clean,
            roles=roles,
            source_run_ids=_last((s for s, _ in sources), self.limits.max_sources),
            source_refs=_last((r for p in parts for r in p.source_refs), self.limits.max_sources),
            hits=sum(hits_of(p) for p in parts),
            last_seen_at=max(seen_at(p) for p in parts),
            created_at=min(p.created_at for p in parts),
            updated_at=self.now,
            general=all(p.general for p in parts),  # general only if every part was
            repo=self.repo,
            visibility=self.visibility,
            citations=list(dict.fromkeys(c for p in parts for c in p.citations)),
            history=[LessonEvent(at=self.now, op="merged", detail=" + ".join(ids))],
        )
        for i in ids:
            gone = self._lessons.pop(i)
            self.retired.append(
                RetiredLesson(
                    lesson=gone, kind="superseded", reason=f"merged into {new_id}",
                    replaced_by=[new_id], at=self.now,
                )
            )  # fmt: skip
        self._lessons[new_id] = merged
        self.edits.append(Edit("merge", new_id, f"{' + '.join(ids)}: {clean}"))
        return merged

    def reword(self, lesson_id_: str, text: str, cites: Sequence[str] | None = None) -> Lesson:
        """Change a lesson's wording (and, with `cites`, its citations: a stale lesson is
        fixed this way and shown again); its hits and provenance stay. A new wording of a
        lesson whose effect is being measured (`measured`) is a new treatment: it becomes
        a new version with a new id, measured afresh, superseding the old one."""
        self._open()
        lesson = self._changeable(self._get(lesson_id_))
        clean = self._text(text)
        citations = lesson.citations if cites is None else parse_citations(cites)
        if clean == lesson.text and citations == lesson.citations:
            raise EditRefused(f"{lesson.id} already has exactly this text.")
        self._no_duplicate(clean, ignore={lesson.id})
        fixed = cites is not None and lesson.citation_status is CitationStatus.BROKEN
        update: dict[str, object] = {
            "text": clean, "updated_at": self.now, "author": LessonAuthor.DISTILLER,
            "author_login": "", "citations": citations,
        }  # fmt: skip
        if cites is not None:
            update |= {"citation_status": CitationStatus.UNCHECKED, "stale_reason": ""}
        if lesson.id in self.measured and clean.casefold() != lesson.text.casefold():
            why = "reworded: a new text is a new treatment, its effect measured afresh"
            return self._new_version(lesson, clean, why, clean, update)
        event = LessonEvent(at=self.now, op="fixed" if fixed else "reworded", detail=clean)
        updated = with_event(lesson, event, **update)
        self._lessons[lesson.id] = updated
        self.edits.append(Edit("reword", lesson.id, clean))
        return updated

    def retire(self, lesson_id_: str, reason: str) -> Lesson:
        """Remove a lesson that is wrong, obsolete or no longer useful."""
        self._open()
        lesson = self._changeable(self._get(lesson_id_))
        why = " ".join(reason.split())
        if not why:
            raise EditRefused("say why the lesson is retired (reason is empty).")
        del self._lessons[lesson.id]
        self.retired.append(
            RetiredLesson(
                lesson=lesson, kind="retired", reason=why[: self.limits.max_text_chars],
                at=self.now,
            )
        )  # fmt: skip
        self.edits.append(Edit("retire", lesson.id, why[: self.limits.max_text_chars]))
        return lesson

    def supersede(self, lesson_id_: str, text: str, why: str) -> Lesson:
        """Replace an ignored lesson by a new version worded `text` (the distiller acting on
        its diagnosis): prescriptive, and still naming one of the things the old one named
        (`cues_of`). The version gets a new id, so its effect is measured afresh (a
        different text is a different treatment); it keeps the old one's scope, citations
        and provenance, and says where it came from (`supersedes`, its first event). The
        old lesson is kept, superseded, with `why` and a link to its successor."""
        self._open()
        old = self._changeable(self._get(lesson_id_))
        clean = self._text(text)
        if problem := prescriptive_problem(clean):
            raise EditRefused(problem)
        named = cues_of(old)
        if named and not any(cue in clean.casefold() for cue in named):
            # The new wording keeps the lesson's meaning: untrusted model text may not
            # swap what the lesson is about for something it invented.
            raise EditRefused(
                "keep naming what the lesson names (one of: " + ", ".join(named) + ")."
            )
        if clean.casefold() == old.text.casefold():
            raise EditRefused(f"{old.id} already has exactly this text.")
        self._no_duplicate(clean)
        return self._new_version(old, clean, f"reworded: ignored ({why})", why)

    def _new_version(
        self, old: Lesson, clean: str, reason: str, detail: str,
        update: Mapping[str, object] | None = None,
    ) -> Lesson:  # fmt: skip
        """`old` replaced by a version worded `clean` (a new id, state `proving`, its
        first event saying where it came from); `old` kept as superseded with `reason`."""
        new_id = self._new_id(clean, old.id)
        event = LessonEvent(at=self.now, op="reworded", detail=f"from {old.id}: {detail}")
        successor = old.model_copy(
            update={
                **(update or {}),
                "id": new_id, "text": clean, "created_at": self.now, "updated_at": self.now,
                "author": LessonAuthor.DISTILLER, "author_login": "", "repo": old.repo or self.repo,
                "state": LessonState.PROVING, "supersedes": [old.id], "diagnosis": None,
                "history": [event],
            }
        )  # fmt: skip
        del self._lessons[old.id]
        self._lessons[new_id] = successor
        self.retired.append(
            RetiredLesson(
                lesson=old, kind="superseded", reason=reason, replaced_by=[new_id], at=self.now
            )
        )
        self.edits.append(Edit("reword", new_id, f"{old.id} -> {clean}"))
        return successor

    def finish(self, summary: str) -> None:
        """End the editing; later edits are refused."""
        self._open()
        self.summary = " ".join(summary.split())[:2_000] or "(no summary)"

    # ------------------------------------------------------------------ checks
    def _open(self) -> None:
        if self.summary is not None:
            raise EditRefused(
                "finish was already called: no more edits. Reply with a final message."
            )

    def _get(self, lesson_id_: str) -> Lesson:
        lesson = self._lessons.get(str(lesson_id_).strip())
        if lesson is None:
            known = ", ".join(self._lessons) or "none"
            raise EditRefused(f"there is no lesson {lesson_id_!r} (current ids: {known}).")
        return lesson

    def _new_id(self, text: str, seed: str) -> str:
        """A fresh id, carrying the repository when the editor knows it."""
        prefix = f"{self.repo}#" if self.repo else ""
        new_id = prefix + lesson_id(text, seed)
        while new_id in self._lessons:
            new_id = prefix + lesson_id(text, new_id)
        return new_id

    def _changeable(self, lesson: Lesson) -> Lesson:
        """The lesson, unless the operator pinned it or a maintainer wrote it: their word
        stands over the distiller's (it may still confirm them)."""
        if lesson.pinned:
            raise EditRefused(
                f"{lesson.id} is pinned by the operator: confirm it, do not change it."
            )
        if lesson.author is LessonAuthor.MAINTAINER:
            raise EditRefused(
                f"{lesson.id} was written by a maintainer: confirm it, do not change it."
            )
        return lesson

    def _text(self, text: str) -> str:
        clean = " ".join(str(text).split())
        if not clean:
            raise EditRefused("the lesson text is empty.")
        if len(clean) > self.limits.max_text_chars:
            raise EditRefused(
                f"the text is {len(clean)} characters; keep a lesson under "
                f"{self.limits.max_text_chars}: one actionable sentence or two."
            )
        return clean

    def _no_duplicate(self, text: str, ignore: set[str] | None = None) -> None:
        for other in self._lessons.values():
            if other.id not in (ignore or set()) and other.text.casefold() == text.casefold():
                raise EditRefused(
                    f"{other.id} already says this; use confirm_lesson to add evidence to it."
                )

    def _evidence(self, run_ids: Sequence[str]) -> list[Evidence]:
        ids = list(dict.fromkeys(str(i).strip() for i in run_ids if str(i).strip()))
        if not ids:
            raise EditRefused("name at least one run id from the records as evidence.")
        unknown = [i for i in ids if i not in self.evidence]
        if unknown:
            raise EditRefused(
                f"unknown run id(s) {', '.join(unknown)}: cite only run ids shown in the records."
            )
        return [self.evidence[i] for i in ids]

    def _roles(self, roles: Sequence[str]) -> list[Role]:
        out: list[Role] = []
        for name in roles:
            try:
                role = Role(str(name).strip().lower())
            except ValueError:
                raise EditRefused(
                    f"unknown role {name!r}: use 'builder' and/or 'reviewer', or [] for both."
                ) from None
            if role is Role.DISTILLER:
                raise EditRefused("lessons are for the builder and reviewer, not the distiller.")
            if role not in out:
                out.append(role)
        return out
