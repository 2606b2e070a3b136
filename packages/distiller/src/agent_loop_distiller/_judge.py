"""The distiller acting on its diagnoses: budgeted compliance judgments, narrowing, rewording.

```python
ask = ModelAsk(runtime.call_llm("agent"), runtime.agent_model())
judged = await judge_compliance(ask, effects, book, records, budget=5)
measured = measure_effects(effects, book, records, now, judgments=judged.answers)
acted = await act_on_diagnoses(ask, effects, measured, now)
```

Compliance is checked for free where a lesson names something (its trace cues). A lesson
that names nothing can only be judged by reading the run: the distiller's model is asked
"did this run act on this lesson?" for at most `budget` (lesson, run) pairs per tick
(`AGENT_LOOP_COMPLIANCE_JUDGMENTS`), spent on the lessons closest to a decision, and
every answer bought is kept (`EffectBook.judgments`) so none is bought twice.

The model's answers are untrusted: a judgment counts only if the reply is exactly a JSON
`true` or `false`, a rewording only if it is `{"text": "..."}` whose text passes the
editor's rules (length, no duplicate, prescriptive). Anything else is "unknown" or leaves
the lesson flagged; a failing or exhausted model stops this tick's questions and never
fails the tick. What the model decides is bounded by what the diagnosis allowed: it can
reword a lesson the records found ignored, nothing else; narrowing is decided from the
records alone; a pinned or maintainer-written lesson is only ever flagged.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

import structlog
from flyte.ai.agents import LLMCallable

from agent_loop_common.llm import LLMError
from agent_loop_common.records import (
    Lesson,
    LessonAuthor,
    LessonBook,
    LessonDiagnosis,
    LessonEvent,
    LessonState,
    RetiredLesson,
    Role,
    RunRecord,
    TraceStep,
    Visibility,
)
from agent_loop_distiller._diagnosis import (
    MIN_CHECKED_RUNS,
    Diagnosis,
    cues_of,
    narrow_scope,
    reset_compliance,
)
from agent_loop_distiller._effect import EffectBook, LessonEffect
from agent_loop_distiller._errors import EditRefused
from agent_loop_distiller._lessons import Edit, LessonEditor, LessonLimits
from agent_loop_distiller._measure import Measured
from agent_loop_distiller._prompts import (
    JUDGE_INSTRUCTIONS,
    REWORD_INSTRUCTIONS,
    judge_prompt,
    reword_prompt,
)
from agent_loop_distiller._upkeep import with_event

__all__ = [
    "Acted",
    "Judged",
    "ModelAsk",
    "act_on_diagnoses",
    "judge_compliance",
    "parse_judgment",
    "parse_rewording",
]

_log = structlog.get_logger(__name__)

_KEEP_JUDGMENTS = 2_000
"""Most judgments kept in the cache (the newest): far more than a tick's records hold."""


@dataclass
class ModelAsk:
    """One question to the distiller's model whose reply is a single value.

    The first failure (the provider, the run's budget) ends the tick's questions: `failed`
    says why, and every later question answers `None` without a call.
    """

    call_llm: LLMCallable
    model: str
    calls: int = 0
    """Questions sent to the model."""
    failed: str = ""
    steps: list[TraceStep] = field(default_factory=list[TraceStep])
    """One step per question, with the start of the reply: the run's record keeps them
    (ahead of the distiller agent's own steps), so what was asked and answered is audited."""

    async def __call__(self, system: str, prompt: str, *, tool: str, about: str) -> str | None:
        """The model's reply text, or `None` when it could not be asked (`tool`, `about`:
        how the question is named in the trace, e.g. `judge_compliance`, `<lesson> <run>`)."""
        if self.failed:
            return None
        self.calls += 1
        start = time.monotonic()
        try:
            reply = await self.call_llm(
                self.model, system, [{"role": "user", "content": prompt}], None
            )
        except LLMError as exc:
            self.failed = str(exc)
            _log.warning("distiller.model_question_failed", error=self.failed)
            self._step(tool, about, start, error=self.failed)
            return None
        text = reply.content or ""
        self._step(tool, f"{about} -> {text[:80]!r}", start)
        return text

    def _step(self, tool: str, args: str, start: float, error: str = "") -> None:
        ms = int((time.monotonic() - start) * 1000)
        self.steps.append(TraceStep(tool=tool, args=args, ok=not error, ms=ms, error=error[:300]))


def parse_judgment(reply: str | None) -> bool | None:
    """A compliance judgment: exactly a JSON `true` or `false`; anything else is unknown."""
    if reply is None:
        return None
    try:
        value: object = json.loads(reply.strip())
    except ValueError:
        return None
    return value if isinstance(value, bool) else None


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


# ---------------------------------------------------------------------- judgments


@dataclass
class Judged:
    """What one tick's compliance judgments found."""

    answers: dict[tuple[str, str], bool] = field(default_factory=dict[tuple[str, str], bool])
    """(lesson id, run id) -> followed, for this tick's records (bought or cached)."""
    asked: int = 0
    """Judgments bought this tick (model calls)."""
    unknown: int = 0
    """Of those, replies that were not a JSON boolean (or no reply)."""
    cached: int = 0
    """Answers reused from earlier ticks."""
    left: int = 0
    """Pairs that needed a judgment and did not get one (over the budget)."""


def _closeness(effect: LessonEffect) -> tuple[int, int, float]:
    """Sort key: the lesson nearest a decision first. First the one that needs the fewest
    more checked runs before its compliance is judged (`MIN_CHECKED_RUNS`), then, among
    lessons past that, the one whose effect test is nearest its threshold."""
    missing = MIN_CHECKED_RUNS - effect.compliance_checked
    wealth = max(
        effect.help.log_wealth,
        effect.harm.log_wealth,
        min(effect.below.log_wealth, effect.above.log_wealth),
    )
    return (0, missing, -wealth) if missing > 0 else (1, 0, -wealth)


def _key(lesson_id: str, run_id: str) -> str:
    return f"{lesson_id} {run_id}"


async def judge_compliance(
    ask: ModelAsk | None,
    effects: EffectBook,
    book: LessonBook,
    records: Iterable[RunRecord],
    budget: int,
) -> Judged:
    """Judge, within `budget` model calls, whether the new records acted on the lessons
    that name nothing a trace could show (both arms: shown, and held out for the base
    rate). Every reply is cached in `effects.judgments`, an unusable one as unknown."""
    out = Judged()
    spend = max(budget, 0) if ask is not None else 0
    blind = {x.id: x for x in book.lessons if not cues_of(x)}
    if not blind or (not spend and not effects.judgments):
        return out  # nothing to judge, nothing to buy and nothing cached
    counted = set(effects.recent_run_ids)
    wanted: list[tuple[Lesson, RunRecord]] = []
    for record in records:
        if record.role is Role.DISTILLER or record.run_id in counted:
            continue
        for e in record.exposures:
            lesson = blind.get(e.lesson_id)
            if lesson is None or not e.applicable or not (e.shown or e.held_out):
                continue
            key = _key(lesson.id, record.run_id)
            if key in effects.judgments:
                cached = effects.judgments[key]
                out.cached += 1
                if cached is not None:
                    out.answers[(lesson.id, record.run_id)] = cached
            else:
                wanted.append((lesson, record))
    if spend and len(wanted) > spend:
        closeness = {x: _closeness(effects.effect(x)) for x in {p[0].id for p in wanted}}
        wanted.sort(key=lambda pair: closeness[pair[0].id])  # stable: run order within
    for lesson, record in wanted[:spend]:
        assert ask is not None
        if ask.failed:
            break
        reply = await ask(
            JUDGE_INSTRUCTIONS, judge_prompt(lesson, record),
            tool="judge_compliance", about=f"{lesson.id} {record.run_id}",
        )  # fmt: skip
        if reply is None:
            break  # the model failed: nothing bought, nothing cached
        answer = parse_judgment(reply)
        out.asked += 1
        effects.judgments[_key(lesson.id, record.run_id)] = answer
        if answer is None:
            out.unknown += 1
            effects.effect(lesson.id).unknown += 1
        else:
            out.answers[(lesson.id, record.run_id)] = answer
    out.left = len(wanted) - out.asked
    if len(effects.judgments) > _KEEP_JUDGMENTS:
        effects.judgments = dict(list(effects.judgments.items())[-_KEEP_JUDGMENTS:])
    return out


# ---------------------------------------------------------------------- actions


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
