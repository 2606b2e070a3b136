"""The lessons ledger: per lesson, where it stands and why, for a maintainer to audit.

One row per lesson of the book: its measured state, its effect on the metric it is
decided on (shown minus held out, with its 95% interval, over its whole life), how often
runs that saw it acted on it, what it cost in prompt tokens, its exposures in the runs of
this report (applicable, shown, held out), its citations and their last check, where it came
from (repository, visibility, who wrote it, the issues and PRs behind it), its recent
history and its last diagnosis (the action taken, or only flagged), with a small inline
SVG of its exposures accumulating run by run. Pure: plain values in, HTML out, every
text escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent_loop_common.records import CitationStatus, Lesson, RunRecord
from agent_loop_distiller._effect import EffectBook, LessonEffect, estimates_of, target_estimate
from agent_loop_distiller._report._data import ReportData
from agent_loop_distiller._report._html import esc, fmt_int, fmt_time, link, section, table
from agent_loop_distiller._upkeep import rank_lessons

__all__ = [
    "ExposureCount",
    "effect_cells",
    "exposure_counts",
    "exposure_sparkline",
    "render_ledger",
]

_W, _H = 120, 28


@dataclass
class ExposureCount:
    """One lesson's draws in a set of runs."""

    candidate: int = 0
    applicable: int = 0
    shown: int = 0
    held_out: int = 0
    path: list[tuple[int, int]] | None = None
    """Cumulative (shown, held out) after each run where it applied, oldest first."""


def exposure_counts(runs: Sequence[RunRecord]) -> dict[str, ExposureCount]:
    """Per lesson id: how often it was a candidate, applied, was shown, was held out."""
    out: dict[str, ExposureCount] = {}
    for record in sorted(runs, key=lambda r: (r.finished_at, r.run_id)):
        for e in record.exposures:
            count = out.setdefault(e.lesson_id, ExposureCount(path=[]))
            count.candidate += 1
            if not e.applicable:
                continue
            count.applicable += 1
            count.shown += int(e.shown)
            count.held_out += int(e.held_out)
            if count.path is not None:
                count.path.append((count.shown, count.held_out))
    return out


def exposure_sparkline(path: Sequence[tuple[int, int]]) -> str:
    """Two lines (shown, held out) of cumulative counts, as a tiny inline SVG."""
    if not path:
        return '<span class="muted">–</span>'
    top = max(max(s, h) for s, h in path) or 1
    step = _W / max(len(path) - 1, 1)

    def line(index: int, color: str) -> str:
        points = " ".join(
            f"{i * step:.1f},{_H - 2 - (_H - 4) * p[index] / top:.1f}" for i, p in enumerate(path)
        )
        return f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="1.5"/>'

    shown, held = path[-1]
    title = f"after {len(path)} applicable run(s): shown {shown}, held out {held}"
    return (
        f'<svg class="spark" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" role="img">'
        f"<title>{esc(title)}</title>{line(0, '#2b6cb0')}{line(1, '#c05621')}</svg>"
    )


def effect_cells(measured: LessonEffect | None) -> list[str]:
    """Effect with its interval, compliance and token cost of one lesson (escaped HTML).

    The effect is the one its state is decided on (the lesson's target metric), pooled
    over strata where both arms were seen; "–" until then. Compliance compares shown runs
    that used what the lesson names with held-out runs that did anyway (the base rate).
    """
    if measured is None:
        return ['<span class="muted">not measured yet</span>', "–", "–"]
    estimate = target_estimate(measured)
    if estimate is None:
        effect = f'<span class="muted">{esc(measured.metric.value)}: both arms not seen yet</span>'
    else:
        effect = esc(estimate.text())
    held = measured.held_compared
    if measured.compliance_checked:
        text = (
            f"{measured.complied} of {measured.compliance_checked} shown runs"
            f" (held out: {measured.followed_when_held} of {held} anyway)"
        )
        if measured.judged:
            text += f"; {measured.judged} judged by the model"
        if measured.unknown:
            text += f", {measured.unknown} unusable answer(s)"
        compliance = esc(text)
    elif measured.unknown:
        compliance = esc(f"unknown: {measured.unknown} unusable model answer(s)")
    else:
        compliance = '<span class="muted">nothing to check</span>'
    per_run = measured.tokens_shown / measured.shown if measured.shown else 0
    tokens = esc(f"{measured.tokens_shown:,} ({per_run:,.0f} per shown run)")
    return [effect, compliance, tokens]


def other_outcomes_cell(measured: LessonEffect | None) -> str:
    """The effect on every other outcome measured (the PR's included), one per line."""
    others = (
        [e for e in estimates_of(measured) if e.metric is not measured.metric] if measured else []
    )
    if not others:
        return '<span class="muted">–</span>'
    return "<br>".join(esc(e.text()) for e in others)


def _citations(lesson: Lesson) -> str:
    if not lesson.citations:
        return '<span class="muted">none</span>'
    labels = "<br>".join(f"<code>{esc(c.label())}</code>" for c in lesson.citations)
    status = lesson.citation_status.value
    if lesson.citation_status is CitationStatus.BROKEN:
        return f'<b class="bad">{esc(status)}</b>: {esc(lesson.stale_reason)}<br>{labels}'
    return f"{esc(status)}<br>{labels}"


def _provenance(lesson: Lesson, urls: dict[str, str]) -> str:
    who = lesson.author.value + (f" @{lesson.author_login}" if lesson.author_login else "")
    where = f"{lesson.repo or '(this repository)'} ({lesson.visibility or 'visibility unknown'})"
    refs: list[str] = []
    for ref in lesson.source_refs:
        kind, _, number = ref.partition("-")
        refs.append(link(urls.get(ref, ""), f"{'PR' if kind == 'pr' else kind} #{number}"))
    parts = [esc(where), f"by {esc(who)}"]
    if lesson.pinned:
        parts.append("<b>pinned</b> by the operator")
    if refs:
        parts.append("from " + ", ".join(refs))
    return "<br>".join(parts)


def _diagnosis(lesson: Lesson) -> str:
    """The last diagnosis: the action (done or only flagged), then what was measured."""
    d = lesson.diagnosis
    if d is None:
        return '<span class="muted">not diagnosed yet</span>'
    action = esc(d.action) if d.action == "keep" else f"<b>{esc(d.action)}: "
    if d.action != "keep":
        action += ("done" if d.done else "flagged") + "</b>"
    note = f"<br>{esc(d.note[:300])}" if d.note and d.action != "keep" else ""
    facts = d.model_copy(update={"action": "keep", "note": ""}).summary()
    return f'{action}{note}<br><span class="muted">{esc(facts)}</span>'


def _history(lesson: Lesson) -> str:
    if not lesson.history:
        return '<span class="muted">–</span>'
    items = [
        f"<li>{esc(fmt_time(e.at))} {esc(e.op)} by {esc(e.by.value)}"
        + (f" @{esc(e.login)}" if e.login else "")
        + (f": {esc(e.detail[:120])}" if e.detail else "")
        + "</li>"
        for e in lesson.history[-5:]
    ]
    return f'<ul class="history">{"".join(items)}</ul>'


def render_ledger(data: ReportData, urls: dict[str, str]) -> str:
    """The ledger section of the Lessons tab."""
    counts = exposure_counts(data.runs)
    effects = data.effects or EffectBook()
    rows: list[list[str]] = []
    for lesson in rank_lessons(data.book.lessons):
        c = counts.get(lesson.id, ExposureCount(path=[]))
        rows.append(
            [
                f"<code>{esc(lesson.id)}</code>",
                esc(lesson.state.value),
                *effect_cells(effects.lessons.get(lesson.id)),
                f"{fmt_int(c.applicable)} of {fmt_int(c.candidate)}",
                fmt_int(c.shown),
                fmt_int(c.held_out),
                exposure_sparkline(c.path or []),
                _citations(lesson),
                _provenance(lesson, urls),
                _history(lesson),
                _diagnosis(lesson),
                other_outcomes_cell(effects.lessons.get(lesson.id)),
            ]
        )
    headers = ["Id", "State", "Effect [95% interval]", "Compliance", "Prompt tokens",
               "Applied (runs)", "Shown", "Held out", "Exposures",
               "Citations", "Provenance", "History", "Diagnosis",
               "Effect on the other outcomes"]  # fmt: skip
    body = table(headers, rows, numeric=[6, 7]) if rows else '<p class="muted">No lessons yet.</p>'
    note = (
        '<p class="muted">Effect, compliance and tokens cover the lesson\'s whole life '
        "(the distiller's measurement state); the effect is shown minus held-out rate on "
        "the metric its state is decided on. Exposures count the runs of this report: "
        "applied when the lesson's scope matched the run, shown or held out by the run's "
        "logged draw (blue: shown, orange: held out, cumulative). Diagnosis: what the "
        "distiller did about the lesson at its last measurement (narrowed to the work "
        "kinds that used it, reworded into a new version, retired) or only flagged for "
        "you (a pinned or maintainer-written lesson, or nothing the records could "
        "decide).</p>"
    )
    return section(f"Ledger ({len(rows)})", note + body)
