"""`agent-loop run`'s live printer, on its own: what reaches the terminal, and how.

The end-to-end behaviour (a real tick in its own process) is in `test_cli_live.py`;
these are the printer's own rules: untrusted text cannot drive the terminal, several
runs of one tick name their lines, JSON lines stay one object each, and a remote tick
says where its progress is.
"""

from __future__ import annotations

import io
import json

import pytest

from agent_loop.live import LivePrinter, one_line, watching
from agent_loop_common.progress import ProgressEvent, emit, use_progress
from agent_loop_common.records import Outcome, Role
from agent_loop_common.runtime import TickSummary


def _event(kind: str, run: str = "r1", target: str = "issue #5", **data: object) -> ProgressEvent:
    return ProgressEvent(kind, "builder", run, target, data=data)  # type: ignore[arg-type]


def test_titles_and_notes_cannot_drive_the_terminal() -> None:
    out = io.StringIO()
    printer = LivePrinter(out, "text")
    printer(_event("run.claimed", title="Fix \x1b]8;;http://evil\x07it\x1b]8;;\x07 \x1b[2J now"))
    printer(_event("verifier.verdict", verified=False, notes="no\u202etxt.exe"))
    text = out.getvalue()
    assert "\x1b" not in text
    assert "\u202e" not in text
    first = text.splitlines()[0]
    assert first.startswith("  claimed   issue #5 Fix it")
    assert first.endswith(" now")


def test_several_runs_of_one_tick_name_their_lines() -> None:
    out = io.StringIO()
    printer = LivePrinter(out, "text")
    printer(_event("try.started", number=1, tries=3))
    printer(_event("try.started", "r2", "issue #7", number=1, tries=3))
    printer(_event("try.started", number=2, tries=3))
    assert out.getvalue().splitlines() == [
        "  try       1 of 3",
        "  [issue #7] try       1 of 3",
        "  [issue #5] try       2 of 3",
    ]


def test_json_lines_are_one_object_per_event_and_the_end_is_left_to_the_summary() -> None:
    out = io.StringIO()
    printer = LivePrinter(out, "json")
    printer(_event("tests.ran", by="check", status="passed", summary="2 passed\n(base: 1)"))
    printer(_event("run.ended", outcome="opened_pr", tokens=10))
    lines = out.getvalue().splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["tests.ran", "run.ended"]
    text = LivePrinter(io.StringIO(), "text")
    text(_event("run.ended", outcome="opened_pr", tokens=10))
    assert text.printed == 0  # the summary's last line says it, with the tick's duration


def test_quiet_prints_nothing_while_the_tick_runs_and_one_line_at_its_end() -> None:
    out = io.StringIO()
    with watching("quiet", remote=False, out=out):
        emit("try.started", number=1, tries=3)
    assert out.getvalue() == ""
    summary = TickSummary(
        role=Role.BUILDER,
        outcome=Outcome.ERROR,
        target="issue#5",
        error="RuntimeError: boom\nmore",
        tries=2,
        tokens=1234,
        cost_usd=0.0123,
    )
    assert one_line("builder", summary, 83.0) == (
        "builder: error on issue #5 (RuntimeError: boom more) · 2 tries · 1,234 tokens · "
        "$0.01 · 1m23s"
    )


def test_a_remote_tick_says_where_its_progress_is(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[ProgressEvent] = []
    with use_progress(seen.append), watching("text", remote=True):
        emit("try.started", number=1, tries=3)  # nothing of a remote tick runs here
    err = capsys.readouterr().err
    assert "its progress (tool calls, tests, the verdict) is in its Flyte report" in err
    assert len(seen) == 1  # and no printer was installed for it
