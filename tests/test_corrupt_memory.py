"""A corrupt memory document is set aside, never fatal (issue 15, point 6).

One bad `lessons.json` or one bad per-PR review mark used to turn every reviewer or
distiller pass into an error, forever, and `agent-loop status` into a traceback. Now the
readers carry on as if the document were absent and name it; its owner keeps the bad
bytes under `quarantine/` and writes a good one.
"""

from __future__ import annotations

import pathlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_loop import cli
from agent_loop_common.memory import (
    LESSONS_PATH,
    QUARANTINE_PREFIX,
    REVIEWED_PATH,
    MemoryLocation,
    write_run_record,
)
from agent_loop_common.records import (
    Attempt,
    Links,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
)
from agent_loop_common.runtime import local_memory, use_model
from agent_loop_common.settings import Settings, load_settings
from agent_loop_distiller import DISTILLER_MARKER, TickKind, run_distiller_tick
from agent_loop_reviewer import REVIEWER_MARKER, run_reviewer_tick
from agent_loop_testing import (
    GitHubEmulator,
    ModelSlot,
    ScriptedModel,
    call,
    emulator_runtime,
    emulator_settings,
    turn,
)

GARBAGE = '{"lessons": [ this is not json'


def _file(location: MemoryLocation, key: str, path: str) -> pathlib.Path:
    return pathlib.Path(location.remote_path(key)) / path


def _corrupt_lessons(location: MemoryLocation) -> pathlib.Path:
    target = _file(location, location.keys.context, LESSONS_PATH)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(GARBAGE)
    return target


def _settings(emulator: GitHubEmulator, tmp_path: pathlib.Path) -> Settings:
    return emulator_settings(emulator, tmp_path / "home", record_retention_days=2)


async def _agent_pr(emulator: GitHubEmulator) -> int:
    branch = "agent-loop/issue-1-add"
    emulator.push(
        branch,
        {"calc.py": "def add(a, b):\n    return a + b\n"},
        author=emulator.bot,
        message="add",
    )
    return emulator.open_pull(branch, title="Add add()", author=emulator.bot)


def _clean_review() -> ScriptedModel:
    return ScriptedModel(
        routes={
            REVIEWER_MARKER: [
                turn(tool_calls=[call("no_changes", reason="Fine.")]),
                turn("Done."),
            ]
        }
    )


async def test_the_reviewer_works_past_a_corrupt_lessons_document_and_review_mark(
    tmp_path: pathlib.Path,
) -> None:
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "# calc\n"})
    number = await _agent_pr(emulator)
    settings = _settings(emulator, tmp_path)
    memory = str(tmp_path / "mem")
    location = MemoryLocation.from_settings(settings, memory)
    _corrupt_lessons(location)
    mark = _file(location, location.keys.reviewed(number), REVIEWED_PATH)
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text("{not a mark")
    slot = ModelSlot()
    with use_model(slot):
        model = slot.put(_clean_review())
        async with emulator_runtime(settings, emulator, Role.REVIEWER, memory_root=memory) as rt:
            record = await run_reviewer_tick(rt)

    model.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.REVIEWED_CLEAN
    named = " ".join(record.problems)
    assert LESSONS_PATH in named
    assert REVIEWED_PATH in named
    # The reviewer owns the mark: it kept the bad bytes aside and wrote a good one.
    assert "head_sha" in mark.read_text()
    kept = list(mark.parent.parent.rglob(f"{QUARANTINE_PREFIX}{REVIEWED_PATH}.*"))
    assert [k.read_text() for k in kept] == ["{not a mark"]


async def test_the_distiller_works_past_a_corrupt_lessons_document_and_rebuilds_it(
    tmp_path: pathlib.Path,
) -> None:
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "# calc\n"})
    settings = _settings(emulator, tmp_path)
    memory = str(tmp_path / "mem")
    location = MemoryLocation.from_settings(settings, memory)
    lessons = _corrupt_lessons(location)
    finished = datetime.now(UTC) - timedelta(minutes=5)
    await write_run_record(
        location,
        RunRecord(
            run_id="b-1",
            role=Role.BUILDER,
            target=Target(kind=TargetKind.ISSUE, number=1, title="t"),
            outcome=Outcome.REJECTED,
            started_at=finished - timedelta(minutes=1),
            finished_at=finished,
            attempts=[Attempt(number=1, verified=False, notes="No test.")],
            links=Links(),
        ),
    )
    model = ScriptedModel(
        routes={
            DISTILLER_MARKER: [
                turn(
                    tool_calls=[
                        call(
                            "add_lesson",
                            text="Add a test with every change.",
                            roles=["builder"],
                            evidence_run_ids=["b-1"],
                        )
                    ]
                ),
                turn(tool_calls=[call("finish", summary="One lesson.")]),
                turn("Done."),
            ]
        }
    )
    slot = ModelSlot()
    with use_model(slot):
        slot.put(model)
        async with emulator_runtime(settings, emulator, Role.DISTILLER, memory_root=memory) as rt:
            result = await run_distiller_tick(rt)

    model.assert_finished()
    assert result.kind is TickKind.DISTILLED
    assert result.record is not None
    assert any(LESSONS_PATH in p for p in result.record.problems)
    assert "Add a test with every change." in lessons.read_text()
    kept = list(lessons.parent.parent.rglob(f"{QUARANTINE_PREFIX}{LESSONS_PATH}.*"))
    assert [k.read_text() for k in kept] == [GARBAGE]


def test_status_names_a_corrupt_document_and_exits_0(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgets")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    home = tmp_path / "home"
    location = local_memory(load_settings(home=home))
    _corrupt_lessons(location)

    code = cli.main(["status", "--home", str(home)])

    out, err = capsys.readouterr()
    assert code == 0
    assert "Traceback" not in out + err
    assert "Memory problems (1)" in out
    assert LESSONS_PATH in out


def test_status_lists_resting_targets_with_the_way_back(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgets")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    home = tmp_path / "home"
    location = local_memory(load_settings(home=home))
    now = datetime.now(UTC)

    def record(run: str, number: int, until: datetime | None, **extra: Any) -> RunRecord:
        return RunRecord(
            run_id=run,
            role=Role.BUILDER,
            target=Target(kind=TargetKind.ISSUE, number=number, title="t"),
            outcome=Outcome.REJECTED,
            started_at=now - timedelta(minutes=3),
            finished_at=now - timedelta(minutes=2),
            backoff_until=until,
            **extra,
        )

    asyncio.run(write_run_record(location, record("r-3", 3, now + timedelta(minutes=13))))
    asyncio.run(write_run_record(location, record("r-4", 4, now - timedelta(minutes=1))))

    assert cli.main(["status", "--home", str(home)]) == 0

    out = capsys.readouterr().out
    assert "Resting in back-off (1)" in out
    assert "agent-loop run builder --issue 3 --retry-now" in out
    assert "--issue 4 --retry-now" not in out  # its rest is over
