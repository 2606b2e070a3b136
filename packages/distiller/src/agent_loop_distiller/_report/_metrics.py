"""The Metrics tab: headline figures with their denominators, and charts over time.

Everything is computed from the daily rollups (exact sums of the ingested records) and
the grades (what humans did with the agents' PRs), through `agent_loop_common.metrics`,
so the figures here and in `agent-loop status` agree. This pass's own record is written
when the tick ends and ingested by the next pass, so the headline figures add it
explicitly (and say so): `status`, which reads every record, counts it too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, date, timedelta

from agent_loop_common.metrics import (
    DailyRollup,
    Metrics,
    Tally,
    summarize,
    tally_grades,
    tally_records,
    total_tally,
)
from agent_loop_common.records import Grade, GradeState, Role, RunRecord, TargetKind
from agent_loop_distiller._report._charts import Series, bar_chart, line_chart
from agent_loop_distiller._report._data import ReportData
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


def _cards(metrics: Metrics, idle: int) -> str:
    shown = [
        ("Runs", fmt_int(metrics.runs)),
        ("Idle runs", fmt_int(idle)),
        ("Success rate", fmt_rate(metrics.success_rate)),
        ("First-try verified", fmt_rate(metrics.first_try_verification_rate)),
        ("PRs opened", fmt_int(metrics.opened_prs)),
        ("Merged (of decided)", fmt_rate(metrics.merged_rate)),
        ("Cost per PR", fmt_cost(metrics.cost_per_opened_pr)),
        ("Cached input", fmt_rate(metrics.cached_input_rate)),
        ("Total cost", fmt_cost(metrics.cost_usd)),
    ]
    cards = "".join(f'<div class="card">{esc(k)}<b>{esc(v)}</b></div>' for k, v in shown)
    return f'<div class="cards">{cards}</div>'


def _figures(metrics: Metrics) -> str:
    rows = [
        [esc(name), esc(_value(metrics, name)), esc(info.description or "")]
        for name, info in Metrics.model_fields.items()
    ]
    return table(["Figure", "Value", "Definition (denominator)"], rows, numeric=[1])


def _by_role(rollups: Sequence[DailyRollup], own: Sequence[RunRecord]) -> str:
    rows: list[list[str]] = []
    for role in Role:
        t = total_tally(rollups, role) + tally_records(r for r in own if r.role is role)
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


def _daily_charts(rollups: Sequence[DailyRollup], days: list[date]) -> str:
    by_day = {r.day: r for r in rollups}
    tallies = [by_day[d].tally if d in by_day else Tally() for d in days]
    idle = [float(sum(by_day[d].idle_runs.values())) if d in by_day else 0.0 for d in days]
    labels = [d.strftime("%m-%d") for d in days]
    summaries = [summarize(t) for t in tallies]
    outcomes = bar_chart(
        "Outcomes per day",
        labels,
        [
            Series("succeeded", [float(t.successes) for t in tallies], _GREEN),
            Series("failed", [float(t.worked - t.successes) for t in tallies], _RED),
            Series("declined", [float(t.runs - t.worked) for t in tallies], _AMBER),
            Series("idle", idle, _GREY),
        ],
    )
    rates = line_chart(
        "Rates per day",
        labels,
        [
            Series("success", [m.success_rate for m in summaries], _GREEN),
            Series("verified", [m.verification_rate for m in summaries], _BLUE),
            Series(
                "first-try verified", [m.first_try_verification_rate for m in summaries], _AMBER
            ),
        ],
    )
    cost = bar_chart(
        "Cost per opened PR, per day (all roles' cost / PRs opened that day)",
        labels,
        [Series("cost per PR", [m.cost_per_opened_pr for m in summaries], _BLUE)],
        fmt=lambda v: f"${v:.2f}",
    )
    return outcomes + rates + cost


def _grade_chart(grades: Sequence[Grade]) -> str:
    months: dict[str, dict[GradeState, float]] = defaultdict(lambda: defaultdict(float))
    for g in grades:
        if g.target.kind is TargetKind.PR:
            opened = (g.opened_at or g.graded_at).astimezone(UTC)
            months[opened.strftime("%Y-%m")][g.state] += 1
    labels = sorted(months)
    return bar_chart(
        "Agent PRs by month opened: what humans decided",
        labels,
        [
            Series("merged", [months[m][GradeState.MERGED] for m in labels], _GREEN),
            Series(
                "closed unmerged", [months[m][GradeState.CLOSED_UNMERGED] for m in labels], _RED
            ),
            Series("open", [months[m][GradeState.OPEN] for m in labels], _GREY),
        ],
    )


def _own_pass(data: ReportData) -> list[RunRecord]:
    """This distiller pass's record (the first of `data.runs`), not yet in the rollups."""
    return [r for r in data.runs[:1] if r.role is Role.DISTILLER]


def _counted(own: Sequence[RunRecord]) -> str:
    if not own:
        return ""
    return (
        f'<p class="muted">Figures count the runs ingested so far and this pass '
        f"(run {esc(own[0].run_id)}), as <code>agent-loop status</code> does; the charts "
        "show the ingested runs only.</p>"
    )


def render_metrics(data: ReportData, *, window_days: int = 30) -> str:
    """The Metrics tab's HTML."""
    rollups = data.rollups
    own = _own_pass(data)
    metrics = summarize(total_tally(rollups) + tally_records(own), tally_grades(data.grades))
    idle = sum(sum(r.idle_runs.values()) for r in rollups)
    days = _days(rollups, data.generated_at.astimezone(UTC).date(), window_days)
    return (
        _cards(metrics, idle)
        + _counted(own)
        + section("Over time", _daily_charts(rollups, days) + _grade_chart(data.grades))
        + section("By role", _by_role(rollups, own))
        + section(f"All figures (last {window_days} days)", _figures(metrics))
    )
