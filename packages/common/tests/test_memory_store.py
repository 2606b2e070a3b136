"""Memory helpers through the real MemoryStore, in Flyte local mode and plain async code.

Agent-side calls run inside local-mode Flyte tasks (as in production); the distiller
side runs as plain async code with an explicit root, which the helpers also support.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
from datetime import UTC, datetime, timedelta
from typing import Any

import flyte
import pytest
from flyte.ai.agents import AccessDenied, MemoryStore
from pydantic import BaseModel, Field

from agent_loop_common.memory import (
    DIGEST_PATH,
    EFFECTS_PATH,
    LEDGER_PATH,
    LESSONS_PATH,
    DistillerMemory,
    IngestLedger,
    MemoryLocation,
    NewerSchemaError,
    append_store,
    bucket_of,
    count_idle_run,
    open_context_read_only,
    open_store,
    read_context,
    read_rollups,
    run_path,
    write_run_record,
)
from agent_loop_common.records import (
    SCHEMA_VERSION,
    Lesson,
    LessonBook,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
)

pytestmark = pytest.mark.slow

ORG, PROJECT, DOMAIN = "testorg", "agent-loop", "development"
NOW = datetime(2026, 3, 10, 14, 5, tzinfo=UTC)
NEXT_MAJOR = str(int(SCHEMA_VERSION.partition(".")[0]) + 1) + ".0"
"""A major this code does not know yet: one past the current schema."""
env = flyte.TaskEnvironment(name="test-memory")


def make_record(
    run_id: str, role: Role = Role.BUILDER, lesson_ids: list[str] | None = None
) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        role=role,
        target=Target(kind=TargetKind.ISSUE if role is Role.BUILDER else TargetKind.PR, number=5),
        outcome=Outcome.OPENED_PR if role is Role.BUILDER else Outcome.REVIEWED_CLEAN,
        started_at=NOW - timedelta(minutes=3),
        finished_at=NOW,
        lesson_ids=lesson_ids or [],
    )


@env.task
async def agent_run(root: str, run_id: str, role: str, now_iso: str) -> list[str]:
    """What a builder/reviewer run does with memory: read the context, write its record."""
    location = MemoryLocation(org=ORG, project=PROJECT, domain=DOMAIN, root=root)
    context = await read_context(location)
    record = make_record(run_id, Role(role), [x.id for x in context.lessons.lessons])
    ref = await write_run_record(location, record, now=datetime.fromisoformat(now_iso))
    return [ref.key, context.digest]


@env.task
async def agent_run_in_context(run_id: str, now_iso: str) -> list[str]:
    """Same, with root=None: the SDK resolves the root from the running task."""
    location = MemoryLocation(org=ORG, project=PROJECT, domain=DOMAIN)
    ref = await write_run_record(location, make_record(run_id), now=datetime.fromisoformat(now_iso))
    sdk_path = MemoryStore.remote_path_for_key(key=ref.key, org=ORG, project=PROJECT, domain=DOMAIN)
    sdk_store = await MemoryStore.get_or_create.aio(
        key=ref.key, org=ORG, project=PROJECT, domain=DOMAIN
    )
    return [location.remote_path(ref.key), sdk_path, *sdk_store.list_paths("runs")]


@env.task
async def stale_full_saver(run_id: str, bucket_key: str, delay: float) -> int:
    """A writer that downloads the whole bucket, waits while others write, then saves it all."""
    store = await MemoryStore.get_or_create.aio(
        key=bucket_key, org=ORG, project=PROJECT, domain=DOMAIN
    )
    await asyncio.sleep(delay)
    await store.write_text.aio(run_path(run_id), make_record(run_id).model_dump_json())
    await store.save.aio()
    return len(store.list_paths("runs"))


@env.task
async def stale_saver_around_writers(root: str, now_iso: str) -> list[int]:
    """Download the bucket, let 8 runs append to it, then save the stale whole copy."""
    location = MemoryLocation(org=ORG, project=PROJECT, domain=DOMAIN, root=root)
    now = datetime.fromisoformat(now_iso)
    key = location.keys.runs(bucket_of(now))
    stale = await MemoryStore.get_or_create.aio(key=key, org=ORG, project=PROJECT, domain=DOMAIN)
    before = len(stale.list_paths("runs"))
    await asyncio.gather(
        *(write_run_record(location, make_record(f"mid-{i}"), now=now) for i in range(8))
    )
    await stale.write_text.aio(run_path("stale"), make_record("stale").model_dump_json())
    await stale.save.aio()
    return [before, len(stale.list_paths("runs"))]


@env.task
async def agent_tries_to_write_context(root: str) -> str:
    location = MemoryLocation(org=ORG, project=PROJECT, domain=DOMAIN, root=root)
    store = await open_context_read_only(location)
    try:
        await store.write_text.aio(DIGEST_PATH, "agents must not write this")
    except AccessDenied as exc:
        return f"denied: {exc}"
    return "written"


@pytest.fixture
def root(tmp_path: pathlib.Path) -> str:
    flyte.init(org=ORG, project=PROJECT, domain=DOMAIN)
    return str(tmp_path / "memory")


@pytest.fixture
def location(root: str) -> MemoryLocation:
    return MemoryLocation(org=ORG, project=PROJECT, domain=DOMAIN, root=root)


async def run_local(root: str, task: Any, *args: Any) -> Any:
    run = await flyte.with_runcontext(mode="local", raw_data_path=root).run.aio(task, *args)
    return run.outputs()[0]


def exists(path: str) -> bool:
    return pathlib.Path(path).exists()


def put_obstacle(path: str) -> None:
    """A plain file where a key's directory must go: saving that key fails."""
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(path).write_text("obstacle")


def lesson_book() -> LessonBook:
    return LessonBook(
        lessons=[Lesson(id="L-1", text="run the tests", created_at=NOW, updated_at=NOW)]
    )


async def test_helpers_address_the_same_store_as_the_sdk_in_a_task(
    root: str, location: MemoryLocation
) -> None:
    ours, sdks, *paths = await run_local(root, agent_run_in_context, "ctx-1", NOW.isoformat())
    assert ours == sdks
    assert ours == location.remote_path(location.keys.runs(bucket_of(NOW)))
    assert paths == ["runs/ctx-1.json"]
    batch = await (await DistillerMemory.open(location)).collect(NOW)
    assert [r.run_id for r in batch.records] == ["ctx-1"]


async def test_agent_run_reads_digest_and_writes_a_record(
    root: str, location: MemoryLocation
) -> None:
    distiller = await DistillerMemory.open(location)
    first = await distiller.collect(NOW - timedelta(hours=1))
    await distiller.commit(first, lessons=lesson_book(), digest="# Digest\nrun the tests\n")

    key, digest = await run_local(root, agent_run, root, "b-1", "builder", NOW.isoformat())
    assert digest == "# Digest\nrun the tests\n"
    assert key == location.keys.runs(bucket_of(NOW))
    assert (await run_local(root, agent_tries_to_write_context, root)).startswith("denied")

    batch = await distiller.collect(NOW + timedelta(minutes=1))
    assert [(r.run_id, r.lesson_ids) for r in batch.records] == [("b-1", ["L-1"])]
    context = await read_context(location)
    assert context.digest.startswith("# Digest")
    assert [x.id for x in context.lessons.lessons] == ["L-1"]


async def test_concurrent_writers_never_lose_a_record(root: str, location: MemoryLocation) -> None:
    bucket_key = location.keys.runs(bucket_of(NOW))
    await run_local(root, agent_run, root, "seed", "builder", NOW.isoformat())
    writers = [
        run_local(
            root,
            agent_run,
            root,
            f"w-{i}",
            ("builder", "reviewer", "distiller")[i % 3],
            NOW.isoformat(),
        )
        for i in range(12)
    ]
    stale = run_local(root, stale_full_saver, "stale", bucket_key, 0.5)
    results = await asyncio.gather(stale, *writers)
    assert results[0] >= 2  # the stale saver's own copy: seed + its record, maybe a few more

    distiller = await DistillerMemory.open(location)
    batch = await distiller.collect(NOW + timedelta(minutes=5))
    expected = {"seed", "stale", *(f"w-{i}" for i in range(12))}
    assert {r.run_id for r in batch.records} == expected
    assert len(batch.records) == len(expected)
    assert {r.role for r in batch.records} == set(Role)


async def test_a_stale_whole_bucket_saver_erases_nothing(
    root: str, location: MemoryLocation
) -> None:
    await write_run_record(location, make_record("first"), now=NOW)
    before, stale_view = await run_local(root, stale_saver_around_writers, root, NOW.isoformat())
    assert (before, stale_view) == (1, 2)  # its copy never saw the 8 records written meanwhile
    batch = await (await DistillerMemory.open(location)).collect(NOW + timedelta(minutes=5))
    assert {r.run_id for r in batch.records} == {"first", "stale", *(f"mid-{i}" for i in range(8))}


async def test_newer_minor_is_read_and_unknown_major_is_counted_not_dropped(
    location: MemoryLocation,
) -> None:
    store = append_store(location, location.keys.runs(bucket_of(NOW)))
    newer = {
        **make_record("new-minor").model_dump(mode="json"),
        "schema_version": "1.9",
        "mood": "curious",
    }
    major2 = {
        **make_record("new-major").model_dump(mode="json"),
        "schema_version": NEXT_MAJOR,
        "role": "triager",
    }
    await store.write_text.aio(run_path("new-minor"), json.dumps(newer))
    await store.write_text.aio(run_path("new-major"), json.dumps(major2))
    await store.save.aio()

    distiller = await DistillerMemory.open(location)
    batch = await distiller.collect(NOW + timedelta(hours=2))
    assert [(r.run_id, r.schema_version) for r in batch.records] == [("new-minor", "1.9")]
    assert [(d.run_id, d.reason, d.schema_version) for d in batch.deferred] == [
        ("new-major", "unknown_major", NEXT_MAJOR)
    ]
    await distiller.commit(batch)

    again = await DistillerMemory.open(location)
    assert again.ledger.unknown_major == 1
    assert again.ledger.ingested_total == 1
    later = await again.collect(NOW + timedelta(hours=3))
    assert not later.has_news
    assert later.ledger.unknown_major == 1  # still counted, not re-deferred, not dropped
    kept = await open_store(location, location.keys.runs(bucket_of(NOW)))
    assert "runs/new-major.json" in kept.list_paths("runs")


async def test_deferred_record_is_ingested_once_its_major_is_known(
    location: MemoryLocation,
) -> None:
    old_bucket = bucket_of(NOW - timedelta(days=3))
    await write_run_record(location, make_record("from-the-future"), now=NOW - timedelta(days=3))
    ledger = IngestLedger(
        watermark=bucket_of(NOW),
        deferred=[
            {  # as left by an older distiller that only knew major 0
                "bucket": old_bucket,
                "run_id": "from-the-future",
                "reason": "unknown_major",
                "schema_version": "1.0",
                "seen_at": NOW - timedelta(days=3),
            }
        ],  # type: ignore[list-item]
    )
    ledger_store = append_store(location, location.keys.ledger)
    await ledger_store.write_text.aio(LEDGER_PATH, ledger.model_dump_json())
    await ledger_store.save.aio()

    distiller = await DistillerMemory.open(location)
    batch = await distiller.collect(NOW)
    assert [r.run_id for r in batch.records] == ["from-the-future"]
    assert batch.ledger.deferred == []


async def test_idle_runs_leave_a_counter_not_a_record(location: MemoryLocation) -> None:
    await count_idle_run(location, Role.BUILDER, now=NOW)
    second = await count_idle_run(location, Role.BUILDER, now=NOW + timedelta(minutes=5))
    assert second.count == 2
    assert not exists(location.remote_path(location.keys.runs(bucket_of(NOW))))

    distiller = await DistillerMemory.open(location)
    batch = await distiller.collect(NOW + timedelta(minutes=10))
    assert batch.records == ()
    await distiller.commit(batch)
    [rollup] = await read_rollups(location, NOW.date(), NOW.date())
    assert rollup.idle_runs == {Role.BUILDER: 2}


async def test_ledger_advances_only_after_lessons_and_rollups_are_saved(
    location: MemoryLocation,
) -> None:
    await write_run_record(location, make_record("r-1"), now=NOW)
    await write_run_record(location, make_record("r-2", Role.REVIEWER), now=NOW)
    distiller = await DistillerMemory.open(location)
    batch = await distiller.collect(NOW + timedelta(hours=2))
    assert len(batch.records) == 2

    ledger_path = location.remote_path(location.keys.ledger)
    put_obstacle(ledger_path)
    with pytest.raises(Exception):  # noqa: B017 - whatever the storage layer raises
        await distiller.commit(batch, lessons=lesson_book(), digest="learned")
    pathlib.Path(ledger_path).unlink()  # noqa: ASYNC240 - test setup, instant

    assert (await read_context(location)).digest == "learned"  # lessons were saved first
    retry = await DistillerMemory.open(location)
    assert retry.ledger == IngestLedger()  # ledger did not advance
    again = await retry.collect(NOW + timedelta(hours=2))
    assert {r.run_id for r in again.records} == {"r-1", "r-2"}
    await retry.commit(again)
    [rollup] = await read_rollups(location, NOW.date(), NOW.date())
    assert rollup.tally.runs == 2  # counted once although folded twice
    assert (await DistillerMemory.open(location)).ledger.ingested_total == 2


async def test_half_written_record_is_retried_while_open_and_deferred_once_closed(
    location: MemoryLocation,
) -> None:
    store = append_store(location, location.keys.runs(bucket_of(NOW)))
    await store.write_text.aio(run_path("torn"), '{"schema_version": "1.0", "run_')
    await store.save.aio()

    distiller = await DistillerMemory.open(location)
    open_pass = await distiller.collect(NOW + timedelta(minutes=1))
    assert not open_pass.has_news
    await distiller.commit(open_pass)
    closed_pass = await distiller.collect(NOW + timedelta(hours=2))
    assert [(d.run_id, d.reason) for d in closed_pass.deferred] == [("torn", "invalid")]
    await distiller.commit(closed_pass)
    assert (await DistillerMemory.open(location)).ledger.invalid == 1


async def test_no_new_records_pass_reads_only_recent_buckets(location: MemoryLocation) -> None:
    for day in range(5):
        moment = NOW - timedelta(days=day)
        await write_run_record(location, make_record(f"d{day}"), now=moment)
    distiller = await DistillerMemory.open(location)
    first = await distiller.collect(NOW + timedelta(hours=1))
    assert len(first.records) == 5
    await distiller.commit(first)

    location.meter.reset()
    quiet = await distiller.collect(NOW + timedelta(hours=2))
    assert not quiet.has_news
    # From the watermark (14h, not settled at 15:05) to now (16h); only 14h exists.
    assert quiet.buckets_scanned == 3
    assert location.meter.downloads == 1
    await distiller.commit(quiet)
    assert location.meter.uploads == 1  # only the ledger (its watermark moved)


async def test_commit_refuses_a_stale_batch(location: MemoryLocation) -> None:
    distiller = await DistillerMemory.open(location)
    batch = await distiller.collect(NOW)
    await distiller.commit(batch)
    with pytest.raises(Exception, match="current ledger"):
        await distiller.commit(batch)


class _State(BaseModel):
    schema_version: str = "1.0"
    counts: dict[str, list[int]] = Field(default_factory=dict[str, list[int]])


async def test_effects_are_saved_compact_and_an_indented_file_still_reads(
    location: MemoryLocation,
) -> None:
    store = append_store(location, location.keys.ledger)
    old = _State(counts={"L-1": [3, 2, 1, 0]})
    await store.write_text.aio(EFFECTS_PATH, old.model_dump_json(indent=2))  # as 1.0 wrote it
    await store.save.aio()
    distiller = await DistillerMemory.open(location)
    assert await distiller.read_effects(_State) == old
    await distiller.commit(await distiller.collect(NOW), effects=_State(counts={"L-1": [4]}))
    raw = await (await open_store(location, location.keys.ledger)).read_text.aio(EFFECTS_PATH)
    assert raw == '{"schema_version":"1.0","counts":{"L-1":[4]}}'
    again = await DistillerMemory.open(location)
    assert await again.read_effects(_State) == _State(counts={"L-1": [4]})


@pytest.mark.parametrize("change", ["none", "corrupt_before_read", "corrupt_after_read"])
async def test_effects_replace_a_good_file_unchecked_and_keep_a_corrupt_one_aside(
    location: MemoryLocation, change: str
) -> None:
    """The file this pass read as good is replaced without parsing it again; any other
    content (corrupt when read, or changed since) is checked and set aside if bad."""
    store = append_store(location, location.keys.ledger)
    text = "{not json" if change == "corrupt_before_read" else _State().model_dump_json()
    await store.write_text.aio(EFFECTS_PATH, text)
    await store.save.aio()
    distiller = await DistillerMemory.open(location)
    await distiller.read_effects(_State)
    if change == "corrupt_after_read":
        await distiller._ledger_store.write_text.aio(EFFECTS_PATH, "{torn")  # pyright: ignore[reportPrivateUsage]
    await distiller.commit(await distiller.collect(NOW), effects=_State(counts={"L-1": [1]}))
    ledger = await open_store(location, location.keys.ledger)
    aside = list(ledger.list_paths("quarantine"))
    assert len(aside) == (0 if change == "none" else 1)


async def test_newer_major_ledger_is_not_overwritten(location: MemoryLocation) -> None:
    store = append_store(location, location.keys.ledger)
    await store.write_text.aio(LEDGER_PATH, json.dumps({"schema_version": "2.0", "cursor": 7}))
    await store.save.aio()
    with pytest.raises(NewerSchemaError):
        await DistillerMemory.open(location)


async def test_agent_context_handle_is_read_only_and_lessons_path(location: MemoryLocation) -> None:
    store = await open_context_read_only(location)
    with pytest.raises(AccessDenied):
        await store.write_text.aio(LESSONS_PATH, "{}")
