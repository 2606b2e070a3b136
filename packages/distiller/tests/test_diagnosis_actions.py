"""The distiller acts on each lesson's diagnosis: rewords an ignored lesson into a new
version, narrows a rarely relevant one, and buys at most N compliance judgments a tick.

Every tick is the real pipeline (githubkit against the emulator, the real measurement
and the real model seam driven by a `ScriptedModel`); the lesson book and the effect
state are seeded in memory as a distiller before it left them, and the new records carry
the exposures builder runs write.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_loop_common.memory import (
    EFFECTS_PATH,
    LESSONS_PATH,
    MemoryLocation,
    read_context,
    read_retired,
)
from agent_loop_common.records import (
    Lesson,
    LessonAuthor,
    LessonBook,
    LessonExposure,
    LessonState,
    RunRecord,
    TraceStep,
    WorkKind,
)
from agent_loop_distiller import (
    DISTILLER_MARKER,
    JUDGE_MARKER,
    REWORD_MARKER,
    EditRefused,
    EffectBook,
    LessonEditor,
    LessonEffect,
    ModelAsk,
    judge_compliance,
    parse_judgment,
    parse_rewording,
)
from agent_loop_testing import ScriptedModel, call, turn, write_memory_file

from .conftest import Tick

T0 = datetime(2026, 12, 1, tzinfo=UTC)
REPO = "acme/widgets"
IGNORED, PINNED, RARE, UNCLEAR = (f"{REPO}#L-{n}" for n in ("1a1a1a1a", "2b2b2b2b", "3c3c3c3c", "4d4d4d4d"))  # fmt: skip
NEW_TEXT = "Run `make fmt` on every file you changed, then stage what it rewrote."


def _lesson(lesson_id: str, text: str, **extra: object) -> Lesson:
    return Lesson.model_validate(
        {"id": lesson_id, "text": text, "created_at": T0, "updated_at": T0, "repo": REPO,
         "source_run_ids": ["old-run"], "hits": 3,
         "last_seen_at": datetime.now(UTC)} | extra  # fresh: never expired for age
    )  # fmt: skip


def _seed(memory: MemoryLocation, lessons: Sequence[Lesson], effects: EffectBook) -> None:
    """The book and the effect state as an earlier distiller tick left them."""
    book = LessonBook(lessons=list(lessons))
    write_memory_file(memory, memory.keys.context, LESSONS_PATH, book.model_dump_json())
    write_memory_file(memory, memory.keys.ledger, EFFECTS_PATH, effects.model_dump_json())


def _effect(lesson_id: str, **counts: Any) -> LessonEffect:
    return LessonEffect(lesson_id=lesson_id, candidates=40, applicable=40, shown=30, held_out=10,
                        **counts)  # fmt: skip


def _exposed(
    make_record: Callable[..., RunRecord],
    run_id: str,
    shown: Sequence[str],
    *,
    kind: WorkKind = WorkKind.BUG,
    trace: Sequence[TraceStep] = (),
) -> RunRecord:
    """A builder run that showed `shown` (applicable, drawn in) and used `trace`."""
    exposures = [
        LessonExposure(lesson_id=x, applicable=True, shown=True, held_out=False, holdout=0.2)
        for x in shown
    ]
    return make_record(run_id, trace=trace, lesson_ids=list(shown)).model_copy(
        update={"exposures": exposures, "work_kind": kind, "repo": REPO}
    )


def _distiller_finishes() -> list[Any]:
    return [turn(tool_calls=[call("finish", summary="Nothing to add.")]), turn("Done.")]


# ------------------------------------------------------------------ reword


async def test_an_ignored_lesson_is_reworded_into_a_new_version_and_a_pinned_one_is_not(
    tick: Tick, memory: MemoryLocation, install: Any, make_record: Any, write_record: Any
) -> None:
    # Shown runs used `make fmt` 6 times in 29, held-out runs 3 times in 10: the wording
    # does nothing a run would not do anyway.
    ignored = {"compliance_checked": 29, "complied": 6, "held_checked": 10, "followed_when_held": 3}
    text = "Formatting matters: `make fmt` exists."
    _seed(
        memory,
        [
            _lesson(IGNORED, text),
            _lesson(PINNED, "Formatting: `make fmt` too.", pinned=True),
        ],
        EffectBook(lessons={IGNORED: _effect(IGNORED, **ignored),
                            PINNED: _effect(PINNED, **ignored)}),
    )  # fmt: skip
    await write_record(_exposed(make_record, "b-1", [IGNORED, PINNED]))
    model = install(
        ScriptedModel(
            routes={
                REWORD_MARKER: [
                    turn(
                        f'{{"text": "{NEW_TEXT}"}}',
                        expect_in_messages=[text, "not followed", "Keep naming", "`make fmt`"],
                    )
                ],
                DISTILLER_MARKER: _distiller_finishes(),
            },
            name="distiller",
        )
    )

    result = await tick()

    model.assert_finished()  # one rewording: the pinned lesson cost no model call
    assert result.acted is not None
    new_id = result.acted.reworded[IGNORED]
    book = {x.id: x for x in (await read_context(memory)).lessons.lessons}
    assert set(book) == {new_id, PINNED}
    new = book[new_id]
    assert new.text == NEW_TEXT
    assert new.supersedes == [IGNORED]
    assert new.state is LessonState.PROVING
    assert new.author is LessonAuthor.DISTILLER
    assert (new.history[0].op, new.history[0].detail.startswith(f"from {IGNORED}:")) == (
        "reworded",
        True,
    )
    assert new.source_run_ids == ["old-run"]  # the advice's provenance is kept
    (gone,) = [r for r in await read_retired(memory) if r.lesson.id == IGNORED]
    assert (gone.kind, gone.replaced_by) == ("superseded", [new_id])
    assert gone.reason.startswith("reworded: ignored")
    assert gone.lesson.diagnosis is not None
    assert (gone.lesson.diagnosis.action, gone.lesson.diagnosis.done) == ("reword", True)
    pinned = book[PINNED]
    assert pinned.text == "Formatting: `make fmt` too."
    assert pinned.diagnosis is not None
    assert (pinned.diagnosis.action, pinned.diagnosis.done) == ("reword", False)
    assert "pinned by the operator" in pinned.diagnosis.note
    assert result.acted.flagged[PINNED].startswith("pinned by the operator")
    assert [(e.op, e.lesson_id) for e in result.edits] == [("reword", new_id)]  # the report's
    assert result.record is not None
    assert [s.args.split(" -> ")[0] for s in result.record.trace if s.tool == "reword_ignored"] == [
        IGNORED
    ]

    # The new version is measured from zero: its first run is its first exposure.
    await write_record(
        _exposed(make_record, "b-2", [new_id], trace=[TraceStep(tool="run", args="make fmt",
                                                                ok=True, ms=1)])
    )  # fmt: skip
    install(ScriptedModel(routes={DISTILLER_MARKER: _distiller_finishes()}))
    await tick()
    effects = EffectBook.model_validate_json(
        (pathlib.Path(memory.remote_path(memory.keys.ledger)) / EFFECTS_PATH).read_text()
    )
    fresh = effects.lessons[new_id]
    assert (fresh.applicable, fresh.shown, fresh.compliance_checked, fresh.complied) == (1, 1, 1, 1)
    old = effects.lessons[IGNORED]
    assert old.retired is not None
    assert old.retired.replaced_by == [new_id]


async def test_a_rewording_that_breaks_the_rules_leaves_the_lesson_flagged(
    tick: Tick, memory: MemoryLocation, install: Any, make_record: Any, write_record: Any
) -> None:
    ignored = {"compliance_checked": 29, "complied": 6, "held_checked": 10, "followed_when_held": 3}
    _seed(
        memory,
        [_lesson(IGNORED, "Formatting matters: `make fmt` exists.")],
        EffectBook(lessons={IGNORED: _effect(IGNORED, **ignored)}),
    )
    await write_record(_exposed(make_record, "b-1", [IGNORED]))
    install(
        ScriptedModel(
            routes={
                # Untrusted output: a "never" rule is not the prescriptive wording asked for.
                REWORD_MARKER: [turn('{"text": "Never forget to format."}')],
                DISTILLER_MARKER: _distiller_finishes(),
            }
        )
    )

    result = await tick()

    (lesson,) = (await read_context(memory)).lessons.lessons
    assert lesson.id == IGNORED
    assert lesson.diagnosis is not None
    assert (lesson.diagnosis.action, lesson.diagnosis.done) == ("reword", False)
    assert "rewording refused" in lesson.diagnosis.note
    assert result.acted is not None
    assert result.acted.reworded == {}


# ------------------------------------------------------------------ narrow


async def test_a_rarely_relevant_lesson_is_narrowed_to_the_work_kinds_that_used_it(
    tick: Tick, memory: MemoryLocation, install: Any, make_record: Any, write_record: Any
) -> None:
    rare = {"compliance_checked": 29, "complied": 1, "held_checked": 10, "followed_when_held": 0}
    _seed(
        memory,
        [
            _lesson(RARE, "The endpoints are listed in `docs/api.md`."),
            _lesson(UNCLEAR, "The schema lives in `schema.sql`."),
        ],
        EffectBook(
            lessons={
                RARE: _effect(RARE, **rare, kind_use={"docs": [6, 1], "bug": [23, 0],
                                                      "feature": [10, 0]}),
                UNCLEAR: _effect(UNCLEAR, **rare, kind_use={"docs": [6, 1], "feature": [3, 0]}),
            }
        ),
    )  # fmt: skip
    await write_record(_exposed(make_record, "b-1", [RARE, UNCLEAR]))
    model = install(ScriptedModel(routes={DISTILLER_MARKER: _distiller_finishes()}))

    result = await tick()

    model.assert_finished()  # narrowing is decided from the records: no model call
    book = {x.id: x for x in (await read_context(memory)).lessons.lessons}
    narrowed = book[RARE]
    assert narrowed.kinds == [WorkKind.DOCS]
    assert narrowed.history[-1].op == "narrowed"
    assert "docs (1 of 6)" in narrowed.history[-1].detail
    assert narrowed.diagnosis is not None
    assert (narrowed.diagnosis.action, narrowed.diagnosis.done) == ("narrow", True)
    # Too few feature (and bug) runs to tell where it is never used: flagged, unchanged.
    unclear = book[UNCLEAR]
    assert unclear.kinds == []
    assert unclear.diagnosis is not None
    assert (unclear.diagnosis.action, unclear.diagnosis.done) == ("narrow", False)
    assert result.acted is not None
    assert set(result.acted.narrowed) == {RARE}
    assert [(e.op, e.lesson_id) for e in result.edits] == [("narrow", RARE)]
    effects = EffectBook.model_validate_json(
        (pathlib.Path(memory.remote_path(memory.keys.ledger)) / EFFECTS_PATH).read_text()
    )
    assert effects.lessons[RARE].compliance_checked == 0  # judged afresh in its new scope
    assert effects.lessons[UNCLEAR].compliance_checked == 30


# ------------------------------------------------------------------ compliance judgments

BLIND = [f"{REPO}#L-b{n}b{n}b{n}b{n}" for n in range(3)]
"""Three lessons that name nothing a trace could show."""


async def test_compliance_judgments_stay_within_the_budget_and_garbage_is_unknown(
    tick: Tick, memory: MemoryLocation, install: Any, make_record: Any, write_record: Any
) -> None:
    _seed(
        memory,
        [_lesson(x, f"Think about the callers before changing behaviour {i}.")
         for i, x in enumerate(BLIND)],
        # Closest to a decision first: BLIND[2] needs 2 more checked runs, BLIND[0] 20,
        # BLIND[1] 30.
        EffectBook(lessons={BLIND[0]: _effect(BLIND[0], compliance_checked=10, complied=5, judged=10),
                            BLIND[2]: _effect(BLIND[2], compliance_checked=28, complied=5, judged=28)}),
    )  # fmt: skip
    step = TraceStep(tool="read_file", args="path=src/widgets/core.py", ok=True, ms=1)
    await write_record(_exposed(make_record, "b-1", BLIND, trace=[step]))
    model = install(
        ScriptedModel(
            routes={
                JUDGE_MARKER: [
                    turn("true", expect_in_messages=["behaviour 2", "read_file"]),
                    turn('Yes - "true", it did.', expect_in_messages=["behaviour 0"]),
                ],
                DISTILLER_MARKER: _distiller_finishes(),
            }
        )
    )

    result = await tick(compliance_judgments=2)

    model.assert_finished()  # 3 candidates, a budget of 2: exactly 2 judgments
    assert result.judged is not None
    assert (result.judged.asked, result.judged.unknown, result.judged.left) == (2, 1, 1)
    assert result.record is not None  # the record keeps what was asked and answered
    asked = [(s.tool, s.args) for s in result.record.trace if s.tool == "judge_compliance"]
    assert asked == [
        ("judge_compliance", f"{BLIND[2]} b-1 -> 'true'"),
        ("judge_compliance", f"{BLIND[0]} b-1 -> 'Yes - \"true\", it did.'"),
    ]
    effects = EffectBook.model_validate_json(
        (pathlib.Path(memory.remote_path(memory.keys.ledger)) / EFFECTS_PATH).read_text()
    )
    judged = effects.lessons[BLIND[2]]
    assert (judged.compliance_checked, judged.complied, judged.judged) == (29, 6, 29)
    garbage = effects.lessons[BLIND[0]]
    assert (garbage.compliance_checked, garbage.unknown) == (10, 1)  # unknown: not counted
    assert effects.lessons[BLIND[1]].compliance_checked == 0
    assert effects.judgments == {f"{BLIND[2]} b-1": True, f"{BLIND[0]} b-1": None}
    book = {x.id: x for x in (await read_context(memory)).lessons.lessons}
    diagnosis = book[BLIND[2]].diagnosis
    assert diagnosis is not None
    assert diagnosis.judged_by == "model"
    assert "(judged by the model)" in diagnosis.summary()


async def test_a_failing_model_ends_the_judgments_without_failing_the_measurement() -> None:
    from agent_loop_common.llm import ErrorKind, ModelCallFailed

    effects = EffectBook()
    book = LessonBook(lessons=[_lesson(x, f"Think {i}.") for i, x in enumerate(BLIND)])
    record = RunRecord.model_validate(
        {"run_id": "b-1", "role": "builder", "target": {"kind": "issue", "number": 1},
         "outcome": "opened_pr", "started_at": T0, "finished_at": T0, "repo": REPO,
         "exposures": [{"lesson_id": x, "applicable": True, "shown": True, "holdout": 0.2}
                       for x in BLIND]}
    )  # fmt: skip
    failing = ScriptedModel(
        [turn(error=ModelCallFailed("m", ErrorKind.TRANSIENT, 3, RuntimeError("provider down")))]
    )
    ask = ModelAsk(failing, "m")

    judged = await judge_compliance(ask, effects, book, [record], budget=5)

    failing.assert_finished()  # one call, then no more questions this tick
    assert ask.failed
    assert (judged.asked, judged.answers, effects.judgments) == (0, {}, {})

    # A judgment once bought is never bought again (the cache), and 0 turns them off.
    effects.judgments[f"{BLIND[0]} b-1"] = False
    silent = ScriptedModel([], name="must not be called")
    again = await judge_compliance(ModelAsk(silent, "m"), effects, book, [record], budget=0)
    assert silent.calls == []
    assert (again.cached, again.answers, again.left) == (1, {(BLIND[0], "b-1"): False}, 2)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("true", True), (" false\n", False), ("True", None), ('"true"', None), ("yes", None),
     ('{"followed": true}', None), ("", None), (None, None), ("1", None)],
)  # fmt: skip
def test_a_judgment_is_a_json_boolean_or_unknown(reply: str | None, expected: bool | None) -> None:
    assert parse_judgment(reply) is expected


def test_a_rewording_is_exactly_one_text_field() -> None:
    assert parse_rewording('{"text": "Run `tox`."}') == "Run `tox`."
    for bad in ('{"text": ""}', '{"text": "a", "id": "x"}', '["a"]', "Run `tox`.", None):
        assert parse_rewording(bad) is None


async def test_the_agent_rewording_a_measured_lesson_makes_a_new_version(
    tick: Tick, memory: MemoryLocation, install: Any, make_record: Any, write_record: Any
) -> None:
    measured, fresh = f"{REPO}#L-5e5e5e5e", f"{REPO}#L-6f6f6f6f"
    _seed(
        memory,
        [_lesson(measured, "Run `tox` first."), _lesson(fresh, "Run `nox` first.")],
        EffectBook(lessons={measured: _effect(measured)}),  # shown or held out in 40 runs
    )
    await write_record(make_record("b-1"))
    model = install(
        ScriptedModel(
            routes={
                DISTILLER_MARKER: [
                    turn(
                        tool_calls=[
                            call(
                                "reword_lesson",
                                lesson_id=measured,
                                text="Run `tox -e py311` before you submit.",
                            ).expecting("as a new version", "measured afresh"),
                            call(
                                "reword_lesson",
                                lesson_id=fresh,
                                text="Run `nox -s tests` before you submit.",
                            ).expecting(f"Reworded {fresh}."),
                        ]
                    ),
                    turn(tool_calls=[call("finish", summary="Clearer.")]),
                    turn("Done."),
                ]
            }
        )
    )

    await tick()

    model.assert_finished()
    book = {x.id: x for x in (await read_context(memory)).lessons.lessons}
    (successor,) = [x for x in book.values() if x.supersedes == [measured]]
    assert successor.text == "Run `tox -e py311` before you submit."
    assert measured not in book
    assert book[fresh].text == "Run `nox -s tests` before you submit."  # never measured: in place
    (gone,) = await read_retired(memory)
    assert (gone.lesson.id, gone.kind, gone.replaced_by) == (measured, "superseded", [successor.id])
    assert gone.reason.startswith("reworded: a new text is a new treatment")


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("Run `make fmt` on the files you changed.", ""),
        ("Run `make lint` on the files you changed.", "keep naming what the lesson names"),
        ("Never skip `make fmt`.", "say what to do instead"),
        ("Format the files you changed with make fmt.", "in backticks"),
        ("Formatting matters: `make fmt` exists.", "already has exactly this text"),
    ],
)
def test_a_new_version_must_be_prescriptive_and_keep_naming_what_the_lesson_names(
    text: str, refused: str
) -> None:
    old = _lesson(IGNORED, "Formatting matters: `make fmt` exists.")
    editor = LessonEditor(book=LessonBook(lessons=[old]), evidence={}, now=T0, repo=REPO)
    if not refused:
        new = editor.supersede(IGNORED, text, "ignored")
        assert (new.supersedes, new.text) == ([IGNORED], text)
        return
    with pytest.raises(EditRefused, match=refused):
        editor.supersede(IGNORED, text, "ignored")
    assert [x.id for x in editor.lessons] == [IGNORED]
