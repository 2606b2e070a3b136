"""`replay_build`: the builder's own build on a snapshot in hand, with no GitHub at all.

The benchmark replays merged work through this seam, so what is checked is that it is
the real build (the same agent, tools, verifier and attempt loop, lessons as chosen),
that it sends GitHub nothing (the emulator's request log stays empty through the whole
replay, and the offline facade counts no request), and that nothing committed after the
snapshot's commit can reach a model or a tool.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_loop_builder import BUILDER_MARKER, LessonChoice, ReplayAsk, replay_build
from agent_loop_common.memory import DistillerMemory, MemoryLocation
from agent_loop_common.records import Lesson, LessonBook, Role
from agent_loop_common.repo import RepoSnapshot
from agent_loop_common.runtime import open_runtime
from agent_loop_common.settings import Settings
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import GitHubEmulator, ScriptedModel, Turn, call, emulator_client, turn
from agent_loop_testing.pytest_plugin import Install

CORE = "def make_widget(name, colour='blue'):\n    return {'name': name, 'colour': colour}\n"
LATER = "LATER-COMMIT-CANARY-7f3a"
STATEMENT = "Widgets need a colour\n\nEvery widget should have a colour, blue by default."


async def _base_snapshot(emulator: GitHubEmulator) -> RepoSnapshot:
    """The seeded commit's tarball, then a later commit on top (which must stay unseen)."""
    base = emulator.ref_sha("heads/main")
    assert base is not None
    async with emulator_client(emulator) as gh:
        archive = await gh.download_archive(base)
    emulator.push(
        "main", {"src/widgets/later.py": f"X = '{LATER}'\n"}, author="acme", message=LATER
    )
    emulator.clear_requests()
    return RepoSnapshot.from_archive(archive, base, base[:7], label=f"base commit {base[:7]}")


def _implement() -> list[Turn]:
    return [
        turn(
            tool_calls=[call("search_code", pattern="CANARY").expecting("No line")],
            expect_in_system=BUILDER_MARKER,
            expect_in_messages=['<untrusted-data label="issue #7">', "blue by default"],
        ),
        turn(tool_calls=[call("read_file", path="src/widgets/core.py").expecting("make_widget")]),
        turn(tool_calls=[call("stage_file", path="src/widgets/core.py", content=CORE)]),
        turn(
            tool_calls=[
                call("submit_implementation", title="Colour", body="Adds it.", summary="colour")
            ]
        ),
        turn("Done."),
    ]


def _verdicts(*verified: bool) -> list[Turn]:
    return [
        turn(f'{{"verified": {str(v).lower()}, "notes": "checked {i}"}}')
        for i, v in enumerate(verified)
    ]


async def test_a_replay_builds_verifies_and_sends_github_nothing(
    emulator: GitHubEmulator, settings: Settings, memory_root: str, install: Install
) -> None:
    snapshot = await _base_snapshot(emulator)
    model = install(ScriptedModel(_implement(), routes={VERIFIER_MARKER: _verdicts(True)}))
    async with open_runtime(settings, Role.BUILDER, memory_root=memory_root, offline=True) as rt:
        replay = await replay_build(rt, ReplayAsk(number=7, statement=STATEMENT), snapshot)

    model.assert_finished()
    assert emulator.requests == []
    assert replay.github_requests == 0
    assert replay.outcome == "change"
    assert replay.files == {"src/widgets/core.py": CORE}
    assert replay.tries == 1
    assert [a.verified for a in replay.attempts] == [True]
    assert replay.tokens_in == 100 * len(model.calls)
    assert replay.tokens_out == 20 * len(model.calls)
    assert replay.llm_calls == len(model.calls)
    assert replay.tests is not None
    assert replay.tests.status == "not_run"  # the sandbox is off in these settings
    everything = str([(c.system, c.messages) for c in model.calls])
    assert LATER not in everything


async def test_a_rejected_decomposed_or_failed_replay_produces_no_change(
    emulator: GitHubEmulator, settings: Settings, memory_root: str, install: Install
) -> None:
    snapshot = await _base_snapshot(emulator)
    config = settings.model_copy(update={"max_tries": 2})
    install(
        ScriptedModel(
            [*_implement(), *_implement()[2:]], routes={VERIFIER_MARKER: _verdicts(False, False)}
        )
    )
    async with open_runtime(config, Role.BUILDER, memory_root=memory_root, offline=True) as rt:
        rejected = await replay_build(rt, ReplayAsk(number=7, statement=STATEMENT), snapshot)
    assert rejected.outcome == "rejected"
    assert rejected.tries == 2
    assert rejected.files == {}
    assert "checked 1" in rejected.reason

    split = [
        turn(
            tool_calls=[
                call("stage_issue", key="a", title="Part A", body="Do A.", depends_on=[]).expecting(
                    "Staged"
                )
            ]
        ),
        turn(tool_calls=[call("submit_decomposition", summary="One part.").expecting("Submitted")]),
        turn("Split."),
    ]
    install(ScriptedModel(split, routes={VERIFIER_MARKER: _verdicts(True)}))
    async with open_runtime(settings, Role.BUILDER, memory_root=memory_root, offline=True) as rt:
        decomposed = await replay_build(rt, ReplayAsk(number=7, statement=STATEMENT), snapshot)
    assert decomposed.outcome == "decomposition", decomposed.reason
    assert decomposed.files == {}
    assert "sub-issues" in decomposed.reason

    install(ScriptedModel([turn(error=RuntimeError("provider down"))]))
    async with open_runtime(settings, Role.BUILDER, memory_root=memory_root, offline=True) as rt:
        failed = await replay_build(rt, ReplayAsk(number=7, statement=STATEMENT), snapshot)
    assert failed.outcome == "error"
    assert "provider down" in failed.reason
    assert emulator.requests == []


async def test_an_instance_without_an_issue_number_is_the_issue_not_issue_0(
    emulator: GitHubEmulator, settings: Settings, memory_root: str, install: Install
) -> None:
    """An instance from a SWE-bench file made elsewhere names no issue (number 0): the
    builder's prompt, its `read_issue` and the verifier's request call it "the issue"."""
    snapshot = await _base_snapshot(emulator)
    steps = _implement()
    steps[0] = turn(
        tool_calls=[call("read_issue").expecting('label="the issue"', "blue by default")],
        expect_in_messages=["# The issue\n", "Work on the issue as your instructions say"],
    )
    model = install(ScriptedModel(steps, routes={VERIFIER_MARKER: _verdicts(True)}))
    async with open_runtime(settings, Role.BUILDER, memory_root=memory_root, offline=True) as rt:
        replay = await replay_build(rt, ReplayAsk(number=0, statement=STATEMENT), snapshot)

    model.assert_finished()
    assert replay.outcome == "change", replay.reason
    verifier = model.calls_for(VERIFIER_MARKER)
    assert len(verifier) == 1
    assert '<untrusted-data label="the issue">' in str(verifier[0].messages)
    everything = str([(c.system, c.messages, c.tool_results) for c in model.calls])
    assert "#0" not in everything
    assert "issue 0" not in everything.lower()


@pytest.mark.parametrize(
    ("lessons", "shown"),
    [("on", ["L-1", "L-2"]), ("off", []), ("L-2", ["L-2"])],
)
async def test_a_replay_shows_the_lessons_it_was_asked_to_and_never_the_digest(
    emulator: GitHubEmulator,
    settings: Settings,
    memory: MemoryLocation,
    memory_root: str,
    install: Install,
    lessons: str,
    shown: list[str],
) -> None:
    now = datetime.now(UTC)
    book = LessonBook(
        lessons=[
            Lesson.model_validate(
                {
                    "id": f"L-{i}",
                    "text": f"Advice number {i}.",
                    "created_at": now,
                    "updated_at": now,
                }
            )
            for i in (1, 2)
        ]
    )
    distiller = await DistillerMemory.open(memory)
    await distiller.commit(await distiller.collect(), lessons=book, digest="DIGEST-OF-LATER-RUNS\n")
    snapshot = await _base_snapshot(emulator)
    model = install(
        ScriptedModel([turn(tool_calls=[call("skip_issue", reason="unclear")]), turn("Skipped.")])
    )
    # A live holdout rate must not hold anything out of a replay's chosen lessons.
    config = settings.model_copy(update={"lesson_holdout": 0.99})
    ask = ReplayAsk(number=7, statement=STATEMENT, lessons=LessonChoice.parse(lessons))
    async with open_runtime(config, Role.BUILDER, memory_root=memory_root, offline=True) as rt:
        replay = await replay_build(rt, ask, snapshot)

    assert replay.outcome == "declined"
    assert replay.lesson_ids == shown
    prompt = str(model.calls[0].messages)
    for i in (1, 2):
        assert (f"Advice number {i}." in prompt) == (f"L-{i}" in shown)
    assert "DIGEST-OF-LATER-RUNS" not in prompt


def test_lesson_choices_parse_as_the_option_is_written() -> None:
    assert LessonChoice.parse("on") == LessonChoice("all")
    assert LessonChoice.parse("OFF") == LessonChoice("none")
    assert LessonChoice.parse(" L-1, L-2,L-1 ") == LessonChoice("only", ("L-1", "L-2"))
    assert str(LessonChoice.parse("L-1,L-2")) == "L-1,L-2"
    with pytest.raises(ValueError, match="lesson ids"):
        LessonChoice.parse(" , ")


async def test_a_snapshot_that_reads_github_is_refused(
    emulator: GitHubEmulator, settings: Settings, memory_root: str
) -> None:
    async with emulator_client(emulator) as gh:
        live = RepoSnapshot(gh, "0" * 40, "main")
        async with open_runtime(
            settings, Role.BUILDER, memory_root=memory_root, offline=True
        ) as rt:
            with pytest.raises(ValueError, match="tarball in hand"):
                await replay_build(rt, ReplayAsk(number=1, statement="x"), live)
