"""Why a lesson does what it does: applicability, compliance, effect, cost. Pure.

A number alone does not say what to do with a lesson. Its diagnosis does:

- applicability: the share of runs that had it in their book where its scope matched;
- compliance: in runs that showed it, did the run use what the lesson names (a command,
  file or API, quoted in backticks or cited)? Checked cheaply against the run's tool
  trace; a lesson that names nothing is judged by a budgeted model call instead
  (`_judge`). Compared with runs that did the same without seeing it (the held-out arm);
- effect: shown minus held out on its target metric, with its interval;
- cost: the prompt tokens it takes in every run that shows it.

The distiller acts on it: a lesson decided `no_effect` or `harmful` retires with the
diagnosis as its reason (followed but useless, or ignored); one that is rarely relevant
is narrowed to the work kinds where runs used it (`narrow_scope`, from the records
alone); one that is shown but not followed more than when held out is reworded by the
model into a new version (`_act.act_on_diagnoses`). A pinned or maintainer-written
lesson is never changed: its action is only flagged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from agent_loop_common.records import (
    DiagnosisAction,
    Lesson,
    LessonDiagnosis,
    LessonReplay,
    LessonState,
    TraceStep,
    WorkKind,
)
from agent_loop_distiller._effect import (
    EffectEstimate,
    LessonEffect,
    replay_e_values,
    target_estimate,
)

__all__ = [
    "MIN_CHECKED_RUNS",
    "QUOTED",
    "Action",
    "Diagnosis",
    "count_use",
    "cues_of",
    "diagnose",
    "followed",
    "narrow_scope",
    "replay_line",
    "reset_compliance",
    "trace_text",
]

Action = DiagnosisAction
JudgedBy = Literal["trace", "model", "trace+model", ""]
"""How compliance was decided: the tool trace, a model judgment, or both."""

QUOTED = re.compile(r"`([^`\n]{2,80})`")
"""A span a lesson names in backticks (a cue a trace can show; `prescriptive_problem`
requires one)."""
MIN_CHECKED_RUNS = 30
"""Runs before applicability or compliance is judged."""
_RARE = 0.1
"""Below this share of applicable runs using what it names, a lesson is rarely relevant."""


def cues_of(lesson: Lesson) -> tuple[str, ...]:
    """What a run that follows the lesson would use: its quoted spans and citations."""
    quoted = [m.group(1).strip() for m in QUOTED.finditer(lesson.text)]
    cited = [c.value.strip() for c in lesson.citations]
    return tuple(dict.fromkeys(c.casefold() for c in [*quoted, *cited] if c))


def trace_text(trace: Iterable[TraceStep]) -> str:
    """The run's tool calls (names and arguments) as one casefolded text, one step a line:
    computed once per run, then searched for every lesson's cues."""
    return "\n".join(f"{step.tool} {step.args}" for step in trace).casefold()


def followed(cues: Sequence[str], trace: Iterable[TraceStep] | str) -> bool:
    """Whether any step of the run's trace used one of the cues (tool name or arguments);
    `trace` may be its `trace_text` already."""
    if not cues:
        return False
    text = trace if isinstance(trace, str) else trace_text(trace)
    return any(cue in text for cue in cues)


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
    checked: int
    """Shown runs whose compliance was decided."""
    judged_by: JudgedBy
    """How compliance was decided (empty: nothing decided yet)."""
    effect: EffectEstimate | None
    """On its target metric."""
    tokens_per_run: float
    """Prompt tokens per run that showed it."""
    action: Action
    reason: str
    replay: str = ""
    """Its replay evidence in one line (`replay_line`; empty: never replayed)."""

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
            base = (
                ""
                if self.base_compliance is None
                else f" ({self.base_compliance:.0%} of held-out runs did anyway)"
            )
            parts.append(f"followed in {self.compliance:.0%} of runs that saw it{base}")
        parts.append(f"{self.tokens_per_run:.0f} tokens/run")
        if self.replay:
            parts.append(self.replay)
        return "; ".join(parts)

    def record(self, at: datetime, *, done: bool, note: str = "") -> LessonDiagnosis:
        """The diagnosis as kept on the lesson, with whether its action was carried out."""
        return LessonDiagnosis(
            at=at,
            applicability=self.applicability,
            compliance=self.compliance,
            base_compliance=self.base_compliance,
            checked=self.checked,
            judged_by=self.judged_by,
            action=self.action,
            done=done,
            note=note or self.reason,
        )


def count_use(effect: LessonEffect, kind: str, shown: bool, used: bool, *, by_model: bool) -> None:
    """Count one run whose use of the lesson was decided (`by_model`: a model judgment)."""
    if shown:
        effect.compliance_checked += 1
        effect.complied += used
    else:
        effect.held_checked += 1
        effect.followed_when_held += used
    effect.judged += by_model
    counts = effect.kind_use.setdefault(kind, [0, 0])
    counts[0] += 1
    counts[1] += used


def reset_compliance(effect: LessonEffect) -> None:
    """Start compliance afresh (after narrowing: the old counts judged the old scope)."""
    effect.complied = effect.compliance_checked = 0
    effect.followed_when_held = effect.held_checked = effect.judged = 0
    effect.kind_use = {}


def _judged_by(effect: LessonEffect) -> JudgedBy:
    checked = effect.compliance_checked + effect.held_checked
    if not checked:
        return ""
    if effect.judged == 0:
        return "trace"
    return "model" if effect.judged >= checked else "trace+model"


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def diagnose(effect: LessonEffect, lesson: Lesson | None = None) -> Diagnosis:
    """The lesson's diagnosis and the action it calls for."""
    est = target_estimate(effect)
    compliance = _share(effect.complied, effect.compliance_checked)
    held = effect.held_compared
    base = _share(effect.followed_when_held, held) if effect.compliance_checked else None
    applicability = _share(effect.applicable, effect.candidates)
    draft = Diagnosis(
        effect.lesson_id,
        effect.state,
        applicability,
        compliance,
        base,
        effect.compliance_checked,
        _judged_by(effect),
        est,
        effect.tokens_shown / effect.shown if effect.shown else 0.0,
        "keep",
        "",
    )
    draft = replace(draft, replay=replay_line(lesson.replay) if lesson and lesson.replay else "")
    action, reason = _action(effect, draft)
    return replace(draft, action=action, reason=reason)


def replay_line(replay: LessonReplay) -> str:
    """The replay evidence for people: the pairs, and the sign test's e-values (each
    multiplies the live e-value of its direction; 40 decides)."""
    helps, harms = replay_e_values(replay.wins, replay.losses)
    return f"replay: {replay.summary()}, e-value {helps:.3g} for help, {harms:.3g} for harm"


def _action(effect: LessonEffect, d: Diagnosis) -> tuple[Action, str]:
    if effect.state is LessonState.HARMFUL:
        return "retire", f"harmful: {d.line()}"
    if effect.state is LessonState.NO_EFFECT:
        if d.compliance is not None and d.compliance >= 0.5:
            return "retire", f"followed but no effect: {d.line()}"
        return "retire", f"no effect (rarely followed: reword it as a new lesson): {d.line()}"
    checked = effect.compliance_checked
    if checked >= MIN_CHECKED_RUNS and d.compliance is not None:
        if d.compliance < _RARE and (d.base_compliance or 0.0) < _RARE:
            return "narrow", f"rarely relevant to the work it is shown in: {d.line()}"
        if d.base_compliance is not None and d.compliance <= d.base_compliance:
            return "reword", f"not followed more when shown than when held out: {d.line()}"
    return "keep", d.line()


_NARROW_MIN_RUNS = 5
"""Checked runs of a work kind before "no run of this kind used it" counts as evidence."""


def narrow_scope(effect: LessonEffect, lesson: Lesson) -> tuple[list[WorkKind], str] | None:
    """The work kinds a rarely relevant lesson should keep, from the records alone.

    Kept: the kinds where at least one checked run (shown or held out) used what the
    lesson names. Dropped: kinds with at least `_NARROW_MIN_RUNS` checked runs and no
    use at all. `None` when that does not narrow anything (no run used it anywhere, some
    kind has too few runs to tell, or every kind it applies to used it): the action is
    then only flagged. Returns the kinds and a line saying why, for the lesson's history.
    """
    used: list[WorkKind] = []
    unused: list[WorkKind] = []
    for name, (checked, hits) in sorted(effect.kind_use.items()):
        try:
            kind = WorkKind(name)
        except ValueError:
            return None  # runs of an unknown kind: their scope cannot be named
        if hits:
            used.append(kind)
        elif checked >= _NARROW_MIN_RUNS:
            unused.append(kind)
        else:
            return None
    if not used or not unused:
        return None
    if lesson.kinds:
        used = [k for k in used if k in lesson.kinds]
        if not used or set(used) == set(lesson.kinds):
            return None
    order = list(WorkKind)
    used.sort(key=order.index)

    def describe(kinds: list[WorkKind]) -> str:
        return ", ".join(
            f"{k.value} ({effect.kind_use[k.value][1]} of {effect.kind_use[k.value][0]})"
            for k in kinds
        )

    why = f"used in {describe(used)}; never in {describe(unused)} (checked runs)"
    return used, why
