"""The report renders its four tabs from plain values and escapes everything hostile."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from agent_loop_common.metrics import DailyRollup, fold_records
from agent_loop_common.records import (
    Attempt,
    Grade,
    GradeState,
    Lesson,
    LessonBook,
    Links,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
    TraceStep,
    Usage,
)
from agent_loop_distiller import (
    FILE_CHARS,
    TAB_NAMES,
    Edit,
    MemoryFile,
    ReportData,
    render_document,
    render_memory,
    render_summary,
    render_tabs,
)

NOW = datetime(2026, 3, 10, 12, tzinfo=UTC)
EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def record(run: str, outcome: Outcome, day: int, *, title: str = "Fine", **kw: object) -> RunRecord:
    when = NOW - timedelta(days=day)
    return RunRecord.model_validate(
        {
            "run_id": run,
            "role": Role.BUILDER,
            "target": Target(
                kind=TargetKind.ISSUE, number=day + 1, title=title, url="javascript:alert(1)"
            ),
            "outcome": outcome,
            "started_at": when - timedelta(minutes=3),
            "finished_at": when,
            "usage": Usage(tokens_in=900, tokens_out=100, cost_usd=0.5),
            **kw,
        }
    )


def hostile_data() -> ReportData:
    runs = [
        record(
            "r-evil",
            Outcome.REJECTED,
            0,
            title=EVIL,
            attempts=[Attempt(number=1, verified=False, notes=EVIL)],
            trace=[TraceStep(tool=EVIL, args=EVIL, ok=False, ms=3, error=EVIL)],
            links=Links(pr_url="https://github.com/a/b/pull/1?x=<b>"),
            error=EVIL,
        ),
        record("r-ok", Outcome.OPENED_PR, 1, links=Links(pr_url="https://github.com/a/b/pull/2")),
        record("r-old", Outcome.ERROR, 3),
    ]
    rollups = sorted(fold_records({}, runs).values(), key=lambda r: r.day)
    rollups[0] = rollups[0].model_copy(update={"idle_runs": {Role.BUILDER: 7}})
    lesson = Lesson(
        id="L-1",
        text=EVIL,
        source_run_ids=["r-evil"],
        source_refs=["issue-1", "pr-1"],
        hits=2,
        last_seen_at=NOW,
        created_at=NOW,
        updated_at=NOW,
    )
    grades = [
        Grade(
            target=Target(
                kind=TargetKind.PR, number=1, title=EVIL, url="https://github.com/a/b/pull/1"
            ),
            state=GradeState.MERGED,
            graded_at=NOW,
            opened_at=NOW,
        ),
        Grade(
            target=Target(kind=TargetKind.PR, number=2),
            state=GradeState.CLOSED_UNMERGED,
            graded_at=NOW,
            opened_at=NOW - timedelta(days=40),
        ),
    ]
    return ReportData(
        generated_at=NOW,
        repo="acme/<widgets>",
        book=LessonBook(lessons=[lesson]),
        rollups=rollups,
        grades=grades,
        runs=runs,
        edits=[Edit("add", "L-1", EVIL)],
        expired=[lesson.model_copy(update={"id": "L-old"})],
        memory=[MemoryFile("agent-loop-context", "context/digest.md", EVIL * 3)],
        note=EVIL,
    )


def test_every_tab_renders_and_escapes_hostile_text() -> None:
    tabs = render_tabs(hostile_data())
    assert tuple(tabs) == TAB_NAMES
    for name, html in tabs.items():
        assert "<script" not in html, name
        assert "<img" not in html, name
        assert 'href="javascript' not in html, name
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in tabs["Lessons"]
    assert "&lt;script&gt;" in tabs["Runs"]
    assert "&lt;script&gt;" in tabs["Memory"]


def test_the_standalone_page_is_self_contained() -> None:
    page = render_document(render_tabs(hostile_data()), title=EVIL)
    assert page.startswith("<!doctype html>")
    assert "<script" not in page
    assert not re.search(
        r"""(?:src|href)=["']?(?:https?:)?//""",
        page.replace('href="https://github.com/a/b/pull/', ""),
    )
    assert "<link" not in page
    assert "@import" not in page
    for i, name in enumerate(TAB_NAMES):
        assert f'<label for="al-t{i}">{name}</label>' in page


def test_metrics_tab_has_charts_and_figures_with_denominators() -> None:
    html = render_tabs(hostile_data())["Metrics"]
    # outcomes, ticks without a run, rates, PRs, cost, cost per PR, grades by month
    assert html.count("<svg") == 7
    assert "Outcomes per day" in html
    assert "Cost per opened PR" in html
    assert "merged / (merged + closed_unmerged)" in html  # the stated denominator
    assert "50.0%" in html  # one merged, one closed unmerged
    assert "Idle ticks" in html


def test_runs_tab_has_one_row_per_run_with_its_trace_folded() -> None:
    html = render_tabs(hostile_data())["Runs"]
    # the runs table (header + 3 runs), and in the evil run's trace the tries and the
    # steps tables (header + 1 row each)
    assert html.count("<tr>") == (1 + 3) + (1 + 1) + (1 + 1)
    assert html.count("<details>") == 1
    assert 'href="https://github.com/a/b/pull/1?x=&lt;b&gt;"' in html
    assert "rejected" in html


def test_memory_tab_caps_each_file() -> None:
    html = render_memory([MemoryFile("k", "p", "a" * (FILE_CHARS + 50))])
    assert html.count("a" * FILE_CHARS) == 1
    assert "50 more characters not shown" in html


def test_empty_report_says_so() -> None:
    data = ReportData(generated_at=NOW, repo="a/b", book=LessonBook())
    tabs = render_tabs(data)
    assert "No data yet." in tabs["Metrics"]
    assert "No lessons yet" in tabs["Lessons"]
    assert "No runs in this tick." in tabs["Runs"]
    summary = render_summary({"pass": EVIL})
    assert "<script" not in summary


def test_days_without_rollups_are_gaps_not_missing_days() -> None:
    day = date(2026, 3, 1)
    data = ReportData(
        generated_at=datetime(2026, 3, 5, tzinfo=UTC),
        repo="a/b",
        book=LessonBook(),
        rollups=[DailyRollup(day=day, idle_runs={Role.REVIEWER: 3})],
    )
    html = render_tabs(data)["Metrics"]
    for label in ("03-01", "03-05"):
        assert label in html
