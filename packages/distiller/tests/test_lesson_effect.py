"""Lesson effects: outcomes from records, e-process decisions, estimates, diagnosis."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from agent_loop_common.records import (
    Attempt,
    Citation,
    Lesson,
    LessonBook,
    LessonExposure,
    LessonState,
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
from agent_loop_distiller import (
    EffectBook,
    EffectPolicy,
    Exposure,
    LessonEffect,
    MetricStats,
    cues_of,
    decide,
    diagnose,
    estimate_effect,
    followed,
    measure_effects,
    observe,
    outcomes_of,
)

T0 = datetime(2026, 12, 1, tzinfo=UTC)
FT = OutcomeMetric.FIRST_TRY_TESTS


def _record(run_id: str, lines: list[str], **kw: object) -> RunRecord:
    attempts = [
        Attempt(number=i + 1, verified=line.startswith("passed") and i == len(lines) - 1,
                tests=line)
        for i, line in enumerate(lines)
    ]  # fmt: skip
    return RunRecord.model_validate(
        {"run_id": run_id, "role": Role.BUILDER, "target": Target(kind=TargetKind.ISSUE, number=1),
         "outcome": Outcome.OPENED_PR, "started_at": T0, "finished_at": T0, "attempts": attempts,
         "repo": "o/r", "work_kind": WorkKind.BUG, **kw}
    )  # fmt: skip


# ------------------------------------------------------------------ outcomes


def test_outcomes_of_a_record() -> None:
    record = _record(
        "r1",
        ["failed: 1 failed (base: 2 passed)", "passed: 3 passed", "passed: 3 passed"],
        tests=TestEvidence(status="passed", regressions=[]),
    )
    got = outcomes_of(record)
    assert got.first_try_tests is False
    assert got.first_try_verified is False
    assert got.tries_used == 3
    assert got.test_rejections == 1
    assert got.verifier_rejections == 1  # try 2: tests passed, the verifier said no
    assert got.no_regression is True


@pytest.mark.parametrize("line", ["not_run: no test command", "no_evidence: nothing ran", ""])
def test_no_evidence_is_never_a_pass(line: str) -> None:
    got = outcomes_of(_record("r", [line]))
    assert got.first_try_tests is None
    assert got.binary()[FT] is None
    assert got.no_regression is None


# ------------------------------------------------------------------ e-processes


def _stream(
    effect_size: float, runs: int, seed: int, holdout: float = 0.2
) -> tuple[LessonEffect, list[LessonState]]:
    rng = random.Random(seed)
    effect = LessonEffect(lesson_id="L")
    policy = EffectPolicy()
    states: list[LessonState] = []
    for i in range(runs):
        shown = rng.random() >= holdout
        p = 0.4 + (effect_size if shown else 0.0)
        y = rng.random() < p
        stratum = "o/r|bug" if i % 2 else "o/r|feature"
        observe(effect, Exposure("L", stratum, shown, holdout, {FT: y}), policy)
        effect.state = decide(effect, policy)
        states.append(effect.state)
    return effect, states


def test_a_helpful_lesson_is_proven() -> None:
    effect, _ = _stream(+0.30, 1_500, seed=1)
    assert effect.state is LessonState.PROVEN
    assert effect.help.e_value >= EffectPolicy().threshold


def test_a_harmful_lesson_is_found_harmful() -> None:
    effect, _ = _stream(-0.25, 3_000, seed=2)
    assert effect.state is LessonState.HARMFUL


def test_a_useless_lesson_ends_no_effect_not_proven() -> None:
    effect, states = _stream(0.0, 6_000, seed=3)
    assert LessonState.PROVEN not in states
    assert LessonState.HARMFUL not in states
    assert effect.state is LessonState.NO_EFFECT


def test_null_lessons_are_rarely_called_proven_or_harmful() -> None:
    wrong = 0
    for seed in range(40):
        _, states = _stream(0.0, 800, seed=100 + seed)
        wrong += LessonState.PROVEN in states or LessonState.HARMFUL in states
    assert wrong <= 4  # alpha = 0.05 bounds the rate; 40 streams, a generous margin


def test_retired_states_stay() -> None:
    effect = LessonEffect(lesson_id="L", state=LessonState.HARMFUL)
    effect.help.log_wealth = 50.0
    assert decide(effect, EffectPolicy()) is LessonState.HARMFUL


def test_no_holdout_means_no_bet() -> None:
    effect = LessonEffect(lesson_id="L")
    for _ in range(50):
        observe(effect, Exposure("L", "s", True, 0.0, {FT: True}), EffectPolicy())
    assert effect.help.n == 0
    assert effect.shown == 50


def test_wealth_never_hits_zero_on_the_worst_run() -> None:
    effect = LessonEffect(lesson_id="L")
    policy = EffectPolicy()
    for _ in range(30):  # teach the bet to stake on help
        observe(effect, Exposure("L", "s", True, 0.2, {FT: True}), policy)
    for _ in range(30):  # then the worst case for it: held out and passing
        observe(effect, Exposure("L", "s", False, 0.2, {FT: True}), policy)
    assert effect.help.log_wealth > -1e6  # finite: every factor stayed positive


# ------------------------------------------------------------------ estimate


def test_estimate_pools_strata_and_has_an_interval() -> None:
    stats = MetricStats(strata={"a|bug": [100, 70, 100, 40], "a|docs": [50, 45, 50, 40]})
    est = estimate_effect(stats, FT)
    assert est is not None
    # weights 2/3 and 1/3 of (0.70 - 0.40) and (0.90 - 0.80), Beta posterior means
    assert est.effect == pytest.approx(2 / 3 * 0.294 + 1 / 3 * 0.096, abs=0.01)
    assert est.low < est.effect < est.high
    assert (est.shown, est.held_out) == (150, 150)
    assert estimate_effect(MetricStats(strata={"a|bug": [10, 5, 0, 0]}), FT) is None


# ------------------------------------------------------------------ diagnosis


def _lesson(lesson_id: str, text: str, **kw: object) -> Lesson:
    return Lesson.model_validate(
        {"id": lesson_id, "text": text, "created_at": T0, "updated_at": T0, **kw}
    )


def test_cues_and_compliance_from_the_trace() -> None:
    lesson = _lesson(
        "L",
        "Run `make lint` before submitting; see `docs/style.md`.",
        citations=[Citation(kind="symbol", value="parse_config")],
    )
    cues = cues_of(lesson)
    assert cues == ("make lint", "docs/style.md", "parse_config")
    trace = [TraceStep(tool="read_file", args="path=docs/style.md", ok=True, ms=1)]
    assert followed(cues, trace)
    assert not followed(cues, [TraceStep(tool="read_file", args="README.md", ok=True, ms=1)])
    assert not followed((), trace)


def test_followed_but_useless_retires_with_its_diagnosis() -> None:
    effect = LessonEffect(
        lesson_id="L", state=LessonState.NO_EFFECT, candidates=400, applicable=400, shown=320,
        held_out=80, compliance_checked=320, complied=300, followed_when_held=10,
        tokens_shown=320 * 20,
        metrics={FT: MetricStats(strata={"o/r|bug": [320, 130, 80, 32]})},
    )  # fmt: skip
    d = diagnose(effect)
    assert d.action == "retire"
    assert d.reason.startswith("followed but no effect")
    assert "applies to 100% of runs" in d.reason
    assert d.tokens_per_run == 20


def test_rarely_relevant_is_flagged_for_narrowing() -> None:
    effect = LessonEffect(
        lesson_id="L", candidates=100, applicable=100, shown=80, held_out=20,
        compliance_checked=80, complied=2, followed_when_held=0,
    )  # fmt: skip
    assert diagnose(effect).action == "narrow"
    ignored = replace(effect, complied=20, followed_when_held=10)
    assert diagnose(ignored).action == "reword"


# ------------------------------------------------------------------ a tick's measurement


def _exposed(run_id: str, passed: bool, shown: bool, **kw: object) -> RunRecord:
    line = "passed: 2 passed" if passed else "failed: 1 failed"
    exposure = LessonExposure(
        lesson_id="L-a", applicable=True, held_out=not shown, shown=shown, holdout=0.2
    )
    other = LessonExposure(lesson_id="L-b", applicable=False)
    return _record(run_id, [line], exposures=[exposure, other], **kw)


def test_measure_counts_each_record_once_and_retires_a_harmful_lesson() -> None:
    book = LessonBook(lessons=[_lesson("L-a", "Use `tox`."), _lesson("L-b", "b")])
    effects = EffectBook()
    rng = random.Random(5)
    records = []
    for i in range(3_000):
        shown = rng.random() >= 0.2
        passed = rng.random() < (0.2 if shown else 0.6)
        trace = [TraceStep(tool="run_tests", args="tox", ok=True, ms=1)] if shown else []
        records.append(_exposed(f"r{i}", passed, shown, trace=trace))
    result = measure_effects(effects, book, records[:10], T0)
    again = measure_effects(effects, result.book, records[:10], T0)
    assert again.counted == 0
    assert effects.lessons["L-a"].applicable == 10
    assert effects.lessons["L-b"].candidates == 10
    assert effects.lessons["L-b"].applicable == 0
    book = result.book
    retired_at = None
    for start in range(10, 3_000, 10):
        step = measure_effects(effects, book, records[start : start + 10], T0)
        book = step.book
        if step.retired:
            retired_at = start
            break
    assert retired_at is not None
    assert [x.id for x in book.lessons] == ["L-b"]
    gone = effects.lessons["L-a"].retired
    assert gone is not None
    assert gone.lesson.state is LessonState.HARMFUL
    assert gone.reason.startswith("harmful: first_try_tests -")
    assert effects.lessons["L-a"].complied == effects.lessons["L-a"].shown


def test_a_pinned_lesson_is_not_retired() -> None:
    book = LessonBook(lessons=[_lesson("L-a", "x", pinned=True)])
    effects = EffectBook()
    effects.effect("L-a").harm.log_wealth = 10.0
    result = measure_effects(effects, book, [_exposed("r1", False, True)], T0)
    assert [x.id for x in result.book.lessons] == ["L-a"]
    assert result.book.lessons[0].state is LessonState.HARMFUL
    assert result.changed == {"L-a": LessonState.HARMFUL}


@pytest.mark.parametrize("p", [0.05, 0.2, 0.5])
@pytest.mark.parametrize("seed", [1, 2])
def test_no_single_run_can_cost_a_test_more_than_its_cap(p: float, seed: int) -> None:
    """Each bet is capped by the worst `z` the run could have (`max_bet` of the largest
    safe stake): whatever happens, one run takes at most half of any test's wealth."""
    rng = random.Random(seed)
    policy = EffectPolicy()
    effect = LessonEffect(lesson_id="L")
    floor = math.log1p(-policy.max_bet) - 1e-12
    for i in range(400):
        # long one-sided streaks push the stakes to their caps, then the worst case
        shown = (i // 50) % 2 == 0 if rng.random() < 0.9 else rng.random() < 0.5
        y = (i // 25) % 2 == 0
        before = [t.log_wealth for t in (effect.help, effect.harm, effect.below, effect.above)]
        observe(effect, Exposure("L", f"s{i % 3}", shown, p, {FT: y}), policy)
        after = [t.log_wealth for t in (effect.help, effect.harm, effect.below, effect.above)]
        assert all(b - a >= floor for a, b in zip(before, after, strict=True))
