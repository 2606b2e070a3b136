"""What acting on the lessons' diagnoses adds to a distiller tick.

Runs the real code on a book of lessons (half name a command in backticks, half name
nothing a trace could show) after a history of runs, and times one tick's stages:

- `judge_compliance`: finding the (lesson, run) pairs that need a model judgment, the
  cache lookups, and (budget 5) building the prompts and parsing 5 replies of an
  instant in-process model (the model's own latency is not the distiller's cost);
- `measure_effects` with those judgments (the measurement the tick already did);
- `act_on_diagnoses` with no model: every touched lesson's diagnosis recorded on it,
  narrowings decided from the records.

Median of 7 ticks of 20 new records per stage, and the peak memory (tracemalloc) of one
whole tick.

    uv run python bench/diagnosis.py [--lessons 30,200] [--history 2000] [--records 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from typing import Any

from flyte.ai.agents import LLMMessage

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
    TraceStep,
    WorkKind,
)
from agent_loop_distiller import (
    EffectBook,
    ModelAsk,
    act_on_diagnoses,
    judge_compliance,
    measure_effects,
)

T0 = datetime(2026, 12, 1, tzinfo=UTC)
KINDS = (WorkKind.BUG, WorkKind.FEATURE, WorkKind.DOCS)


def _book(n: int) -> LessonBook:
    lessons = [
        Lesson(
            id=f"o/r#L-{i:08x}",
            text=f"Run `make check-{i}` first." if i % 2 else f"Think about case {i} first.",
            created_at=T0,
            updated_at=T0,
        )
        for i in range(n)
    ]
    return LessonBook(lessons=lessons)


def _record(run: int, book: LessonBook) -> RunRecord:
    exposures = [
        LessonExposure(
            lesson_id=x.id, applicable=True, shown=(run + i) % 5 != 0,
            held_out=(run + i) % 5 == 0, holdout=0.2,
        )
        for i, x in enumerate(book.lessons)
    ]  # fmt: skip
    trace = [
        TraceStep(tool="run_command", args=f"make check-{(run * 7 + s) % 40}", ok=True, ms=1)
        for s in range(10)
    ]
    line = "passed: 3 passed" if run % 3 else "failed: 1 failed"
    return RunRecord(
        run_id=f"run-{run:06d}", role=Role.BUILDER,
        target=Target(kind=TargetKind.ISSUE, number=run % 50 + 1, title="t"),
        outcome=Outcome.OPENED_PR, started_at=T0, finished_at=T0 + timedelta(seconds=run),
        attempts=[Attempt(number=1, verified=True, tests=line)], repo="o/r",
        work_kind=KINDS[run % len(KINDS)], exposures=exposures, trace=trace,
    )  # fmt: skip


async def _instant(model: str, system: str, messages: list[Any], tools: Any) -> LLMMessage:
    return LLMMessage(content="true")


async def _tick(
    effects: EffectBook, book: LessonBook, records: list[RunRecord], budget: int
) -> dict[str, float]:
    times: dict[str, float] = {}
    start = time.perf_counter()
    ask = ModelAsk(_instant, "instant") if budget else None
    judged = await judge_compliance(ask, effects, book, records, budget)
    times["judge"] = time.perf_counter() - start
    start = time.perf_counter()
    measured = measure_effects(effects, book, records, T0, judgments=judged.answers)
    times["measure"] = time.perf_counter() - start
    start = time.perf_counter()
    await act_on_diagnoses(None, effects, measured, T0)
    times["act"] = time.perf_counter() - start
    return times


def _bench(lessons: int, history: int, per_tick: int, budget: int) -> list[str]:
    book = _book(lessons)
    effects = EffectBook()
    history_records = [_record(i, book) for i in range(history)]
    for start in range(0, history, 200):
        measure_effects(effects, book, history_records[start : start + 200], T0)
    samples: list[dict[str, float]] = []
    run = history
    for _ in range(7):
        records = [_record(run + i, book) for i in range(per_tick)]
        run += per_tick
        samples.append(asyncio.run(_tick(effects, book, records, budget)))
    records = [_record(run + i, book) for i in range(per_tick)]
    tracemalloc.start()
    asyncio.run(_tick(effects, book, records, budget))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

    def ms(stage: str) -> str:
        return f"{statistics.median(s[stage] for s in samples) * 1000:.1f}"

    total = statistics.median(sum(s.values()) for s in samples) * 1000
    return [
        f"{lessons}", f"{budget}", ms("judge"), ms("measure"), ms("act"), f"{total:.1f}",
        f"{peak / 2**20:.1f}",
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description="What acting on the diagnoses adds to a tick.")
    parser.add_argument("--lessons", default="30,200", help="book sizes, comma-separated")
    parser.add_argument("--history", type=int, default=2_000, help="runs measured before")
    parser.add_argument("--records", type=int, default=20, help="new records per tick")
    args = parser.parse_args()
    headers = ["lessons", "judgment budget", "judge (ms)", "measure (ms)", "act (ms)",
               "tick total (ms)", "peak memory (MiB)"]  # fmt: skip
    print(
        f"One distiller tick of {args.records} new records after {args.history:,} runs "
        "(half the lessons name nothing: model-judged); median of 7"
    )
    print()
    print("| " + " | ".join(headers) + " |")
    print("|" + "---|" * len(headers))
    for n in (int(x) for x in args.lessons.split(",")):
        for budget in (0, 5):
            print("| " + " | ".join(_bench(n, args.history, args.records, budget)) + " |")


if __name__ == "__main__":
    main()
