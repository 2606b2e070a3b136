"""`distiller_tick` in Flyte local mode acts on the diagnoses: the emulator served on
loopback, memory under AGENT_LOOP_HOME, a scripted model installed in-process.

An ignored lesson is reworded into a new version (the old one archived, superseded,
with a link to it), a pinned one with the same diagnosis is only flagged, a lesson that
names nothing gets exactly the budgeted number of model judgments, and the tick's
summary and report say what was done.
"""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_loop_common.llm import Budget, UsageMeter
from agent_loop_common.memory import (
    EFFECTS_PATH,
    LESSONS_PATH,
    read_context,
    read_retired,
    write_run_record,
)
from agent_loop_common.records import (
    Attempt,
    Lesson,
    LessonBook,
    LessonExposure,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
    WorkKind,
)
from agent_loop_common.runtime import local_memory, run_tick, use_model
from agent_loop_common.settings import Settings, load_settings
from agent_loop_distiller import (
    DISTILLER_MARKER,
    JUDGE_MARKER,
    REWORD_MARKER,
    EffectBook,
    LessonEffect,
)
from agent_loop_distiller.env import distiller_tick
from agent_loop_testing import (
    GitHubEmulator,
    ScriptedModel,
    call,
    serve_for_cli,
    turn,
    write_memory_file,
)

pytestmark = pytest.mark.slow

T0 = datetime(2026, 12, 1, tzinfo=UTC)
NEW_TEXT = "Run `make fmt` on the files you changed before you stage them."


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> Generator[Settings]:
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "# widgets\n"})
    with serve_for_cli(
        monkeypatch,
        emulator,
        tmp_path / "home",
        AGENT_LOOP_RECORD_RETENTION_DAYS="2",
        AGENT_LOOP_COMPLIANCE_JUDGMENTS="1",
    ):
        yield load_settings()


def test_a_local_tick_rewords_flags_and_judges_within_its_budget(settings: Settings) -> None:
    repo = settings.repo
    ignored, pinned, blind = (f"{repo}#L-{x}" for x in ("0000aaaa", "0000bbbb", "0000cccc"))
    ignored_counts = {"compliance_checked": 29, "complied": 6, "held_checked": 10,
                      "followed_when_held": 3}  # fmt: skip

    def lesson(lesson_id: str, text: str, **extra: Any) -> Lesson:
        return Lesson.model_validate(
            {"id": lesson_id, "text": text, "created_at": T0, "updated_at": T0, "repo": repo,
             "source_run_ids": ["old"], "last_seen_at": datetime.now(UTC), **extra}
        )  # fmt: skip

    def effect(lesson_id: str, **counts: Any) -> LessonEffect:
        return LessonEffect(lesson_id=lesson_id, candidates=40, applicable=40, shown=30,
                            held_out=10, **counts)  # fmt: skip

    location = local_memory(settings)
    book = LessonBook(
        lessons=[
            lesson(ignored, "Formatting matters: `make fmt` exists."),
            lesson(pinned, "Formatting: `make fmt` also exists.", pinned=True),
            lesson(blind, "Think about the callers first."),
            lesson(f"{repo}#L-0000dddd", "Think about the tests first."),
        ]
    )
    effects = EffectBook(
        lessons={ignored: effect(ignored, **ignored_counts),
                 pinned: effect(pinned, **ignored_counts)}
    )  # fmt: skip
    write_memory_file(location, location.keys.context, LESSONS_PATH, book.model_dump_json())
    write_memory_file(location, location.keys.ledger, EFFECTS_PATH, effects.model_dump_json())
    finished = datetime.now(UTC) - timedelta(minutes=3)
    shown = [x.id for x in book.lessons]
    record = RunRecord(
        run_id="b-1", role=Role.BUILDER, target=Target(kind=TargetKind.ISSUE, number=1, title="t"),
        outcome=Outcome.OPENED_PR, started_at=finished - timedelta(minutes=1),
        finished_at=finished, attempts=[Attempt(number=1, verified=True)], repo=repo,
        work_kind=WorkKind.BUG, lesson_ids=shown,
        exposures=[LessonExposure(lesson_id=x, applicable=True, shown=True, holdout=0.2)
                   for x in shown],
    )  # fmt: skip
    asyncio.run(write_run_record(location, record))
    model = ScriptedModel(
        routes={
            # Two lessons name nothing; the budget (1) buys one judgment.
            JUDGE_MARKER: [turn("false")],
            REWORD_MARKER: [turn(f'{{"text": "{NEW_TEXT}"}}')],
            DISTILLER_MARKER: [turn(tool_calls=[call("finish", summary="Nothing.")]),
                               turn("Done.")],
        },
        name="distiller",
    )  # fmt: skip

    def provide(role: Role, purpose: str, usage: UsageMeter, budget: Budget) -> Any:
        assert role is Role.DISTILLER
        model.usage, model.budget = usage, budget
        return model

    with use_model(provide):
        summary = run_tick(settings, distiller_tick)

    model.assert_finished()
    assert summary.outcome == Outcome.DISTILLED.value
    details = summary.details
    assert (details["compliance_judgments"], details["reworded"], details["flagged"]) == (
        "1", "1", "1",
    )  # fmt: skip
    lessons = {x.id: x for x in asyncio.run(read_context(location)).lessons.lessons}
    (successor,) = [x for x in lessons.values() if x.supersedes == [ignored]]
    assert successor.text == NEW_TEXT
    assert ignored not in lessons
    (gone,) = [r for r in asyncio.run(read_retired(location)) if r.lesson.id == ignored]
    assert (gone.kind, gone.replaced_by) == ("superseded", [successor.id])
    assert gone.reason.startswith("reworded: ignored")
    flagged = lessons[pinned].diagnosis
    assert flagged is not None
    assert (flagged.action, flagged.done) == ("reword", False)
    ledger = pathlib.Path(location.remote_path(location.keys.ledger))
    saved = EffectBook.model_validate_json((ledger / EFFECTS_PATH).read_text())
    assert list(saved.judgments.values()) == [False]
    assert successor.id not in saved.lessons  # measured from its first own exposure on
    report = pathlib.Path(summary.report).read_text()
    assert "reword: flagged" in report
