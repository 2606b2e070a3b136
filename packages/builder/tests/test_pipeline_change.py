"""An issue becomes a verified pull request; rejections feed the next try or end in feedback."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from agent_loop_builder import BUILDER_MARKER
from agent_loop_common.memory import DistillerMemory, MemoryLocation
from agent_loop_common.records import Lesson, LessonBook, Outcome
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import GitHubEmulator, ScriptedModel, Turn, call, turn
from agent_loop_testing.pytest_plugin import Install, Stored

CORE = "def make_widget(name, colour='blue'):\n    return {'name': name, 'colour': colour}\n"
TEST = "from widgets.core import make_widget\n\n\ndef test_colour():\n    assert make_widget('a')['colour'] == 'blue'\n"
BRANCH = "agent-loop/issue-1-add-a-colour-to-widgets"


def _implement(*, title: str = "Add a colour to widgets") -> list[Turn]:
    return [
        turn(
            tool_calls=[call("read_file", path="src/widgets/core.py").expecting("make_widget")],
            expect_in_system=BUILDER_MARKER,
            expect_in_messages=[
                '<untrusted-data label="issue #1 by @acme">',
                "Widgets need a colour",
            ],
        ),
        turn(
            tool_calls=[
                call("search_code", pattern="make_widget").expecting("tests/test_core.py:1")
            ]
        ),
        turn(
            tool_calls=[
                call("stage_file", path="src/widgets/core.py", content=CORE).expecting("Staged")
            ]
        ),
        turn(
            tool_calls=[
                call("stage_file", path="tests/test_core.py", content=TEST).expecting("Staged")
            ]
        ),
        turn(
            tool_calls=[
                call(
                    "submit_implementation",
                    title=title,
                    body="Adds a `colour` argument defaulting to blue. Tested in tests/test_core.py.",
                    summary="make_widget takes a colour.",
                ).expecting("Submitted 2 path(s)")
            ]
        ),
        turn("Done."),
    ]


def _verdict(verified: bool, notes: str) -> Turn:
    return turn(f'Checked.\n{{"verified": {str(verified).lower()}, "notes": "{notes}"}}')


async def test_an_issue_becomes_a_pull_request(
    emulator: GitHubEmulator,
    memory: MemoryLocation,
    tick: Callable[..., object],
    install: Install,
    stored: Stored,
) -> None:
    now = datetime.now(UTC)
    lesson = Lesson(id="L7", text="Run the tests you add.", created_at=now, updated_at=now)
    distiller = await DistillerMemory.open(memory)
    await distiller.commit(
        await distiller.collect(), lessons=LessonBook(lessons=[lesson]), digest="Builders pass."
    )
    number = emulator.add_issue("Add a colour to widgets", "Widgets need a colour.<!-- hidden -->")
    script = _implement()
    script[0] = turn(
        tool_calls=script[0].tool_calls,
        expect_in_messages=[
            "[L7] Run the tests you add.",
            "Builders pass.",
            "Widgets need a colour.",
        ],
    )
    verifier = [
        turn(tool_calls=[call("read_file", path="tests/test_core.py")]),
        _verdict(True, "Colour added and tested."),
    ]
    model = install(ScriptedModel(script, routes={VERIFIER_MARKER: verifier}))
    scripted_calls = len(script) + len(verifier)  # every scripted turn is one model call

    record = await tick()

    model.assert_finished()
    assert "hidden" not in str(model.calls[0].messages)
    assert record is not None
    assert record.outcome is Outcome.OPENED_PR
    assert record.target.number == number
    assert record.lesson_ids == ["L7"]
    assert [(a.number, a.verified) for a in record.attempts] == [(1, True)]
    assert record.attempts[0].staged_paths == ["src/widgets/core.py", "tests/test_core.py"]
    assert record.attempts[0].tokens > 0
    assert {"select", "claim", "build", "verify", "apply", "record"} <= set(record.stage_seconds)
    assert [s.tool for s in record.trace if s.tool != "llm"][:3] == [
        "read_file",
        "search_code",
        "stage_file",
    ]
    assert record.usage.llm_calls == scripted_calls
    assert stored(record) == record
    pull = emulator.pull(int(record.links.pr_url.rsplit("/", 1)[1]))
    assert pull.head_ref == BRANCH
    assert pull.author == emulator.bot
    assert pull.title == "Add a colour to widgets"
    body = pull.body or ""
    assert "make_widget takes a colour." in body
    assert f"Fixes #{number}" in body
    assert "Adds a `colour` argument" in body
    assert "Colour added and tested." in body
    assert record.run_id in body
    assert emulator.file_at(BRANCH, "src/widgets/core.py") == CORE.encode()
    assert emulator.file_at(BRANCH, "tests/test_core.py") == TEST.encode()
    assert emulator.file_at(BRANCH, "README.md") == emulator.file_at("main", "README.md")
    head = emulator.log(BRANCH)
    assert head[1].sha == emulator.ref_sha("heads/main")
    assert emulator.ref_sha(f"agent-loop/claims/issue-{number}") is None
    released = emulator.comments(number)[-1].body
    assert "opened pull request" in released


async def test_a_rejected_try_is_retried_from_its_own_files(
    emulator: GitHubEmulator,
    tick: Callable[..., object],
    install: Install,
) -> None:
    number = emulator.add_issue("Add a colour to widgets", "Widgets need a colour.")
    first = _implement()
    first.pop(3)  # the first try forgets the test
    first[3] = turn(
        tool_calls=[
            call("submit_implementation", title="Add a colour", body="b", summary="s").expecting(
                "Submitted 1 path(s)"
            )
        ]
    )
    second = [
        turn(
            tool_calls=[
                call("read_file", path="src/widgets/core.py").expecting(
                    "your staged version", "colour='blue'"
                )
            ],
            expect_in_messages=[
                "Try 2 of 3",
                "No test covers the colour.",
                "- src/widgets/core.py",
            ],
        ),
        turn(tool_calls=[call("stage_file", path="tests/test_core.py", content=TEST)]),
        turn(
            tool_calls=[
                call(
                    "submit_implementation", title="Add a colour", body="b", summary="s"
                ).expecting("Submitted 2 path(s)")
            ]
        ),
        turn("Done."),
    ]
    model = install(
        ScriptedModel(
            [*first, *second],
            routes={
                VERIFIER_MARKER: [
                    _verdict(False, "No test covers the colour."),
                    _verdict(True, "Now tested."),
                ]
            },
        )
    )

    record = await tick()

    model.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.OPENED_PR
    assert [(a.number, a.verified) for a in record.attempts] == [(1, False), (2, True)]
    assert record.attempts[0].notes == "No test covers the colour."
    assert record.attempts[1].staged_paths == ["src/widgets/core.py", "tests/test_core.py"]
    assert emulator.file_at(BRANCH, "src/widgets/core.py") == CORE.encode()
    assert emulator.file_at(BRANCH, "tests/test_core.py") == TEST.encode()
    assert len(emulator.log(BRANCH)) == len(emulator.log("main")) + 1
    assert emulator.issue(number).state == "open"


async def test_three_rejections_leave_feedback_and_back_off(
    emulator: GitHubEmulator,
    tick: Callable[..., object],
    install: Install,
) -> None:
    number = emulator.add_issue("Add a colour to widgets", "Widgets need a colour.")
    resubmit = [
        turn(tool_calls=[call("submit_implementation", title="t", body="b", summary="s")]),
        turn("Done."),
    ]
    model = install(
        ScriptedModel(
            [*_implement(), *resubmit, *resubmit],
            routes={
                VERIFIER_MARKER: [
                    _verdict(False, "Wrong default."),
                    _verdict(False, "Still wrong."),
                    _verdict(False, "The default must be red."),
                ]
            },
        )
    )

    record = await tick()

    model.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.REJECTED
    assert [a.verified for a in record.attempts] == [False, False, False]
    assert record.links.pr_url == ""
    assert emulator.refs("refs/heads/agent-loop/") == {}
    bodies = [c.body for c in emulator.comments(number)]
    feedback = next(b for b in bodies if "passed verification in 3" in b)
    assert "The default must be red." in feedback
    assert any("agent-loop:backoff v1 attempts=1" in b for b in bodies)
    assert emulator.ref_sha(f"agent-loop/claims/issue-{number}") is None

    install(ScriptedModel([]))
    assert await tick() is None
    again = await tick(number)
    assert again is not None
    assert again.outcome is Outcome.BACKED_OFF
    assert "backed off" in again.error
    assert again.attempts == []
    assert len(emulator.comments(number)) == len(bodies)
