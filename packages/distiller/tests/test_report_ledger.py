"""The lessons ledger renders one row per lesson with its state, exposures, citations,
provenance, history and an exposure chart; the test parses the HTML it renders."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

from agent_loop_common.records import (
    Citation,
    CitationStatus,
    Lesson,
    LessonAuthor,
    LessonBook,
    LessonDiagnosis,
    LessonEvent,
    LessonExposure,
    LessonState,
    Outcome,
    OutcomeMetric,
    Role,
    RunRecord,
    Target,
    TargetKind,
)
from agent_loop_distiller import (
    EffectBook,
    LessonEffect,
    MetricStats,
    ReportData,
    render_document,
    render_tabs,
)

NOW = datetime(2026, 12, 3, 9, tzinfo=UTC)
EVIL = '<script>alert("x")</script>'


class Ledger(HTMLParser):
    """The rows of the table that follows the `Ledger (...)` heading, as cell texts, and
    the titles of the inline SVG charts in it."""

    def __init__(self) -> None:
        super().__init__()
        self.in_ledger = False
        self.heading = ""
        self.in_heading = False
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None
        self.svg_titles: list[str] = []
        self.in_svg_title = False
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.scripts += 1
        if tag in ("h2", "h3"):
            self.in_heading, self.heading = True, ""
        if not self.in_ledger:
            return
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self.cell = []
        elif tag == "title":
            self.in_svg_title = True

    def handle_endtag(self, tag: str) -> None:
        if tag in ("h2", "h3"):
            self.in_heading = False
            self.in_ledger = self.heading.startswith("Ledger")
        if tag == "td" and self.cell is not None and self.rows:
            self.rows[-1].append(" ".join("".join(self.cell).split()))
            self.cell = None
        if tag == "title":
            self.in_svg_title = False

    def handle_data(self, data: str) -> None:
        if self.in_heading:
            self.heading += data
        if self.in_svg_title and self.in_ledger:
            self.svg_titles.append(data)
        elif self.cell is not None:
            self.cell.append(data)


def _run(n: int, exposures: list[LessonExposure]) -> RunRecord:
    return RunRecord(
        run_id=f"b-{n}",
        role=Role.BUILDER,
        agent_id="builder@1",
        target=Target(kind=TargetKind.ISSUE, number=n),
        outcome=Outcome.OPENED_PR,
        started_at=NOW + timedelta(minutes=n),
        finished_at=NOW + timedelta(minutes=n),
        model="m",
        exposures=exposures,
    )


def test_the_ledger_shows_each_lesson_and_parses() -> None:
    good = Lesson(
        id="acme/api#L-good",
        text="Run make lint.",
        created_at=NOW,
        updated_at=NOW,
        hits=5,
        repo="acme/api",
        visibility="private",
        author=LessonAuthor.MAINTAINER,
        author_login="maint",
        state=LessonState.PROVEN,
        source_refs=["pr-7"],
        history=[LessonEvent(at=NOW, op="reworded", by=LessonAuthor.MAINTAINER, login="maint")],
    )
    stale = Lesson(
        id="acme/api#L-stale",
        text=EVIL,
        created_at=NOW,
        updated_at=NOW,
        citations=[Citation(kind="path", value="src/gone.py")],
        citation_status=CitationStatus.BROKEN,
        stale_reason=f"missing at abc: path src/gone.py {EVIL}",
    )
    shown = LessonExposure(lesson_id=good.id, applicable=True, shown=True, holdout=0.2)
    held = LessonExposure(lesson_id=good.id, applicable=True, held_out=True, holdout=0.2)
    other = LessonExposure(lesson_id=stale.id, applicable=False)
    runs = [_run(1, [shown, other]), _run(2, [held, other]), _run(3, [shown])]
    # Its whole life: 10 shown runs (7 passed tests on try 1), 5 held out (2 passed).
    measured = LessonEffect(
        lesson_id=good.id,
        shown=10,
        held_out=5,
        complied=6,
        compliance_checked=8,
        followed_when_held=1,
        tokens_shown=1200,
        metrics={
            OutcomeMetric.FIRST_TRY_TESTS: MetricStats(strata={"acme/api|feature": [10, 7, 5, 2]})
        },
    )
    data = ReportData(
        generated_at=NOW,
        repo="acme/api",
        book=LessonBook(lessons=[good, stale]),
        runs=runs,
        effects=EffectBook(lessons={good.id: measured}),
    )
    page = render_document(render_tabs(data), title="agent-loop")
    parser = Ledger()
    parser.feed(page)
    assert parser.scripts == 0  # the hostile text stayed text
    rows = {row[0]: row for row in parser.rows if row}
    assert set(rows) == {good.id, stale.id}
    row = rows[good.id]
    assert row[1] == "proven"
    # Beta(8, 4) vs Beta(3, 4) posterior means: 0.667 - 0.429 = +0.24.
    assert row[2].startswith("first_try_tests: +0.24 [")
    assert row[2].endswith("(10 shown / 5 held out)")
    assert row[3] == "6 of 8 shown runs (held out: 1 of 5 anyway)"
    assert row[4] == "1,200 (120 per shown run)"
    assert row[5:8] == ["3 of 3", "2", "1"]
    assert "by maintainer @maint" in row[10]
    assert "acme/api (private)" in row[10]
    assert "PR #7" in row[10]
    assert "reworded by maintainer @maint" in row[11]
    row = rows[stale.id]
    assert row[1:5] == ["proving", "not measured yet", "–", "–"]
    assert row[5:8] == ["0 of 2", "0", "0"]
    assert row[9].startswith("broken: missing at abc: path src/gone.py")
    assert parser.svg_titles == ["after 3 applicable run(s): shown 2, held out 1"]


def test_the_ledger_says_each_lesson_s_diagnosis_and_how_compliance_was_judged() -> None:
    flagged = LessonDiagnosis(
        at=NOW, applicability=0.9, compliance=0.2, base_compliance=0.3, checked=30,
        judged_by="model", action="reword", done=False,
        note=f"not followed more when shown than when held out (pinned by the operator) {EVIL}",
    )  # fmt: skip
    lesson = Lesson(
        id="acme/api#L-blind", text="Think first.", created_at=NOW, updated_at=NOW,
        pinned=True, diagnosis=flagged,
    )  # fmt: skip
    plain = Lesson(id="acme/api#L-new", text="New.", created_at=NOW, updated_at=NOW)
    measured = LessonEffect(
        lesson_id=lesson.id, shown=40, held_out=10, complied=6, compliance_checked=30,
        held_checked=7, followed_when_held=2, judged=37, unknown=3,
    )  # fmt: skip
    data = ReportData(
        generated_at=NOW,
        repo="acme/api",
        book=LessonBook(lessons=[lesson, plain]),
        runs=[],
        effects=EffectBook(lessons={lesson.id: measured}),
    )
    parser = Ledger()
    parser.feed(render_document(render_tabs(data), title="agent-loop"))
    assert parser.scripts == 0
    rows = {row[0]: row for row in parser.rows if row}
    row = rows[lesson.id]
    assert row[3] == (
        "6 of 30 shown runs (held out: 2 of 7 anyway); 37 judged by the model, 3 unusable answer(s)"
    )
    assert row[12].startswith("reword: flaggednot followed more when shown")  # <br> between
    assert "(pinned by the operator)" in row[12]
    assert row[12].endswith(
        "applies to 90% of runs; followed in 20% of 30 checked shown runs, 30% held out "
        "(judged by the model)"
    )
    assert rows[plain.id][12] == "not diagnosed yet"


def test_the_ledger_lists_the_effect_on_every_other_outcome() -> None:
    """The PR-level outcomes (merged, reverts...) show next to the target's effect."""
    lesson = Lesson(id="acme/api#L-pr", text="Keep PRs small.", created_at=NOW, updated_at=NOW)
    measured = LessonEffect(
        lesson_id=lesson.id,
        shown=10,
        held_out=5,
        metrics={
            OutcomeMetric.FIRST_TRY_TESTS: MetricStats(strata={"acme/api|bug": [10, 7, 5, 2]}),
            OutcomeMetric.MERGED: MetricStats(strata={"acme/api|bug": [8, 6, 4, 1]}),
            OutcomeMetric.NOT_REVERTED: MetricStats(strata={"acme/api|bug": [6, 6, 1, 1]}),
            OutcomeMetric.FIRST_CI_GREEN: MetricStats(strata={"acme/api|bug": [3, 1, 0, 0]}),
        },
    )
    data = ReportData(
        generated_at=NOW,
        repo="acme/api",
        book=LessonBook(lessons=[lesson]),
        runs=[],
        effects=EffectBook(lessons={lesson.id: measured}),
    )
    parser = Ledger()
    parser.feed(render_document(render_tabs(data), title="agent-loop"))
    (row,) = [row for row in parser.rows if row]
    assert row[2].startswith("first_try_tests: +0.24 [")
    # Beta(7, 3) vs Beta(2, 4): 0.70 - 0.33; one arm only (first CI) is not estimated yet.
    assert row[13].startswith("merged: +0.37 [")
    assert "(8 shown / 4 held out)not_reverted: +0.21 [" in row[13]  # <br> between
    assert "first_ci_green" not in row[13]
