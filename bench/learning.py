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
- Replay (`--replay`, the arm of `AGENT_LOOP_LESSON_REPLAY=on`): the same series, with
  and without the distiller's replays at each tick (the real `plan_replays`,
  `run_replays`, `with_replays` and the decision on replay and live evidence); only the
  eval's task is simulated: a build resolves a mined instance with 40% (plus the
  lesson's effect when it is shown), reporting 30 model calls; 60 mined instances.
  Budgets (`--replay-arms`): 120 model calls per tick and at most 10 counted pairs per
  lesson (two pairs of 30-call builds per tick), 600 and 30, and 600 and 30 with a tick
  after every live run (a quiet repository: the distiller ticks more often than work
  arrives, and replays do not wait for work).
- Tick cost: one distiller measurement (load the state, fold a tick's records, decide,
  save the state) with 200 lessons, after 1,000 / 10,000 / 100,000 runs of history:
  the median time of 15 ticks per stage (wall, and the whole tick's CPU time), and the
  peak memory (tracemalloc) of one more. Building 100,000 runs of history takes
  minutes: `--histories 1000,10000` for a quicker look.

    uv run python bench/learning.py [--series 200] [--horizon 4000] [--holdout 0.2]
    uv run python bench/learning.py --replay [--series 200]     # live only vs replay + live
    uv run python bench/learning.py --skip-series [--histories 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
import tracemalloc
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from agent_loop_common.exposure import draw_lessons, holdout_of
from agent_loop_common.logs import configure_logging
from agent_loop_common.memory import ContextView
from agent_loop_common.records import (
    Attempt,
    Lesson,
    LessonBook,
    LessonExposure,
    LessonState,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
    WorkKind,
)
from agent_loop_distiller import (
    EffectBook,
    EffectPolicy,
    ReplayInstance,
    measure_effects,
    plan_replays,
    run_replays,
    with_replays,
)

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


REPLAY_BASE = 0.40
"""Chance a build resolves a mined instance without the lesson (simulated)."""
REPLAY_CALLS = 30
"""Model calls one simulated build reports."""
MINED = 60
"""Instances in the simulated instances file."""


def _mined(n: int) -> ReplayInstance:
    """A mined instance as the instances file holds it (the fields selection reads)."""
    return ReplayInstance.model_validate(
        {
            "instance_id": f"o__r-{n}",
            "repo": "o/r",
            "base_commit": f"{n:040x}",
            "created_at": (T0 - timedelta(days=n)).isoformat(),
        }
    )


class _Replays:
    """The eval's task, simulated: a build of a mined instance resolves it with
    `REPLAY_BASE`, plus the lesson's effect when the lesson is shown."""

    def __init__(
        self, effects: Mapping[str, float], rng: random.Random, budget: int, most: int
    ) -> None:
        self.effects = effects
        self.rng = rng
        self.budget = budget
        self.most = most
        self.calls = 0
        self.instances = [_mined(n) for n in range(MINED)]

    async def __call__(self, instance: Mapping[str, object], lessons: str) -> dict[str, object]:
        self.calls += REPLAY_CALLS
        shown = [] if lessons == "off" else [lessons]
        p = min(max(REPLAY_BASE + sum(self.effects.get(i, 0.0) for i in shown), 0.0), 1.0)
        return {"resolved": self.rng.random() < p, "outcome": "change", "lesson_ids": shown,
                "llm_calls": REPLAY_CALLS}  # fmt: skip

    def tick(self, book: LessonBook) -> tuple[LessonBook, list[str]]:
        """One tick's replays (the real plan, pairing, budget and bookkeeping)."""
        plan = plan_replays(book, book, self.instances, max_instances=self.most)
        done = asyncio.run(run_replays(self, plan, budget_calls=self.budget, now=T0))
        return with_replays(book, done), list(done.pairs)


def series(
    effects: Mapping[str, float],
    seed: int,
    horizon: int,
    holdout: float,
    *,
    replay: tuple[int, int] | None = None,
    tick: int = TICK,
) -> dict[str, tuple[LessonState, int]]:
    """One stream of runs; each lesson's final state and the run it was decided at
    (`replay`: with the distiller's replays at every tick, `(model calls per tick, most
    counted pairs per lesson)`)."""
    rng = random.Random(seed)
    replays = None
    if replay is not None:
        replays = _Replays(effects, random.Random(seed + 1_000_003), *replay)
    book = LessonBook(lessons=[_lesson(i) for i in effects])
    state = EffectBook()
    decided: dict[str, tuple[LessonState, int]] = {}
    kinds = [WorkKind.FEATURE, WorkKind.BUG]
    batch: list[RunRecord] = []
    for run in range(horizon):
        batch.append(_record(run, f"{seed:04x}", book, effects, rng, holdout, kinds))
        if len(batch) < tick:
            continue
        replayed: list[str] = []
        if replays is not None:
            book, replayed = replays.tick(book)
        result = measure_effects(state, book, batch, T0, EffectPolicy(), replayed=replayed)
        batch = []
        book = result.book
        for lesson_id, new in result.changed.items():
            decided.setdefault(lesson_id, (new, run + 1))
        if len(decided) == len(effects) or not book.lessons:
            break
    if replays is not None:
        _REPLAY_CALLS.append(replays.calls)
    return decided


_REPLAY_CALLS: list[int] = []
"""Model calls each replay series spent on replays (for the table)."""


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


def _arm_label(arm: tuple[int, int, int]) -> str:
    every = "a tick every run" if arm[2] == 1 else f"a tick every {arm[2]} runs"
    return f"replay + live ({arm[0]} calls/tick, {arm[1]} pairs/lesson, {every})"


def replay_table(n: int, horizon: int, holdout: float, arms: list[tuple[int, int, int]]) -> None:
    """Runs until A is proven and B, C retired: live evidence only, and replay + live
    with each `(budget of model calls per tick, most counted pairs per lesson, live runs
    per tick)`: a tick every run is a quiet repository, whose distiller ticks more often
    than work arrives (replays do not wait for work)."""
    effects = {"A": +0.30, "B": 0.0, "C": -0.15}
    wanted = {"A": LessonState.PROVEN, "B": LessonState.NO_EFFECT, "C": LessonState.HARMFUL}
    print(f"\nLive only vs replay + live: {n} series (holdout {holdout}, at most {horizon} runs "
          f"each, a tick every {TICK} runs unless said; a simulated build reports {REPLAY_CALLS} model "
          f"calls and resolves one of {MINED} mined instances {REPLAY_BASE:.0%} of the time "
          "without the lesson, the lesson's effect added when shown, as live)\n")  # fmt: skip
    print("| lesson | true effect | wanted | evidence | runs until decided: median (quartiles) "
          "| decided so | decided otherwise | undecided | replay model calls (median) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    rows: dict[str, list[str]] = {k: [] for k in effects}
    for arm in [None, *arms]:
        runs: dict[str, list[int]] = {k: [] for k in effects}
        other: dict[str, dict[str, int]] = {k: {} for k in effects}
        _REPLAY_CALLS.clear()
        for s in range(n):
            got = series(effects, s, horizon, holdout, replay=arm and arm[:2],
                         tick=arm[2] if arm else TICK)  # fmt: skip
            for k, (state, at) in got.items():
                if state is wanted[k]:
                    runs[k].append(at)
                else:
                    other[k][state.value] = other[k].get(state.value, 0) + 1
        calls = f"{statistics.median(_REPLAY_CALLS):,.0f}" if _REPLAY_CALLS else "0"
        label = "live only" if arm is None else _arm_label(arm)
        for k, eff in effects.items():
            wrong = ", ".join(f"{v} {st}" for st, v in sorted(other[k].items())) or "0"
            undecided = n - len(runs[k]) - sum(other[k].values())
            rows[k].append(
                f"| {k} | {eff:+.2f} | {wanted[k].value} | {label} | {_quartiles(runs[k])} "
                f"| {len(runs[k])} | {wrong} | {undecided} | {calls} |"
            )
    for k in effects:
        print("\n".join(rows[k]))
    print(f"\nNo lesson has an effect ({n} series x 3 lessons), replay + live:\n")
    print(
        "| replays | wrong decisions (proven or harmful) per lesson | lessons decided no_effect |"
    )
    print("|---|---|---|")
    nulls = {"N1": 0.0, "N2": 0.0, "N3": 0.0}
    for arm in arms:
        wrong = no_effect = 0
        for s in range(n):
            got = series(nulls, 10_000 + s, horizon, holdout, replay=arm[:2], tick=arm[2])
            wrong += sum(st in (LessonState.PROVEN, LessonState.HARMFUL) for st, _ in got.values())
            no_effect += sum(st is LessonState.NO_EFFECT for st, _ in got.values())
        lessons = n * len(nulls)
        print(f"| {_arm_label(arm)} | {wrong}/{lessons} = "
              f"{wrong / lessons:.1%} | {no_effect}/{lessons} |")  # fmt: skip


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


def _load(raw: str) -> EffectBook:
    """As the distiller reads `ledger/effects.json` (`read_doc`: parsed and validated in
    one pass)."""
    return EffectBook.model_validate_json(raw)


def _save(state: EffectBook) -> str:
    """As the distiller writes it (`write_doc`: compact JSON; the file it replaces is the
    one this tick read, so it is not parsed again)."""
    return state.model_dump_json()


def _tick(raw: str, book: LessonBook, fresh: list[RunRecord]) -> tuple[float, ...]:
    """One measurement tick: load the state, fold the new records and decide, save.

    Returns the three stages' wall times and the tick's CPU time, in ms (on a shared
    machine the wall time includes waiting for a core; the CPU time does not)."""
    c0, t0 = time.process_time(), time.perf_counter()
    loaded = _load(raw)
    t1 = time.perf_counter()
    measure_effects(loaded, book, fresh, T0)
    t2 = time.perf_counter()
    _save(loaded)
    t3, c3 = time.perf_counter(), time.process_time()
    return (t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000, (c3 - c0) * 1000


class _History:
    """Past runs, folded by the real `measure_effects` 500 at a time, with a book that
    stays full: every lesson that retires is replaced by a new one, as the distiller
    writes new lessons. The runs are simulated directly (each applicable lesson held out
    with its real holdout, `holdout_of`, by a seeded generator; first tries pass 40% of
    the time, no lesson has an effect) and built without validation: drawing and
    validating 100,000 records would only make the benchmark slower, not the tick."""

    def __init__(self, lessons: int, rng: random.Random) -> None:
        self.state = EffectBook()
        self.book = LessonBook(lessons=[_lesson(f"L-{i:05d}") for i in range(lessons)])
        self.written = lessons
        """Lessons ever written."""
        self.runs = 0
        self.rng = rng
        self._exposures: dict[tuple[str, bool, float], LessonExposure] = {}
        self._attempts = {
            ok: [Attempt(number=1, verified=ok, tests="passed: 3" if ok else "failed: 1")]
            for ok in (True, False)
        }

    def _exposure(self, lesson: Lesson) -> LessonExposure:
        p = holdout_of(lesson, 0.2)
        held = self.rng.random() < p
        key = (lesson.id, held, p)
        found = self._exposures.get(key)
        if found is None:
            found = self._exposures[key] = LessonExposure(
                lesson_id=lesson.id, applicable=True, held_out=held, shown=not held, holdout=p
            )
        return found

    def advance(self, runs: int) -> None:
        """Fold `runs` more past runs."""
        kinds = list(WorkKind)
        while runs > 0:
            batch: list[RunRecord] = []
            for _ in range(min(runs, 500)):
                self.runs += 1
                at = T0 + timedelta(minutes=self.runs)
                passed = self.rng.random() < BASE
                batch.append(RunRecord.model_construct(
                    run_id=f"20261201T000000Z-h{self.runs:08x}", role=Role.BUILDER,
                    repo="o/r", work_kind=kinds[self.runs % len(kinds)],
                    target=Target(kind=TargetKind.ISSUE, number=self.runs),
                    outcome=Outcome.OPENED_PR, started_at=at, finished_at=at,
                    attempts=self._attempts[passed], tests=None, trace=[],
                    exposures=[self._exposure(x) for x in self.book.lessons],
                ))  # fmt: skip
            runs -= len(batch)
            kept = measure_effects(self.state, self.book, batch, T0).book.lessons
            new = [_lesson(f"L-{self.written + i:05d}")
                   for i in range(len(self.book.lessons) - len(kept))]  # fmt: skip
            self.written += len(new)
            self.book = LessonBook(lessons=[*kept, *new])
            live = {x.id for x in self.book.lessons}
            self._exposures = {k: v for k, v in self._exposures.items() if k[0] in live}


def tick_table(lessons: int, per_tick: int, histories: list[int], repeats: int) -> None:
    """Time and memory of one measurement tick at growing history (the state is bounded).

    The states are built first; the timed ticks then take turns across the histories,
    so a change in the machine's load falls on all of them alike."""
    print(f"\nOne distiller measurement: {lessons} lessons, {per_tick} new records, "
          f"the state loaded as `read_doc` does and saved as `write_doc` does "
          f"(median of {repeats} ticks, taking turns across the histories; peak memory "
          "of one more, traced)\n")  # fmt: skip
    rng = random.Random(7)
    past = _History(lessons, rng)
    kinds = list(WorkKind)
    cases: list[tuple[int, int, str, LessonBook, list[RunRecord]]] = []
    for target in sorted(histories):
        past.advance(target - past.runs)
        book = past.book
        effects = {x.id: 0.0 for x in book.lessons}
        fresh = [_record(10_000_000 + i, "t", book, effects, rng, 0.2, kinds)
                 for i in range(per_tick)]  # fmt: skip
        cases.append((past.runs, past.written, past.state.model_dump_json(), book, fresh))
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores when timed)\n")
    stages: list[list[tuple[float, ...]]] = [[] for _ in cases]
    for _ in range(repeats):
        for i, (_, _, raw, book, fresh) in enumerate(cases):
            stages[i].append(_tick(raw, book, fresh))
    print("| runs of history | lessons ever written | state size (KiB) | load (ms) "
          "| fold and decide (ms) | save (ms) | tick (ms) | tick CPU (ms) "
          "| peak memory (MiB) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for (runs, written, raw, book, fresh), timed in zip(cases, stages, strict=True):
        load, fold, save, cpu = (statistics.median(s[i] for s in timed) for i in range(4))
        total = statistics.median(sum(s[:3]) for s in timed)
        tracemalloc.start()  # a separate tick: tracing slows every allocation down
        _tick(raw, book, fresh)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"| {runs:,} | {written:,} | {len(raw) / 1024:.0f} | {load:.1f} "
              f"| {fold:.1f} | {save:.1f} | {total:.1f} | {cpu:.1f} "
              f"| {peak / 2**20:.1f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description="Lesson effect decisions, simulated.")
    parser.add_argument("--series", type=int, default=200)
    parser.add_argument("--horizon", type=int, default=4_000)
    parser.add_argument("--holdout", type=float, default=0.2)
    parser.add_argument("--lessons", type=int, default=200)
    parser.add_argument("--per-tick", type=int, default=20)
    parser.add_argument("--skip-series", action="store_true")
    parser.add_argument(
        "--replay", action="store_true", help="only the replay arm: live only vs replay + live"
    )
    parser.add_argument(
        "--replay-arms",
        default="120:10:10,600:30:10,600:30:1",
        help="replay budgets, comma-separated CALLS_PER_TICK:PAIRS_PER_LESSON:RUNS_PER_TICK",
    )
    parser.add_argument(
        "--histories",
        default="1000,10000,100000",
        help="runs of history before the timed ticks (comma-separated)",
    )
    parser.add_argument("--repeats", type=int, default=15, help="timed ticks per history")
    args = parser.parse_args()
    if args.replay:
        configure_logging("console", "WARNING")  # not a line per simulated pair
        arms = [
            (int(a), int(b), int(c))
            for a, b, c in (part.split(":") for part in args.replay_arms.split(",") if part.strip())
        ]
        replay_table(args.series, args.horizon, args.holdout, arms)
        return
    if not args.skip_series:
        decisions_table(args.series, args.horizon, args.holdout)
        null_table(args.series, args.horizon, args.holdout)
    histories = [int(x) for x in args.histories.split(",") if x.strip()]
    if histories:
        tick_table(args.lessons, args.per_tick, histories, args.repeats)


if __name__ == "__main__":
    main()
