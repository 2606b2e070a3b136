"""The Metrics tab adds up: every card is its chart's sum, and agrees with `status`.

The report is rendered from a history with every kind of run (delivered, failed,
declined, interrupted, a preflight failure, idle ticks, a distiller pass), cost on a
day that opened no PR, cached prompt tokens and grades over two months; then each card
is checked against the marks of the chart it names, read back from the HTML, and
against the figures `agent-loop status` computes from the same records.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from agent_loop_common.metrics import compute_metrics, fold_records
from agent_loop_common.records import (
    Attempt,
    Grade,
    GradeState,
    LessonBook,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
    Usage,
)
from agent_loop_distiller import ReportData, render_tabs

NOW = datetime(2026, 3, 10, 12, tzinfo=UTC)


def _record(
    run: str,
    outcome: Outcome,
    days_ago: int,
    *,
    role: Role = Role.BUILDER,
    tries: tuple[bool, ...] = (),
    cost: float = 0.25,
    cached: int = 0,
) -> RunRecord:
    when = NOW - timedelta(days=days_ago, hours=1)
    kind = TargetKind.REPO if role is Role.DISTILLER else TargetKind.ISSUE
    return RunRecord(
        run_id=run,
        role=role,
        target=Target(kind=kind, number=None if kind is TargetKind.REPO else 1),
        outcome=outcome,
        started_at=when - timedelta(minutes=2),
        finished_at=when,
        attempts=[Attempt(number=i, verified=ok) for i, ok in enumerate(tries, start=1)],
        usage=Usage(tokens_in=1000, tokens_out=100, cost_usd=cost, tokens_cache_read=cached),
    )


HISTORY = [
    _record("b1", Outcome.OPENED_PR, 3, tries=(True,), cached=400),
    _record("b2", Outcome.OPENED_PR, 3, tries=(False, True)),
    _record("b3", Outcome.REJECTED, 2, tries=(False, False, False)),
    _record("b4", Outcome.SKIPPED, 2),
    _record("b5", Outcome.INTERRUPTED, 1, tries=(False,)),
    _record("b6", Outcome.PREFLIGHT_FAILED, 1, cost=0.0),
    _record("r1", Outcome.PUSHED_FIX, 1, role=Role.REVIEWER, tries=(True,), cost=0.5),
    _record("d1", Outcome.DISTILLED, 2, role=Role.DISTILLER, tries=(True,), cost=0.1),
]
"""Ingested by earlier passes: in the rollups."""

THIS_PASS = _record("d2", Outcome.DISTILLED, 0, role=Role.DISTILLER, tries=(True,), cost=0.1)
"""This distiller pass: its record is not in the rollups yet."""


def _grade(number: int, state: GradeState, opened_days_ago: int) -> Grade:
    return Grade(
        target=Target(kind=TargetKind.PR, number=number),
        state=state,
        graded_at=NOW,
        opened_at=NOW - timedelta(days=opened_days_ago),
    )


GRADES = [
    _grade(1, GradeState.MERGED, 3),
    _grade(2, GradeState.CLOSED_UNMERGED, 3),
    _grade(3, GradeState.MERGED, 40),
    _grade(4, GradeState.OPEN, 40),
]


def _data() -> ReportData:
    rollups = sorted(fold_records({}, HISTORY).values(), key=lambda r: r.day)
    rollups = [
        r.model_copy(update={"idle_runs": {Role.BUILDER: 2, Role.REVIEWER: 1}})
        if r.day == (NOW - timedelta(days=2)).date()
        else r
        for r in rollups
    ]
    return ReportData(
        generated_at=NOW,
        repo="acme/widgets",
        book=LessonBook(),
        rollups=rollups,
        grades=GRADES,
        runs=[THIS_PASS, *HISTORY],
    )


_CARD = re.compile(
    r'<div class="card" data-chart="([^"]+)" data-num="([^"]+)"(?: data-den="([^"]+)")?'
    r'(?: data-value="([^"]+)")?>([^<]+)<b>([^<]+)</b></div>'
)
_MARK = re.compile(r'data-series="([^"]+)" data-num="([^"]+)"(?: data-den="([^"]+)")?')


def _charts(html: str) -> dict[str, list[tuple[str, float, float | None]]]:
    """Each chart's marks: (series, numerator, denominator or None)."""
    charts: dict[str, list[tuple[str, float, float | None]]] = {}
    for part in html.split("<figure")[1:]:
        named = re.match(r' data-chart="([^"]+)"', part)
        if named is None:
            continue
        body = part.split("</figure>", 1)[0]
        charts[named.group(1)] = [
            (s, float(n), float(d) if d else None) for s, n, d in _MARK.findall(body)
        ]
    return charts


def _from_chart(
    marks: list[tuple[str, float, float | None]], num: list[str], den: list[str]
) -> float | None:
    """What a card must show: its series' numerators summed, over their denominators."""
    n = sum(v for s, v, _ in marks if s in num)
    if not den:
        return n
    d = sum(v if dv is None else dv for s, v, dv in marks if s in den)
    return None if d == 0 else n / d


def test_every_card_is_its_charts_sum() -> None:
    html = render_tabs(_data())["Metrics"]
    charts = _charts(html)
    cards = _CARD.findall(html)
    assert [title for *_, title, _ in cards] == [
        "Runs",
        "Idle ticks",
        "Preflight failures",
        "Success rate",
        "First-try verified",
        "PRs opened",
        "Merged (of decided)",
        "Cost per PR",
        "Cached input",
        "Total cost",
    ]
    for chart, num, den, value, title, shown in cards:
        assert chart in charts, title
        expected = _from_chart(charts[chart], num.split(), den.split() if den else [])
        if expected is None:
            assert value == "", title
            continue
        assert float(value) == pytest.approx(expected), title
        if den and title != "Cost per PR":
            assert shown == f"{expected * 100:.1f}%", title  # the card shows that value
    # a count chart's bars all belong to its cards: no bar is left out of a card's sum
    counted = [(chart, num) for chart, num, den, *_ in cards if not den]
    for chart in {c for c, _ in counted}:
        summed = {s for c, num in counted if c == chart for s in num.split()}
        assert {s for s, *_ in charts[chart]} <= summed, chart
    # and each chart states what it counts under it
    assert html.count('class="muted definition"') == len(charts) == 7


def test_the_cards_count_this_pass_and_agree_with_status() -> None:
    html = render_tabs(_data())["Metrics"]
    shown = {title: text for *_, title, text in _CARD.findall(html)}
    status = compute_metrics([THIS_PASS, *HISTORY], GRADES)  # what `agent-loop status` shows
    # 8 runs reached their target (the preflight failure did not; this pass did)
    assert shown["Runs"] == str(status.runs) == "8"
    assert shown["Preflight failures"] == str(status.preflight_failures) == "1"
    assert shown["Idle ticks"] == "3"
    # delivered 5 (b1, b2, r1, d1, d2) of the 6 that did the work (b3 failed; b4 declined
    # and b5 interrupted are in no rate)
    assert shown["Success rate"] == f"{status.success_rate * 100:.1f}%" == "83.3%"  # type: ignore[operator]
    # first try: b1 and r1 of b1, b2, b3, r1; the distiller passes have no verifier
    assert shown["First-try verified"] == "50.0%"
    assert status.first_try_verification_rate == 0.5
    assert shown["PRs opened"] == "2"
    assert shown["Merged (of decided)"] == "66.7%"  # #1 and #3 of #1, #2, #3; #4 is open
    assert shown["Total cost"] == "$1.9500"
    assert shown["Cost per PR"] == "$0.9750"  # every run's cost, over the 2 PRs
    assert "this pass" in html


def test_a_distiller_pass_is_never_verified_even_in_rollups_folded_before() -> None:
    """Rollups folded before the rule counted the distiller's try as verified: the
    totals leave it out all the same."""
    from agent_loop_common.metrics import DailyRollup, Tally, total_tally

    old = DailyRollup(
        day=NOW.date(),
        by_role={
            Role.DISTILLER: Tally(
                runs=1, worked=1, successes=1, with_attempts=1, verified=1, first_try_verified=1
            ),
            Role.BUILDER: Tally(runs=1, worked=1, with_attempts=1),
        },
    )
    total = total_tally([old])
    assert (total.with_attempts, total.first_try_verified) == (1, 0)
    assert total.successes == 1


_DEFINITION = re.compile(r'<p class="muted definition">([^<]*)</p></figure>')


def _outcome_chart(outcome: Outcome) -> tuple[dict[str, float], dict[str, str]]:
    """The Outcomes chart of a report of one run that ended `outcome`: its bars by
    series, and its definitions (the note under it) by series."""
    import html as html_lib

    run = _record("x1", outcome, 0)
    data = ReportData(
        generated_at=NOW,
        repo="acme/widgets",
        book=LessonBook(),
        rollups=sorted(fold_records({}, [run]).values(), key=lambda r: r.day),
        grades=[],
        runs=[run],
    )
    page = render_tabs(data)["Metrics"]
    part = page.split('<figure data-chart="outcomes"', 1)[1].split("</figure>", 1)[0]
    bars = {s: float(n) for s, n, _ in _MARK.findall(part)}
    found = _DEFINITION.search(part + "</figure>")
    assert found is not None
    note = html_lib.unescape(found.group(1))
    named = dict(d.split(": ", 1) for d in note.split(". ", 1)[0].split("; ") if ": " in d)
    return bars, named


@pytest.mark.parametrize("outcome", [o for o in Outcome if o is not Outcome.PREFLIGHT_FAILED])
def test_each_outcome_is_named_by_the_one_bar_that_counts_it(outcome: Outcome) -> None:
    """The definitions under the Outcomes chart say exactly what each bar counts: a run
    that ended `skipped` is a `declined` bar, and `declined`'s definition names
    `skipped` (it said "claimed the target and chose not to work on it", which a refused
    `--issue N` never did), and no other bar's names it."""
    bars, named = _outcome_chart(outcome)
    counted = [series for series, count in bars.items() if count]
    assert len(counted) == 1, bars
    [series] = counted
    assert set(named) == {"succeeded", "failed", "declined", "interrupted"}
    naming = [s for s, text in named.items() if re.search(rf"\b{outcome.value}\b", text)]
    assert naming == [series], named
