"""Memory I/O per run as history grows: time and bytes of one builder-style run and one
no-new-records distiller pass, at 1,000, 5,000 and 20,000 stored run records.

    uv run --frozen python bench/memory_io.py [--sizes 1000,5000,20000] [--no-baseline]

Everything measured goes through the real `flyte.ai.agents.MemoryStore` (local
storage, as in Flyte local mode). Only the *seeding* of history bypasses it: records
are written straight into the on-disk layout that `MemoryStore.save()` produces
(`<root>/agents/memory-store/v0/<org>/<project>/<domain>/<key>/` holding
`messages.json`, `runs/<id>.json` and the `meta/runs%2F<id>.json.json` sidecar). The
first bucket is written through the real API and the script checks that the direct
writes produce the same set of files, so what the measured runs download is exactly
what real writers would have left. History is spread at `--per-hour` records per hour
(20 by default: a busy loop), ending just before "now".

"baseline" is the reference design, all records under one key: a run downloads the
key and saves it back whole (what `get_or_create` + `save` do).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import pathlib
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

from agent_loop_common.memory import (
    LEDGER_PATH,
    DistillerMemory,
    IngestBatch,
    IngestLedger,
    IngestPolicy,
    MemoryLocation,
    append_store,
    bucket_of,
    open_store,
    read_context,
    run_path,
    save_store,
    write_run_record,
)
from agent_loop_common.records import (
    Attempt,
    Lesson,
    LessonBook,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
    TraceStep,
    Usage,
)

NOW = datetime.now(UTC).replace(minute=40, second=0, microsecond=0)
POLICY = IngestPolicy(retention_days=30, settle=timedelta(minutes=30))


def record(run_id: str, finished: datetime) -> RunRecord:
    """A realistic record: two tries, a 12-step trace (about 2.5 KB of JSON)."""
    return RunRecord(
        run_id=run_id,
        role=Role.BUILDER,
        target=Target(kind=TargetKind.ISSUE, number=42, title="Add a --json flag to the CLI"),
        outcome=Outcome.OPENED_PR,
        started_at=finished - timedelta(minutes=4),
        finished_at=finished,
        attempts=[
            Attempt(
                number=1,
                verified=False,
                notes="missing test for empty input",
                staged_paths=["cli.py"],
            ),
            Attempt(number=2, verified=True, staged_paths=["cli.py", "tests/test_cli.py"]),
        ],
        model="anthropic/claude-sonnet-4-5",
        usage=Usage(tokens_in=24000, tokens_out=3100, llm_calls=14, cost_usd=0.12),
        stage_seconds={"select": 0.8, "claim": 0.5, "build": 150.0, "verify": 60.0, "apply": 2.1},
        trace=[
            TraceStep(tool="read_file", args=f"src/pkg/module_{i}.py", ok=True, ms=15)
            for i in range(12)
        ],
        lesson_ids=["L-1", "L-2"],
    )


def _meta(path: str, text: str) -> str:
    return json.dumps(
        {
            "path": path,
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "updated_at": NOW.isoformat(timespec="seconds"),
            "updated_by": "builder",
            "reason": "",
            "bytes": len(text.encode()),
        },
        indent=2,
    )


def seed_direct(key_dir: pathlib.Path, items: list[tuple[str, str]]) -> None:
    """Write records into a key's directory exactly as `MemoryStore.save()` lays them out."""
    (key_dir / "runs").mkdir(parents=True, exist_ok=True)
    (key_dir / "meta").mkdir(parents=True, exist_ok=True)
    (key_dir / "messages.json").write_text("[]")
    for run_id, text in items:
        rel = run_path(run_id)
        (key_dir / rel).write_text(text)
        (key_dir / "meta" / f"{quote(rel, safe='')}.json").write_text(_meta(rel, text))


def relative_files(key_dir: pathlib.Path) -> set[str]:
    return {str(p.relative_to(key_dir)) for p in key_dir.rglob("*") if p.is_file()}


async def seed(location: MemoryLocation, n: int, per_hour: int) -> IngestLedger:
    """Spread `n` records over the past hours; return the ledger of a distiller that has
    ingested all of them in its previous pass an hour ago."""
    by_bucket: dict[str, list[tuple[str, str]]] = {}
    for i in range(n):
        finished = NOW - timedelta(minutes=1) - timedelta(hours=i // per_hour, minutes=i % per_hour)
        run_id = f"run-{i:06d}"
        by_bucket.setdefault(bucket_of(finished), []).append(
            (run_id, record(run_id, finished).model_dump_json())
        )
    first_bucket, *others = sorted(by_bucket, reverse=True)
    for run_id, _ in by_bucket[first_bucket]:  # the real API, as a layout reference
        finished = NOW - timedelta(minutes=1)
        await write_run_record(location, record(run_id, finished), now=finished)
    real = relative_files(pathlib.Path(location.remote_path(location.keys.runs(first_bucket))))
    for bucket in others:
        seed_direct(
            pathlib.Path(location.remote_path(location.keys.runs(bucket))), by_bucket[bucket]
        )
    probe = pathlib.Path(tempfile.mkdtemp()) / "probe"
    seed_direct(probe, by_bucket[first_bucket])
    assert relative_files(probe) == real, "direct seeding must match MemoryStore's own layout"
    shutil.rmtree(probe.parent)

    context = append_store(location, location.keys.context)
    lessons = [
        Lesson(id=f"L-{i}", text=f"lesson {i} " * 20, created_at=NOW, updated_at=NOW)
        for i in range(20)
    ]
    await context.write_text.aio(
        "context/lessons.json", LessonBook(lessons=lessons).model_dump_json()
    )
    await context.write_text.aio("context/digest.md", "# Digest\n" + "- keep diffs small\n" * 100)
    await save_store(location, context)

    previous_pass = NOW - timedelta(hours=1)
    watermark = bucket_of(previous_pass - POLICY.settle)
    ledger = IngestLedger(
        watermark=watermark,
        seen={b: [i for i, _ in items] for b, items in by_bucket.items() if b >= watermark},
        ingested_total=n,
        updated_at=previous_pass,
    )
    await restore_ledger(location, ledger)
    return ledger


async def restore_ledger(location: MemoryLocation, ledger: IngestLedger) -> None:
    store = append_store(location, location.keys.ledger)
    await store.write_text.aio(LEDGER_PATH, ledger.model_dump_json(indent=2))
    await save_store(location, store)


async def builder_run(location: MemoryLocation, i: int) -> None:
    await read_context(location)
    await write_run_record(location, record(f"bench-{i}", NOW), now=NOW)


async def distiller_pass(location: MemoryLocation) -> IngestBatch:
    memory = await DistillerMemory.open(location, POLICY)
    batch = await memory.collect(NOW)
    await memory.commit(batch)
    return batch


async def baseline_seed(location: MemoryLocation, n: int) -> None:
    items = [(f"run-{i:06d}", record(f"run-{i:06d}", NOW).model_dump_json()) for i in range(n)]
    seed_direct(pathlib.Path(location.remote_path(f"{location.prefix}-allruns")), items)


async def baseline_run(location: MemoryLocation, i: int) -> None:
    store = await open_store(location, f"{location.prefix}-allruns")
    await store.write_text.aio(run_path(f"bench-{i}"), record(f"bench-{i}", NOW).model_dump_json())
    await save_store(location, store)


async def measure(
    location: MemoryLocation, reps: int, step: Callable[[int], Awaitable[object]]
) -> tuple[float, int, int]:
    times: list[float] = []
    moved_in = moved_out = 0
    for i in range(reps):
        location.meter.reset()
        start = time.perf_counter()
        await step(i)
        times.append(time.perf_counter() - start)
        moved_in, moved_out = location.meter.bytes_in, location.meter.bytes_out
    return statistics.median(times), moved_in, moved_out


def kib(n: int) -> str:
    return f"{n / 1024:,.1f}"


def sizes(text: str) -> list[int]:
    return [int(s) for s in text.split(",")]


async def bench_size(n: int, per_hour: int, reps: int, baseline: bool) -> tuple[str, ...]:
    """Seed `n` records in a fresh root, then measure both runs (and the baseline)."""
    root = tempfile.mkdtemp(prefix="bench_mem_")
    try:
        location = MemoryLocation(
            org="bench", project="agent-loop", domain="development", root=root
        )
        t0 = time.perf_counter()
        ledger = await seed(location, n, per_hour)
        seeded = time.perf_counter() - t0
        b_time, b_in, b_out = await measure(location, reps, lambda i: builder_run(location, i))

        async def one_pass(_: int) -> object:
            await restore_ledger(location, ledger)  # the same starting point every repetition
            location.meter.reset()
            return await distiller_pass(location)

        d_time, d_in, d_out = await measure(location, reps, one_pass)
        row = [
            f"{n:,}",
            f"{b_time * 1000:,.0f} ms",
            kib(b_in),
            kib(b_out),
            f"{d_time * 1000:,.0f} ms",
            kib(d_in),
            kib(d_out),
        ]
        if baseline:
            await baseline_seed(location, n)
            base_time, base_in, base_out = await measure(
                location, 1, lambda i: baseline_run(location, i)
            )
            row += [f"{base_time:,.2f} s", kib(base_in + base_out)]
        print(f"  seeded {n:,} records in {seeded:.1f} s", flush=True)
        return tuple(row)
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,5000,20000")
    parser.add_argument("--per-hour", type=int, default=20)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-baseline", action="store_true")
    args = parser.parse_args()

    rows = [
        await bench_size(n, args.per_hour, args.reps, not args.no_baseline)
        for n in sizes(args.sizes)
    ]
    header = ["records", "builder run", "KiB in", "KiB out", "distiller pass", "KiB in", "KiB out"]
    if not args.no_baseline:
        header += ["baseline run", "KiB moved"]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print()
    print(" | ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    print("-|-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))
    print(
        f"\n{args.per_hour} records/hour; builder run = read context + write record; "
        f"distiller pass = open ledger + collect + commit with no new records; median of {args.reps}. "
        f"cpus={os.cpu_count()}"
    )


if __name__ == "__main__":
    asyncio.run(main())
