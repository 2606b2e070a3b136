"""The tick's report shows the tests' evidence of the run (escaped: names come from code
under test)."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_loop_common.records import (
    Attempt,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
    TestEvidence,
)
from agent_loop_common.report import run_report_html

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


def test_the_report_shows_command_source_backend_runs_and_flags() -> None:
    record = RunRecord(
        run_id="r1",
        role=Role.BUILDER,
        target=Target(kind=TargetKind.ISSUE, number=3),
        outcome=Outcome.OPENED_PR,
        started_at=T0,
        finished_at=T0,
        attempts=[
            Attempt(number=1, verified=False, tests="failed: 1 failed (base: 1 passed)"),
            Attempt(number=2, verified=True, tests="passed: 2 passed (base: 1 passed)"),
        ],
        tests=TestEvidence(
            command="python -m pytest -q",
            source="AGENTS.md",
            backend="plain-subprocess (not isolated)",
            isolated=False,
            status="passed",
            summary="2 passed (base: 1 passed)",
            base="exit 0: 1 passed (0.3 s)",
            after="exit 0: 2 passed (0.4 s)",
            fail_to_pass=["tests.test_x::test_<script>"],
            tamper_flags=["tests/test_y.py: 1 more `xfail`"],
            runs=3,
        ),
    )
    html = run_report_html(record, heading="Builder tick", idle="Idle.")
    assert "<h3>Tests</h3>" in html
    assert "<b>passed</b>: 2 passed (base: 1 passed)" in html
    assert "<code>python -m pytest -q</code> from AGENTS.md" in html
    assert "plain-subprocess (not isolated) (not isolated)" not in html
    assert "test_&lt;script&gt;" in html
    assert "<script>" not in html
    assert "tests/test_y.py: 1 more `xfail`" in html
    assert "<td>failed: 1 failed (base: 1 passed)</td>" in html
