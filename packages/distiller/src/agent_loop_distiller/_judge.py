"""Budgeted model judgments of compliance, for lessons a trace cannot check.

```python
ask = ModelAsk(runtime.call_llm("agent"), runtime.agent_model())
judged = await judge_compliance(ask, effects, book, records, budget=5)
measured = measure_effects(effects, book, records, now, judgments=judged.answers)
```

Compliance is checked for free where a lesson names something (its trace cues). A lesson
that names nothing can only be judged by reading the run: the distiller's model is asked
"did this run act on this lesson?" for at most `budget` (lesson, run) pairs per tick
(`AGENT_LOOP_COMPLIANCE_JUDGMENTS`), spent on the lessons closest to a decision, and
every answer bought is kept (`EffectBook.judgments`) so none is bought twice.

The model's answers are untrusted: a judgment counts only if the reply is exactly a JSON
`true` or `false`; anything else is "unknown". A failing or exhausted model stops this
tick's questions (`ModelAsk`, shared with `_act`) and never fails the tick.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import structlog
from flyte.ai.agents import LLMCallable

from agent_loop_common.llm import LLMError
from agent_loop_common.records import (
    Lesson,
    LessonBook,
    Role,
    RunRecord,
    TraceStep,
)
from agent_loop_distiller._diagnosis import (
    MIN_CHECKED_RUNS,
    cues_of,
)
from agent_loop_distiller._effect import EffectBook, LessonEffect
from agent_loop_distiller._prompts import (
    JUDGE_INSTRUCTIONS,
    judge_prompt,
)

__all__ = [
    "Judged",
    "ModelAsk",
    "judge_compliance",
    "parse_judgment",
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
