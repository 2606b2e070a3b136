"""Lessons end to end, as `agent-loop run` runs them: learned, drawn, hidden, measured.

A builder run opens a PR; the distiller learns lessons from it; the next builder runs
read them with `AGENT_LOOP_LESSON_HOLDOUT=0.5`: each lesson is shown or held out by the
hash of (run id, lesson id), every held-out lesson is absent from every prompt of the
run (the builder's and the verifier's), every shown one reaches the builder, and the
record keeps each draw so it can be reproduced. The next distiller tick folds those
exposures into its effect state in memory. Everything runs through the CLI in Flyte
local mode against the served emulator, with scripted models.
"""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Iterator

import pytest

from agent_loop import cli
from agent_loop.status import read_snapshot
from agent_loop_common.exposure import draw_lessons, uniform_draw
from agent_loop_common.memory import DistillerMemory
from agent_loop_common.records import Role, WorkKind
from agent_loop_common.runtime import local_memory, use_model
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_distiller import EffectBook
from agent_loop_testing import (
    CliLoop,
    GitHubEmulator,
    ScriptedModel,
    call,
    serve_for_cli,
    turn,
)

pytestmark = pytest.mark.slow

HOLDOUT = 0.5
LESSONS = 10
"""With 10 lessons at 0.5 over two runs, both arms occur but for a 2**-19 chance."""
VERIFIED = '{"verified": true, "notes": "Checked against the request."}'


@pytest.fixture
def loop(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> Iterator[CliLoop]:
    emulator = GitHubEmulator()
    emulator.seed_files({"src/calc.py": "def add(a, b):\n    return a + b\n"})
    with serve_for_cli(
        monkeypatch,
        emulator,
        tmp_path / "home",
        AGENT_LOOP_SANDBOX="off",
        AGENT_LOOP_LESSON_HOLDOUT=str(HOLDOUT),
        # The distiller's script has no compliance judgments (their budget and parsing
        # are driven in packages/distiller/tests/test_diagnosis_actions.py).
        AGENT_LOOP_COMPLIANCE_JUDGMENTS="0",
    ):
        yield CliLoop(emulator, cli.main, capsys)


def _builder(runs: int) -> ScriptedModel:
    script = []
    for n in range(runs):
        script += [
            turn(tool_calls=[call("stage_file", path=f"src/f{n}.py", content=f"X = {n}\n")]),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title=f"Add f{n}",
                        body="Adds it.",
                        summary=f"f{n}.",
                    )
                ]
            ),
            turn("Submitted."),
        ]
    return ScriptedModel(script, routes={VERIFIER_MARKER: [turn(VERIFIED)] * runs}, name="builder")


def _distiller(evidence: str) -> ScriptedModel:
    adds = [
        turn(
            tool_calls=[
                call(
                    "add_lesson",
                    text=f"Lesson number {k}: keep every function in calc small.",
                    evidence_run_ids=[evidence],
                    roles=["builder"],
                )
            ]
        )
        for k in range(LESSONS)
    ]
    return ScriptedModel(
        [*adds, turn(tool_calls=[call("finish", summary="Lessons.")]), turn("Done.")],
        name="distiller",
    )


def test_lessons_are_drawn_hidden_recorded_and_measured(loop: CliLoop) -> None:
    emu = loop.emulator
    for n in range(3):
        emu.add_issue(f"Add f{n}", f"We need f{n}.", labels=["bug"] if n else [])
    with use_model(loop.provider):
        loop.models[Role.BUILDER] = first_builder = _builder(1)
        first = loop.tick("builder")
        assert first.outcome == "opened_pr"
        loop.models[Role.DISTILLER] = _distiller(first.run_id)
        assert loop.tick("distiller").outcome == "distilled"
        first_builder.assert_finished()

        # ---- the learning path: lessons written after graded work reach the next runs
        loop.models[Role.BUILDER] = later = _builder(2)
        runs = [loop.tick("builder") for _ in range(2)]
        assert [r.outcome for r in runs] == ["opened_pr", "opened_pr"]
        later.assert_finished()
        loop.models[Role.DISTILLER] = ScriptedModel(
            [turn(tool_calls=[call("finish", summary="Nothing new.")]), turn("Done.")]
        )
        assert loop.tick("distiller").outcome == "distilled"

    settings = loop.settings
    snapshot = asyncio.run(read_snapshot(local_memory(settings)))
    book = snapshot.lessons
    assert len(book.lessons) == LESSONS
    text = {x.id: x.text for x in book.lessons}
    records = {r.run_id: r for r in snapshot.records}
    calls = later.calls
    per_run = len(calls) // 2  # each run: 3 builder turns + 1 verifier turn, in order
    assert per_run * 2 == len(calls)
    held_total = shown_total = 0
    for i, tick in enumerate(runs):
        record = records[tick.run_id]
        assert record.work_kind is WorkKind.BUG
        assert {e.lesson_id for e in record.exposures} == set(text)
        prompts = " ".join(str(c.messages) for c in calls[i * per_run : (i + 1) * per_run])
        builder_prompt = str(calls[i * per_run].messages)
        for e in record.exposures:
            assert e.applicable
            assert e.holdout == HOLDOUT
            # reproducible: the record's draw is the hash of (run id, lesson id)
            assert e.held_out == (uniform_draw(record.run_id, e.lesson_id) < HOLDOUT)
            if e.held_out:
                held_total += 1
                assert not e.shown
                assert text[e.lesson_id] not in prompts  # no model of the run saw it
            else:
                shown_total += 1
                assert e.shown
                assert text[e.lesson_id] in builder_prompt
        assert sorted(record.lesson_ids) == sorted(e.lesson_id for e in record.exposures if e.shown)
        replay = draw_lessons(
            book.lessons, run_id=record.run_id, role=Role.BUILDER, kind=WorkKind.BUG, rate=HOLDOUT
        )
        assert {e.lesson_id: e.held_out for e in replay.exposures} == {
            e.lesson_id: e.held_out for e in record.exposures
        }
    assert held_total > 0
    assert shown_total > 0

    # ---- the distiller measured those exposures: fixed-size state in its ledger key
    async def effects() -> EffectBook | None:
        memory = await DistillerMemory.open(local_memory(settings))
        return await memory.read_effects(EffectBook)

    state = asyncio.run(effects())
    assert state is not None
    for lesson_id in text:
        effect = state.lessons[lesson_id]
        assert effect.applicable == 2
        assert effect.shown + effect.held_out == 2
    assert set(state.recent_run_ids) >= {r.run_id for r in runs}
