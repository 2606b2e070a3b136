"""The Metrics tab: headline cards, charts over time, each with its definition, and
every figure with its denominator.

Everything is computed from the daily rollups (exact sums of the ingested records),
with this pass's own record folded in (it is written when the tick ends and ingested
by the next pass), and from the grades (what people did with the agents' PRs). Each
card and each chart reads the same `Figure`s over the same periods (`_figures`), so a
card is always its chart's sum, and the ratios are `Metrics`' (the "All figures" table
and `agent-loop status` count the same way).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, date, timedelta

from agent_loop_common.metrics import (
    DailyRollup,
    Metrics,
    Tally,
    fold_records,
    summarize,
    tally_grades,
    total_tally,
)
from agent_loop_common.records import Grade, Role, RunRecord, TargetKind
from agent_loop_distiller._report._charts import bar_chart, line_chart
from agent_loop_distiller._report._data import ReportData
from agent_loop_distiller._report._figures import (
    CARDS,
    Card,
    Period,
    card_value,
    definitions,
    series,
    total,
)
from agent_loop_distiller._report._html import (
    esc,
    fmt_cost,
    fmt_int,
    fmt_rate,
    fmt_seconds,
    section,
    table,
)

__all__ = ["render_metrics"]

_GREEN, _RED, _GREY, _BLUE, _AMBER = "#2da44e", "#cf222e", "#8c959f", "#0969da", "#bf8700"
_PURPLE = "#8250df"


def _days(rollups: Sequence[DailyRollup], last: date, window: int) -> list[date]:
    first = min([r.day for r in rollups] + [last])
    first = max(first, last - timedelta(days=window - 1))
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def _value(metrics: Metrics, name: str) -> str:
    value = getattr(metrics, name)
    if name.endswith("_rate"):
        return fmt_rate(value)
    if name.startswith("cost"):
        return fmt_cost(value)
    if name.endswith("_seconds"):
        return fmt_seconds(value)
    if value is None:
        return "–"
    return fmt_int(value) if isinstance(value, int) else f"{value:,.2f}"


def _card_text(card: Card, value: float | None) -> str:
    if card.money:
        return fmt_cost(value)
    if card.den:
        return fmt_rate(value)
    return fmt_int(round(value or 0))


def _cards(window: Period) -> str:
    """The headline cards, each computed from its chart's figures over the window (and
    saying which in its data, so a test can add the chart up)."""
    shown: list[str] = []
    for card in CARDS:
        value = card_value(card, window)
        den = f' data-den="{esc(" ".join(card.den))}"' if card.den else ""
        exact = "" if value is None else f' data-value="{value:.12g}"'
        shown.append(
            f'<div class="card" data-chart="{esc(card.chart)}" '
            f'data-num="{esc(" ".join(card.num))}"{den}{exact}>'
            f"{esc(card.title)}<b>{esc(_card_text(card, value))}</b></div>"
        )
    return f'<div class="cards">{"".join(shown)}</div>'


def _figures(metrics: Metrics) -> str:
    rows = [
        [esc(name), esc(_value(metrics, name)), esc(info.description or "")]
        for name, info in Metrics.model_fields.items()
    ]
    return table(["Figure", "Value", "Definition (denominator)"], rows, numeric=[1])


def _by_role(rollups: Sequence[DailyRollup]) -> str:
    rows: list[list[str]] = []
    for role in Role:
        t = total_tally(rollups, role)
        if not t.runs:
            continue
        m = summarize(t)
        rows.append(
            [
                esc(role.value),
                fmt_int(t.runs),
                esc(fmt_rate(m.success_rate)),
                fmt_int(m.tokens),
                esc(fmt_rate(m.cached_input_rate)),
                esc(fmt_cost(t.cost_usd)),
                fmt_int(t.github_requests),
                fmt_int(t.github_not_modified),
            ]
        )
    if not rows:
        return '<p class="muted">No runs ingested yet.</p>'
    headers = [
        "Role",
        "Runs",
        "Success",
        "Tokens",
        "Cached input",
        "Cost",
        "GitHub requests",
        "of which 304",
    ]
    return table(headers, rows, numeric=[1, 2, 3, 4, 5, 6, 7])


def _money(v: float) -> str:
    return f"${v:.2f}"


def _daily_charts(days: Sequence[Period]) -> str:
    labels = [p.label for p in days]
    kinds = ("succeeded", "failed", "declined", "interrupted")
    outcomes = bar_chart(
        "Outcomes per day",
        labels,
        [series(k, days, c) for k, c in zip(kinds, (_GREEN, _RED, _AMBER, _PURPLE), strict=True)],
        chart="outcomes",
        note=definitions(
            kinds,
            "Runs that reached their target, this pass included: a day's bars sum to its "
            "runs, and the Runs card is their sum over the window.",
        ),
    )
    no_run = bar_chart(
        "Ticks without a run, per day",
        labels,
        [series("idle", days, _GREY), series("preflight", days, _RED)],
        chart="no-run",
        note=definitions(
            ("idle", "preflight"),
            "Neither is a run: the Runs card and every rate leave them out; the Idle ticks "
            "and Preflight failures cards are their sums.",
        ),
    )
    rated = ("success", "verified", "first_try", "cached_input")
    rates = line_chart(
        "Rates per day",
        labels,
        [series(k, days, c) for k, c in zip(rated, (_GREEN, _BLUE, _AMBER, _PURPLE), strict=True)],
        chart="rates",
        note=definitions(
            rated,
            "Each point is the day's numerator over its denominator; each card is the "
            "window's numerators over its denominators (never an average of the points). "
            "A day with an empty denominator is a gap, not 0.",
        ),
    )
    prs = bar_chart(
        "PRs opened per day",
        labels,
        [series("prs", days, _BLUE)],
        chart="prs",
        note=definitions(("prs",), "The PRs opened card is their sum."),
    )
    cost = bar_chart(
        "Cost per day",
        labels,
        [series("cost", days, _BLUE)],
        fmt=_money,
        chart="cost",
        note=definitions(("cost",), "The Total cost card is their sum."),
    )
    per_pr = series("cost_per_pr", days, _BLUE)
    top = max((v for v in per_pr.values if v is not None), default=0.0) or 1.0
    cost_per_pr = line_chart(
        "Cost per opened PR, per day",
        labels,
        [per_pr],
        top=top,
        fmt=_money,
        chart="cost-per-pr",
        note=definitions(
            ("cost_per_pr",), "The Cost per PR card is the window's cost over its PRs."
        ),
    )
    return outcomes + no_run + rates + prs + cost + cost_per_pr


def _months(grades: Sequence[Grade]) -> list[Period]:
    """The agent PRs' grades by the month each PR was opened (decompositions apart)."""
    by_month: dict[str, list[Grade]] = defaultdict(list)
    for g in grades:
        if g.target.kind is TargetKind.PR:
            by_month[(g.opened_at or g.graded_at).astimezone(UTC).strftime("%Y-%m")].append(g)
    return [Period(label=m, grades=tally_grades(by_month[m])) for m in sorted(by_month)]


def _grade_chart(months: Sequence[Period]) -> str:
    keys = ("merged", "closed", "open")
    return bar_chart(
        "Agent PRs by month opened: what people decided",
        [p.label for p in months],
        [series(k, months, c) for k, c in zip(keys, (_GREEN, _RED, _GREY), strict=True)],
        chart="grades",
        note=definitions(
            keys,
            "The Merged (of decided) card is merged / (merged + closed unmerged) over "
            "these months: open PRs are not decided yet.",
        ),
    )


def _own_pass(data: ReportData) -> list[RunRecord]:
    """This distiller pass's record (the first of `data.runs`), not yet in the rollups."""
    return [r for r in data.runs[:1] if r.role is Role.DISTILLER]


def _counted(own: Sequence[RunRecord]) -> str:
    if not own:
        return ""
    return (
        f'<p class="muted">Cards and charts count the runs ingested so far and this pass '
        f"(run {esc(own[0].run_id)}), as <code>agent-loop status</code> does.</p>"
    )


def _window(data: ReportData, window_days: int) -> tuple[list[Period], list[DailyRollup]]:
    """The charted days (this pass folded into its day) and their rollups."""
    by_day = {r.day: r for r in data.rollups}
    by_day.update(fold_records(by_day, _own_pass(data)))
    days = _days(list(by_day.values()), data.generated_at.astimezone(UTC).date(), window_days)
    periods = [
        Period(
            label=day.strftime("%m-%d"),
            runs=by_day[day].tally if day in by_day else Tally(),
            idle=sum(by_day[day].idle_runs.values()) if day in by_day else 0,
        )
        for day in days
    ]
    return periods, [by_day[day] for day in days if day in by_day]


def render_metrics(data: ReportData, *, window_days: int = 30) -> str:
    """The Metrics tab's HTML."""
    days, rollups = _window(data, window_days)
    months = _months(data.grades)
    window = total(days) + total(months)
    metrics = summarize(window.runs, tally_grades(data.grades))
    return (
        _cards(window)
        + _counted(_own_pass(data))
        + section("Over time", _daily_charts(days) + _grade_chart(months))
        + section("By role", _by_role(rollups))
        + section(f"All figures (last {window_days} days)", _figures(metrics))
    )
