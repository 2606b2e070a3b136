"""A builder run draws its lessons: held-out ones reach no model, the record keeps the draw."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_loop_builder import run_builder_tick
from agent_loop_common.exposure import uniform_draw
from agent_loop_common.memory import DistillerMemory, MemoryLocation
from agent_loop_common.records import Lesson, LessonBook, Role, WorkKind
from agent_loop_common.settings import Settings
from agent_loop_testing import (
    GitHubEmulator,
    ScriptedModel,
    call,
    turn,
)
from agent_loop_testing.pytest_plugin import AgentRuntime, Install

HOLDOUT = 0.5


def _book(now: datetime) -> LessonBook:
    def lesson(i: int, **kw: object) -> Lesson:
        return Lesson.model_validate(
            {"id": f"L-{i}", "text": f"Advice number {i} for builders.", "created_at": now,
             "updated_at": now, **kw}
        )  # fmt: skip

    return LessonBook(
        lessons=[lesson(1), lesson(2), lesson(3), lesson(4, kinds=["docs"]),
                 lesson(5, roles=["reviewer"])]
    )  # fmt: skip


def _run_id_splitting(ids: list[str]) -> str:
    """A run id whose draw holds out L-1 and shows L-2 and L-3 (found, not guessed)."""
    for n in range(10_000):
        run = f"20261203T100000Z-{n:08x}"
        held = [uniform_draw(run, i) < HOLDOUT for i in ids]
        if held == [True, False, False]:
            return run
    raise AssertionError("no such run id")


async def test_a_held_out_lesson_reaches_no_model_and_is_recorded(
    emulator: GitHubEmulator,
    memory: MemoryLocation,
    settings: Settings,
    agent_runtime: AgentRuntime,
    install: Install,
) -> None:
    now = datetime.now(UTC)
    book = _book(now)
    digest = "# ctx\n" + "".join(f"- [{x.id}] (all) {x.text}\n" for x in book.lessons)
    distiller = await DistillerMemory.open(memory)
    await distiller.commit(await distiller.collect(), lessons=book, digest=digest)
    emulator.add_issue("Fix the widget", "It breaks.", labels=["bug"])
    run_id = _run_id_splitting(["L-1", "L-2", "L-3"])
    model = install(
        ScriptedModel(
            [
                turn(
                    tool_calls=[call("skip_issue", reason="needs a human decision")],
                    expect_in_messages=["Advice number 2", "Advice number 3"],
                ),
                turn("Skipped."),
            ]
        )
    )
    config = settings.model_copy(update={"lesson_holdout": HOLDOUT})
    async with agent_runtime(Role.BUILDER, settings=config, run_id=run_id) as rt:
        record = await run_builder_tick(rt)

    assert record is not None
    assert record.run_id == run_id
    everything = " ".join(str(c.messages) for c in model.calls)
    for hidden in ("Advice number 1", "Advice number 4", "Advice number 5"):
        assert hidden not in everything
    assert record.work_kind is WorkKind.BUG
    assert record.lesson_ids == ["L-2", "L-3"]
    got = {e.lesson_id: (e.applicable, e.held_out, e.shown, e.holdout) for e in record.exposures}
    assert got == {
        "L-1": (True, True, False, HOLDOUT),
        "L-2": (True, False, True, HOLDOUT),
        "L-3": (True, False, True, HOLDOUT),
        "L-4": (False, False, False, 0.0),
        "L-5": (False, False, False, 0.0),
    }
