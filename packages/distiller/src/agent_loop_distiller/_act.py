"""The distiller acting on its diagnoses: narrowing from the records, rewording by the model.

```python
acted = await act_on_diagnoses(ask, effects, measured, now)   # after measure_effects
book, superseded = acted.book, acted.retired
```

Every touched lesson gets its diagnosis recorded (`Lesson.diagnosis`). A rarely relevant
lesson is narrowed to the work kinds where runs used it, decided from the records alone
(`narrow_scope`). An ignored one is reworded by the model into a new version that
supersedes it (`LessonEditor.supersede`). What the model decides is bounded by what the
diagnosis allowed: it can reword a lesson the records found ignored, nothing else, and
only a reply of exactly `{"text": "..."}` whose text passes the editor's rules counts. A
pinned or maintainer-written lesson, or a proven one, is only ever flagged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from agent_loop_common.records import (
    Lesson,
    LessonAuthor,
    LessonBook,
    LessonDiagnosis,
    LessonEvent,
    LessonState,
    RetiredLesson,
    Visibility,
)
from agent_loop_distiller._diagnosis import Diagnosis, narrow_scope, reset_compliance
from agent_loop_distiller._effect import EffectBook
from agent_loop_distiller._errors import EditRefused
from agent_loop_distiller._judge import ModelAsk
from agent_loop_distiller._lessons import Edit, LessonEditor, LessonLimits
from agent_loop_distiller._measure import Measured
from agent_loop_distiller._prompts import REWORD_INSTRUCTIONS, reword_prompt
from agent_loop_distiller._upkeep import with_event

__all__ = ["Acted", "act_on_diagnoses", "parse_rewording"]


def parse_rewording(reply: str | None) -> str | None:
    """A rewording: exactly a JSON object `{"text": "<non-empty string>"}`, else `None`."""
    if reply is None:
        return None
    try:
        value: object = json.loads(reply.strip())
    except ValueError:
        return None
    if not isinstance(value, dict) or len(value) != 1:  # pyright: ignore[reportUnknownArgumentType]
        return None
    text: object = value.get("text")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return text if isinstance(text, str) and text.strip() else None


@dataclass
class Acted:
    """What the distiller did about this tick's diagnoses."""

    book: LessonBook
    """The book after it (diagnoses recorded, narrowed scopes, reworded versions)."""
    retired: list[RetiredLesson] = field(default_factory=list[RetiredLesson])
    """Lessons superseded by a reworded version (archived with the tick's commit)."""
    edits: list[Edit] = field(default_factory=list[Edit])
    """The narrowings and rewordings, as edits (the report's "Edits this tick")."""
    narrowed: dict[str, str] = field(default_factory=dict[str, str])
    """Lesson id -> why it was narrowed."""
    reworded: dict[str, str] = field(default_factory=dict[str, str])
    """Old lesson id -> the id of the version that replaced it."""
    flagged: dict[str, str] = field(default_factory=dict[str, str])
    """Lesson id -> why its action was only flagged."""


def _protected(lesson: Lesson) -> str:
    """Why the distiller may not change this lesson ("" when it may)."""
    if lesson.pinned:
        return "pinned by the operator"
    if lesson.author is LessonAuthor.MAINTAINER:
        login = f" (@{lesson.author_login})" if lesson.author_login else ""
        return f"written by a maintainer{login}"
    return ""


@dataclass
class _Plan:
    """The pure part of acting: narrowings applied, rewordings still to ask for."""

    lessons: dict[str, Lesson]
    notes: dict[str, LessonDiagnosis]
    reword: list[tuple[Lesson, Diagnosis]]


def _plan(effects: EffectBook, measured: Measured, book: LessonBook, now: datetime,
          acted: Acted) -> _Plan:  # fmt: skip
    lessons = {x.id: x for x in book.lessons}
    notes: dict[str, LessonDiagnosis] = {}
    reword: list[tuple[Lesson, Diagnosis]] = []
    for lesson_id, d in measured.diagnoses.items():
        lesson = lessons.get(lesson_id)
        if lesson is None:  # retired by its effect this tick (the reason says why)
            continue
        protected = _protected(lesson)
        if d.action == "keep":
            notes[lesson_id] = d.record(now, done=False)
        elif protected:
            why = f"{protected}: flagged for people, not changed"
            notes[lesson_id] = d.record(now, done=False, note=f"{d.reason} ({why})")
            acted.flagged[lesson_id] = why
        elif d.action == "narrow":
            scope = narrow_scope(effects.effect(lesson_id), lesson)
            if scope is None:
                why = "the records do not show which work kinds it is used in: flagged"
                notes[lesson_id] = d.record(now, done=False, note=f"{d.reason} ({why})")
                acted.flagged[lesson_id] = why
                continue
            kinds, why = scope
            names = ", ".join(k.value for k in kinds)
            event = LessonEvent(at=now, op="narrowed", detail=f"to {names}: {why}")
            lessons[lesson_id] = with_event(lesson, event, kinds=kinds, updated_at=now)
            reset_compliance(effects.effect(lesson_id))
            notes[lesson_id] = d.record(now, done=True, note=f"narrowed to {names}: {why}")
            acted.narrowed[lesson_id] = why
            acted.edits.append(Edit("narrow", lesson_id, f"to {names}: {why}"))
        elif d.action == "reword" and lesson.state is LessonState.PROVEN:
            why = "proven to help as worded: flagged, not reworded"
            notes[lesson_id] = d.record(now, done=False, note=f"{d.reason} ({why})")
            acted.flagged[lesson_id] = why
        elif d.action == "reword":
            reword.append((lesson, d))
    return _Plan(lessons, notes, reword)


async def act_on_diagnoses(
    ask: ModelAsk | None,
    effects: EffectBook,
    measured: Measured,
    now: datetime,
    *,
    limits: LessonLimits | None = None,
    max_rewords: int = 3,
    repo: str = "",
    visibility: Visibility = "",
) -> Acted:
    """Record every diagnosis on its lesson and carry out what it calls for.

    `narrow`: the scope shrinks to the work kinds where runs used the lesson (from the
    records; flagged when they do not tell). `reword`: the model writes a prescriptive
    version (at most `max_rewords` per tick), which supersedes the lesson with a new id;
    an unusable reply leaves it flagged. A pinned or maintainer-written lesson, or a
    `proven` one (its wording demonstrably works), is only flagged.
    """
    acted = Acted(book=measured.book)
    plan = _plan(effects, measured, measured.book, now, acted)
    editor = LessonEditor(
        book=measured.book.model_copy(
            update={"lessons": [plan.lessons[x.id] for x in measured.book.lessons]}
        ),
        evidence={},
        now=now,
        limits=limits or LessonLimits(),
        repo=repo,
        visibility=visibility,
    )
    for lesson, d in plan.reword:
        if len(acted.reworded) >= max_rewords or ask is None or ask.failed:
            why = "no model question left this tick: flagged"
            plan.notes[lesson.id] = d.record(now, done=False, note=f"{d.reason} ({why})")
            acted.flagged[lesson.id] = why
            continue
        reply = await ask(
            REWORD_INSTRUCTIONS, reword_prompt(lesson, d.reason),
            tool="reword_ignored", about=lesson.id,
        )  # fmt: skip
        text = parse_rewording(reply)
        try:
            if text is None:
                raise EditRefused('the model\'s reply was not {"text": "..."}')
            successor = editor.supersede(lesson.id, text, d.line())
        except EditRefused as exc:
            why = f"rewording refused ({exc}): flagged"
            plan.notes[lesson.id] = d.record(now, done=False, note=f"{d.reason} ({why})")
            acted.flagged[lesson.id] = why
            continue
        note = d.record(now, done=True, note=f"reworded as {successor.id}: {d.reason}")
        gone = editor.retired[-1]
        gone = gone.model_copy(
            update={"lesson": gone.lesson.model_copy(update={"diagnosis": note})}
        )
        editor.retired[-1] = gone
        effects.effect(lesson.id).retired = gone
        acted.reworded[lesson.id] = successor.id
    lessons = [
        x.model_copy(update={"diagnosis": plan.notes[x.id]}) if x.id in plan.notes else x
        for x in (editor.result().lessons if editor.edits else editor.book.lessons)
    ]
    acted.book = measured.book.model_copy(update={"lessons": lessons})
    acted.retired = list(editor.retired)
    acted.edits += editor.edits
    return acted
