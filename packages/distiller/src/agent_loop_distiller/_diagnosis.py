"""Why a lesson does what it does: applicability, compliance, effect, cost. Pure.

A number alone does not say what to do with a lesson. Its diagnosis does:

- applicability: the share of runs that had it in their book where its scope matched;
- compliance: in runs that showed it, did the run use what the lesson names (a command,
  file or API, quoted in backticks or cited)? Checked cheaply against the run's tool
  trace, and compared with runs that did the same without seeing it (the held-out arm);
- effect: shown minus held out on its target metric, with its interval;
- cost: the prompt tokens it takes in every run that shows it.

The distiller acts on it: a lesson decided `no_effect` or `harmful` retires with the
diagnosis as its reason (followed but useless, or ignored); one that is rarely relevant
is flagged for narrowing; one that is shown but not followed more than when held out is
flagged for rewording (prescriptive wording, not "never X").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from agent_loop_common.records import Lesson, LessonState, TraceStep
from agent_loop_distiller._effect import EffectEstimate, LessonEffect, estimate_effect

__all__ = ["Action", "Diagnosis", "cues_of", "diagnose", "followed"]

Action = Literal["keep", "narrow", "reword", "retire"]

_QUOTED = re.compile(r"`([^`\n]{2,80})`")
_MIN_RUNS = 30
"""Runs before applicability or compliance is judged."""
_RARE = 0.1
"""Below this share of applicable runs using what it names, a lesson is rarely relevant."""


def cues_of(lesson: Lesson) -> tuple[str, ...]:
    """What a run that follows the lesson would use: its quoted spans and citations."""
    quoted = [m.group(1).strip() for m in _QUOTED.finditer(lesson.text)]
    cited = [c.value.strip() for c in lesson.citations]
    return tuple(dict.fromkeys(c.casefold() for c in [*quoted, *cited] if c))


def followed(cues: Sequence[str], trace: Iterable[TraceStep]) -> bool:
    """Whether any step of the run's trace used one of the cues (tool name or arguments)."""
    if not cues:
        return False
    for step in trace:
        text = f"{step.tool} {step.args}".casefold()
        if any(cue in text for cue in cues):
            return True
    return False


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """One lesson's diagnosis and what the distiller does about it."""

    lesson_id: str
    state: LessonState
    applicability: float | None
    """Share of candidate runs where its scope matched (None: no runs yet)."""
    compliance: float | None
    """Share of the runs that showed it which used what it names (None: nothing to check)."""
    base_compliance: float | None
    """The same share among held-out runs: what runs do anyway."""
    effect: EffectEstimate | None
    """On its target metric."""
    tokens_per_run: float
    """Prompt tokens per run that showed it."""
    action: Action
    reason: str

    def line(self) -> str:
        """One line for people (the report, the retire reason)."""
        parts: list[str] = []
        if self.effect is not None:
            e = self.effect
            parts.append(
                f"{e.metric.value} {e.effect:+.2f} [{e.low:+.2f}, {e.high:+.2f}] "
                f"({e.shown} shown / {e.held_out} held out)"
            )
        if self.applicability is not None:
            parts.append(f"applies to {self.applicability:.0%} of runs")
        if self.compliance is not None:
            parts.append(f"followed in {self.compliance:.0%} of runs that saw it")
        parts.append(f"{self.tokens_per_run:.0f} tokens/run")
        return "; ".join(parts)


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def diagnose(effect: LessonEffect, lesson: Lesson | None = None) -> Diagnosis:
    """The lesson's diagnosis and the action it calls for."""
    stats = effect.metrics.get(effect.metric)
    est = estimate_effect(stats, effect.metric) if stats is not None else None
    compliance = _share(effect.complied, effect.compliance_checked)
    base = _share(effect.followed_when_held, effect.held_out) if effect.compliance_checked else None
    applicability = _share(effect.applicable, effect.candidates)
    draft = Diagnosis(
        effect.lesson_id,
        effect.state,
        applicability,
        compliance,
        base,
        est,
        effect.tokens_shown / effect.shown if effect.shown else 0.0,
        "keep",
        "",
    )
    action, reason = _action(effect, draft)
    return replace(draft, action=action, reason=reason)


def _action(effect: LessonEffect, d: Diagnosis) -> tuple[Action, str]:
    if effect.state is LessonState.HARMFUL:
        return "retire", f"harmful: {d.line()}"
    if effect.state is LessonState.NO_EFFECT:
        if d.compliance is not None and d.compliance >= 0.5:
            return "retire", f"followed but no effect: {d.line()}"
        return "retire", f"no effect (rarely followed: reword it as a new lesson): {d.line()}"
    checked = effect.compliance_checked
    if checked >= _MIN_RUNS and d.compliance is not None:
        if d.compliance < _RARE and (d.base_compliance or 0.0) < _RARE:
            return "narrow", f"rarely relevant to the work it is shown in: {d.line()}"
        if d.base_compliance is not None and d.compliance <= d.base_compliance:
            return "reword", f"not followed more when shown than when held out: {d.line()}"
    return "keep", d.line()
