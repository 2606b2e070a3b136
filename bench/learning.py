"""Do lessons prove themselves? The distiller's effect decisions over simulated runs.

Runs the real code: the builder's lesson draw (`agent_loop_common.exposure`: scope, the
hash-seeded holdout, the context without held-out lessons, the exposures recorded) and
the distiller's measurement (`agent_loop_distiller.measure_effects`: outcomes from the
records, the e-processes, decisions, retirement). Only the agent is simulated: a run's
first try passes its tests with a probability that depends on the lessons its prompt
showed.

- Effects: lesson A raises first-try test passes from 40% to 70%, B does nothing, C
  lowers them by 15 points. Reported: runs until A is `proven`, B `no_effect`, C
  `harmful` (median and quartiles over the series; "never" counts series that did not
  decide within the horizon).
- Null: three lessons with no effect at all; a `proven` or `harmful` decision is wrong.
- Tick cost: one distiller measurement (load the state, fold a tick's records, decide,
  save the state) with 200 lessons, after 1,000 / 10,000 / 100,000 runs of history.

    uv run python bench/learning.py [--series 200] [--horizon 4000] [--holdout 0.2]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import tracemalloc
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from agent_loop_common.exposure import draw_lessons
from agent_loop_common.memory import ContextView
from agent_loop_common.records import (
    Attempt,
    Lesson,
    LessonBook,
    LessonState,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
    WorkKind,
)
from agent_loop_distiller import EffectBook, EffectPolicy, measure_effects

T0 = datetime(2026, 12, 1, tzinfo=UTC)
BASE = 0.40
TICK = 10
"""Records per distiller tick in the simulated series (it decides after every tick)."""


def _lesson(lesson_id: str) -> Lesson:
    return Lesson(id=lesson_id, text=f"Advice {lesson_id}.", created_at=T0, updated_at=T0)


def _record(run: int, seed: str, book: LessonBook, effects: Mapping[str, float],
            rng: random.Random, holdout: float, kinds: list[WorkKind]) -> RunRecord:  # fmt: skip
    """One simulated builder run: the real draw, a simulated first try."""
    run_id = f"20261201T000000Z-{seed}{run:06x}"
    kind = kinds[run % len(kinds)]
    draw = draw_lessons(book.lessons, run_id=run_id, role=Role.BUILDER, kind=kind, rate=holdout)
    view = ContextView(digest="", lessons=book).without(draw.hidden_ids)
    shown = [x.id for x in view.lessons.lessons]
    p = min(max(BASE + sum(effects.get(i, 0.0) for i in shown), 0.0), 1.0)
    passed = rng.random() < p
    tests = "passed: 3 passed (base: 2 passed)" if passed else "failed: 1 failed, 2 passed"
    at = T0 + timedelta(minutes=run)
    return RunRecord(
        run_id=run_id, role=Role.BUILDER, repo="o/r", work_kind=kind,
        target=Target(kind=TargetKind.ISSUE, number=run + 1),
        outcome=Outcome.OPENED_PR if passed else Outcome.REJECTED,
        started_at=at, finished_at=at,
        attempts=[Attempt(number=1, verified=passed, tests=tests)],
        exposures=draw.record(shown), lesson_ids=shown,
    )  # fmt: skip


def series(
    effects: Mapping[str, float], seed: int, horizon: int, holdout: float
) -> dict[str, tuple[LessonState, int]]:
    """One stream of runs; each lesson's final state and the run it was decided at."""
    rng = random.Random(seed)
    book = LessonBook(lessons=[_lesson(i) for i in effects])
    state = EffectBook()
    decided: dict[str, tuple[LessonState, int]] = {}
    kinds = [WorkKind.FEATURE, WorkKind.BUG]
    batch: list[RunRecord] = []
    for run in range(horizon):
        batch.append(_record(run, f"{seed:04x}", book, effects, rng, holdout, kinds))
        if len(batch) < TICK:
            continue
        result = measure_effects(state, book, batch, T0, EffectPolicy())
        batch = []
        book = result.book
        for lesson_id, new in result.changed.items():
            decided.setdefault(lesson_id, (new, run + 1))
        if len(decided) == len(effects) or not book.lessons:
            break
    return decided


def _quartiles(values: list[int]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]}"
    q = statistics.quantiles(values, n=4)
    return f"{statistics.median(values):.0f} ({q[0]:.0f}-{q[2]:.0f})"


def decisions_table(n: int, horizon: int, holdout: float) -> None:
    effects = {"A": +0.30, "B": 0.0, "C": -0.15}
    wanted = {"A": LessonState.PROVEN, "B": LessonState.NO_EFFECT, "C": LessonState.HARMFUL}
    runs: dict[str, list[int]] = {k: [] for k in effects}
    other: dict[str, dict[str, int]] = {k: {} for k in effects}
    for s in range(n):
        for lesson_id, (state, at) in series(effects, s, horizon, holdout).items():
            if state is wanted[lesson_id]:
                runs[lesson_id].append(at)
            else:
                bucket = other[lesson_id]
                bucket[state.value] = bucket.get(state.value, 0) + 1
    print(f"\nDecisions over {n} series (holdout {holdout}, at most {horizon} runs each, "
          f"a distiller tick every {TICK} runs)\n")  # fmt: skip
    print("| lesson | true effect | wanted | runs until decided: median (quartiles) "
          "| decided so | decided otherwise | undecided |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for k, eff in effects.items():
        wrong = ", ".join(f"{v} {s}" for s, v in sorted(other[k].items())) or "0"
        undecided = n - len(runs[k]) - sum(other[k].values())
        print(f"| {k} | {eff:+.2f} | {wanted[k].value} | {_quartiles(runs[k])} "
              f"| {len(runs[k])} | {wrong} | {undecided} |")  # fmt: skip


def null_table(n: int, horizon: int, holdout: float) -> None:
    effects = {"N1": 0.0, "N2": 0.0, "N3": 0.0}
    wrong = lessons = series_wrong = no_effect = 0
    for s in range(n):
        got = series(effects, 10_000 + s, horizon, holdout)
        bad = [st for st, _ in got.values() if st in (LessonState.PROVEN, LessonState.HARMFUL)]
        wrong += len(bad)
        series_wrong += bool(bad)
        no_effect += sum(st is LessonState.NO_EFFECT for st, _ in got.values())
        lessons += len(effects)
    print(f"\nNo lesson has an effect: {n} series x {len(effects)} lessons, "
          f"at most {horizon} runs each\n")  # fmt: skip
    print("| wrong decisions (proven or harmful) per lesson | series with any wrong decision "
          "| lessons decided no_effect |")  # fmt: skip
    print("|---|---|---|")
    print(f"| {wrong}/{lessons} = {wrong / lessons:.1%} | {series_wrong}/{n} = "
          f"{series_wrong / n:.1%} | {no_effect}/{lessons} |")  # fmt: skip


def _tick(raw: str, book: LessonBook, fresh: list[RunRecord]) -> None:
    """What a distiller tick does for effects: load the state, fold, decide, save."""
    loaded = EffectBook.model_validate_json(raw)
    measure_effects(loaded, book, fresh, T0)
    loaded.model_dump_json()


def tick_table(lessons: int, per_tick: int) -> None:
    """Time and memory of one measurement tick at growing history (the state is fixed-size)."""
    print(f"\nOne distiller measurement: {lessons} lessons, {per_tick} new records, "
          "state loaded from JSON and saved back (median of 5)\n")  # fmt: skip
    print("| runs of history | state size (KiB) | tick time (ms) | peak memory (MiB) |")
    print("|---|---|---|---|")
    book = LessonBook(lessons=[_lesson(f"L-{i:03d}") for i in range(lessons)])
    effects = {x.id: 0.0 for x in book.lessons}
    rng = random.Random(7)
    kinds = list(WorkKind)
    state = EffectBook()
    history = 0
    for target in (1_000, 10_000):
        while history < target:
            batch = [_record(history + i, "h", book, effects, rng, 0.2, kinds)
                     for i in range(min(500, target - history))]  # fmt: skip
            measure_effects(state, book, batch, T0)
            history += len(batch)
        raw = state.model_dump_json()
        fresh = [_record(history + 10_000_000 + i, "t", book, effects, rng, 0.2, kinds)
                 for i in range(per_tick)]  # fmt: skip
        times: list[float] = []
        for _ in range(5):
            started = time.perf_counter()
            _tick(raw, book, fresh)
            times.append((time.perf_counter() - started) * 1000)
        tracemalloc.start()  # a separate pass: tracing slows every allocation down
        _tick(raw, book, fresh)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"| {history:,} | {len(raw) / 1024:.0f} | {statistics.median(times):.1f} "
              f"| {peak / 2**20:.1f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description="Lesson effect decisions, simulated.")
    parser.add_argument("--series", type=int, default=200)
    parser.add_argument("--horizon", type=int, default=4_000)
    parser.add_argument("--holdout", type=float, default=0.2)
    parser.add_argument("--lessons", type=int, default=200)
    parser.add_argument("--per-tick", type=int, default=20)
    parser.add_argument("--skip-series", action="store_true")
    args = parser.parse_args()
    if not args.skip_series:
        decisions_table(args.series, args.horizon, args.holdout)
        null_table(args.series, args.horizon, args.holdout)
    tick_table(args.lessons, args.per_tick)


if __name__ == "__main__":
    main()
