"""The measurement's maths and stored state do not drift: a seeded replay pinned to files.

`data/effects_v1_midway.json` and `data/effects_v1_final.json` were written by the
distiller of 2026-12-02 (commit 2378367, the per-exposure `observe` fold and the nested
`EffectBook` layout) from the stream below: the state after tick 50, and after tick 100
with every decision taken on the way. The current code must load the old file, fold the
same records, and land on the same numbers (to floating-point tolerance) and the very
same decisions at the very same ticks.
"""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from agent_loop_common.records import (
    Attempt,
    Lesson,
    LessonBook,
    LessonExposure,
    Outcome,
    OutcomeMetric,
    Role,
    RunRecord,
    Target,
    TargetKind,
    TestEvidence,
    TraceStep,
    WorkKind,
)
from agent_loop_distiller import EffectBook, forget_departed, measure_effects

T0 = datetime(2026, 12, 1, tzinfo=UTC)
DATA = Path(__file__).parent / "data"
TICKS, MIDWAY, PER_TICK = 100, 50, 20

LESSONS = {
    # id: (effect on the first try passing, effect on the verifier, target, kinds, holdout)
    "o/r#L-help": (0.20, 0.0, None, [], 0.2),
    "o/r#L-harm": (-0.25, 0.0, None, [], 0.2),
    "o/r#L-none": (0.0, 0.0, None, [], 0.2),
    "o/r#L-verify": (0.0, 0.15, OutcomeMetric.FIRST_TRY_VERIFIED, [], 0.3),
    "o/r#L-bugs": (0.10, 0.0, None, [WorkKind.BUG], 0.05),
}
NEW = (0.0, 0.0, None, list[WorkKind](), 0.2)
"""A lesson outside the table: no effect, every kind."""
KINDS = [WorkKind.BUG, WorkKind.FEATURE, WorkKind.DOCS]


def book_of() -> LessonBook:
    """The lessons of the stream (one quotes a command, so compliance is counted)."""
    lessons = [
        Lesson.model_validate(
            {
                "id": i,
                "text": "Run `make check` first." if i.endswith("help") else f"Do {i}.",
                "created_at": T0,
                "updated_at": T0,
                "target_metric": target,
                "kinds": kinds,
            }
        )
        for i, (_, _, target, kinds, _) in LESSONS.items()
    ]
    return LessonBook(lessons=lessons)


def tick_records(rng: random.Random, tick: int, book: LessonBook) -> list[RunRecord]:
    """One tick's records: the book's lessons drawn per run, outcomes depending on them."""
    out: list[RunRecord] = []
    for i in range(PER_TICK):
        run = tick * PER_TICK + i
        kind = KINDS[run % len(KINDS)]
        repo = "o/r" if run % 5 else "o/s"
        exposures: list[LessonExposure] = []
        p_tests, p_verify = 0.4, 0.5
        for lesson in book.lessons:
            gain_tests, gain_verify, _, kinds, holdout = LESSONS.get(lesson.id, NEW)
            if kinds and kind not in kinds:
                exposures.append(LessonExposure(lesson_id=lesson.id, applicable=False))
                continue
            held = rng.random() < holdout
            budget_cut = not held and rng.random() < 0.02
            shown = not held and not budget_cut
            exposures.append(
                LessonExposure(lesson_id=lesson.id, applicable=True, held_out=held,
                               shown=shown, holdout=holdout,
                               note="budget" if budget_cut else "")
            )  # fmt: skip
            if shown:
                p_tests += gain_tests
                p_verify += gain_verify
        verdict = rng.random()
        tests = (
            "no_evidence: nothing ran" if verdict < 0.1
            else "passed: 3 passed" if rng.random() < p_tests else "failed: 1 failed"
        )  # fmt: skip
        evidence = None
        if run % 3:
            evidence = TestEvidence(
                status="passed", regressions=["t_x"] if rng.random() < 0.2 else []
            )
        used = rng.random() < 0.5
        trace = [TraceStep(tool="shell", args="make check", ok=True, ms=1)] if used else []
        out.append(
            RunRecord(
                run_id=f"20261201T000000Z-{run:06x}", role=Role.BUILDER, repo=repo,
                work_kind=kind, target=Target(kind=TargetKind.ISSUE, number=run + 1),
                outcome=Outcome.OPENED_PR, started_at=T0, finished_at=T0,
                attempts=[Attempt(number=1, verified=rng.random() < p_verify, tests=tests)],
                tests=evidence, trace=trace, exposures=exposures,
                lesson_ids=[e.lesson_id for e in exposures if e.shown],
            )
        )  # fmt: skip
    return out


def replay(
    effects: EffectBook, start: int, stop: int, rng: random.Random, book: LessonBook
) -> tuple[LessonBook, list[list[str]]]:
    """Fold ticks `start..stop`; the book after them and every decision `[tick, id, state]`."""
    changes: list[list[str]] = []
    for tick in range(start, stop):
        records = tick_records(rng, tick, book)
        result = measure_effects(effects, book, records, T0)
        book = result.book
        changes += [[str(tick), k, v.value] for k, v in sorted(result.changed.items())]
    return book, changes


def _leaves(value: Any, path: str = "") -> dict[str, Any]:
    """Every number and string of a JSON-like value, by its path."""
    if isinstance(value, dict):
        items = list(cast(dict[str, Any], value).items())
    elif isinstance(value, list):
        items = [(str(i), v) for i, v in enumerate(cast(list[Any], value))]
    else:
        return {path: value}
    out: dict[str, Any] = {}
    for key, item in items:
        out.update(_leaves(item, f"{path}/{key}"))
    return out


def _assert_close(got: Any, want: Any) -> None:
    """Equal, floats to a relative 1e-12 (the fold may group its sums differently)."""
    a, b = _leaves(got), _leaves(want)
    assert sorted(a) == sorted(b)
    for path, expected in b.items():
        if isinstance(expected, float):
            assert math.isclose(a[path], expected, rel_tol=1e-12, abs_tol=1e-12), path
        else:
            assert a[path] == expected, path


def view(effects: EffectBook) -> dict[str, Any]:
    """What the state holds, through its public fields (independent of how it is stored)."""
    lessons: dict[str, Any] = {}
    for lesson_id, e in sorted(effects.lessons.items()):
        lessons[lesson_id] = {
            "metric": e.metric.value,
            "counts": [e.candidates, e.applicable, e.shown, e.held_out, e.complied,
                       e.compliance_checked, e.followed_when_held, e.tokens_shown],
            "strata": {m.value: {k: list(c) for k, c in sorted(s.strata.items())}
                       for m, s in sorted(e.metrics.items())},
            "tests": [[t.log_wealth, t.n, t.sum_x, t.sum_x2]
                      for t in (e.help, e.harm, e.below, e.above)],
            "state": e.state.value,
            "decided_after": e.decided_after,
            "retired": None if e.retired is None else [e.retired.kind, e.retired.reason],
        }  # fmt: skip
    ids = effects.recent_run_ids
    return {"lessons": lessons, "recent_run_ids": [len(ids), ids[0], ids[-1]] if ids else []}


def _stream_state() -> tuple[random.Random, LessonBook]:
    """The stream's generator and book as they stand after tick `MIDWAY`."""
    rng = random.Random(2026)
    book, _ = replay(EffectBook(), 0, MIDWAY, rng, book_of())
    return rng, book


@pytest.mark.parametrize("midway", ["old_file", "from_scratch"])
def test_the_fold_replays_the_pinned_stream(midway: str) -> None:
    want = json.loads((DATA / "effects_v1_final.json").read_text())
    if midway == "old_file":
        effects = EffectBook.model_validate_json((DATA / "effects_v1_midway.json").read_text())
        rng, book = _stream_state()
        _, changes = replay(effects, MIDWAY, TICKS, rng, book)
    else:
        effects = EffectBook()
        _, changes = replay(effects, 0, TICKS, random.Random(2026), book_of())
    assert changes == [c for c in want["changes"] if midway != "old_file" or int(c[0]) >= MIDWAY]
    _assert_close(view(effects), want["state"])


def test_departed_lessons_are_forgotten_oldest_first_beyond_the_bound() -> None:
    effects = EffectBook()
    for i in range(5):
        effects.touch(f"L-{i}")
    effects.touch("L-1")  # measured again: now the most recent
    assert forget_departed(effects, live={"L-4"}, keep=2) == ["L-0", "L-2"]
    assert list(effects.lessons) == ["L-3", "L-4", "L-1"]
    assert forget_departed(effects, live={"L-4"}, keep=2) == []


def test_the_state_stays_bounded_while_lessons_come_and_go() -> None:
    """A book whose lessons keep being replaced: the state holds the book's lessons and
    at most 50 departed ones, however many lessons were ever measured."""
    rng = random.Random(9)
    effects = EffectBook()
    for tick in range(60):
        book = LessonBook(
            lessons=[
                Lesson(id=f"o/r#L-{tick}-{i}", text="Do it.", created_at=T0, updated_at=T0)
                for i in range(10)
            ]
        )
        replay(effects, tick, tick + 1, rng, book)
        assert len(effects.lessons) <= 10 + 50
        assert set(effects.lessons) >= {x.id for x in book.lessons}
    assert "o/r#L-0-0" not in effects.lessons  # the oldest departed went first
    assert "o/r#L-56-0" in effects.lessons
