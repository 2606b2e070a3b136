"""Verdicts that rest on evidence (issue 14), end to end through `agent-loop run`.

Every tick goes through `agent_loop.cli.main(["run", ...])` in Flyte local mode against
the emulator served on loopback, with a strict `ScriptedModel` driving the real agents,
and the sample project's real pytest suite run in the real bubblewrap sandbox (this
workspace's Python by absolute path, `AGENT_LOOP_TEST_COMMAND`). What is checked is what
a person would see: pull requests (draft or not, their bodies), the comments, the
branches, and the run records in memory.
"""

from __future__ import annotations

import asyncio
import pathlib
import sys
from collections.abc import Iterator

import pytest

from agent_loop import cli
from agent_loop.status import read_snapshot
from agent_loop_common.records import Role
from agent_loop_common.runtime import local_memory, use_model
from agent_loop_common.sandbox import BwrapSandbox, DockerSandbox, _select
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    CALC,
    CALC_ISSUE,
    CALC_REPO,
    CALC_SUB,
    TESTS_SUB,
    VERIFIED,
    CliLoop,
    GitHubEmulator,
    ScriptedModel,
    bwrap_e2e_marks,
    call,
    emulator_client,
    serve_for_cli,
    submit_subtract,
    turn,
)

pytestmark = bwrap_e2e_marks()

# The workspace's own pytest, by absolute path; its entry-point plugin lives in the
# workspace's sources, which the sandbox does not show, so it is switched off.
TEST_COMMAND = (
    f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:agent_loop_hermetic "
    "--junitxml=$SANDBOX_JUNIT"
)

CALC_BROKEN = "def add(a, b):\n    return a - b\n\n\ndef subtract(a, b):\n    return a - b\n"
CALC_SUB_DOC = CALC + '\n\ndef subtract(a, b):\n    """a minus b."""\n    return a - b\n'
CALC_SUB_DOC_BROKEN = CALC_SUB_DOC.replace("return a - b", "return b - a")
EXTRA = "from calc import add\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n"
HANG = "import time\n\n\ndef test_waits_forever():\n    time.sleep(600)\n"


@pytest.fixture(params=["AGENT_LOOP_REPO", "AGENT_LOOP_REPOS"])
def loop(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: pathlib.Path,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[CliLoop]:
    """Configured with `AGENT_LOOP_REPO`, and again with `AGENT_LOOP_REPOS` naming the
    one repository (its own namespace, ticks shared out through the work tasks)."""
    _select.clear_probe_cache()
    emulator = GitHubEmulator()
    emulator.seed_files({**CALC_REPO, "tests/test_extra.py": EXTRA})
    with serve_for_cli(
        monkeypatch,
        emulator,
        tmp_path / "home",
        repo_variable=str(request.param),
        AGENT_LOOP_SANDBOX="bwrap",
        AGENT_LOOP_TEST_COMMAND=TEST_COMMAND,
        AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS="120",
    ):
        yield CliLoop(emulator, cli.main, capsys)
    _select.clear_probe_cache()  # a test may have faked the probes


def test_a_breaking_change_is_rejected_by_the_tests_then_fixed_and_opened_with_evidence(
    loop: CliLoop,
) -> None:
    emu = loop.emulator
    issue = emu.add_issue(*CALC_ISSUE)
    model = ScriptedModel(
        [
            # try 1: subtract() added, but add() broken on the way
            turn(
                tool_calls=[call("stage_file", path="src/calc.py", content=CALC_BROKEN)],
                expect_in_system="run_tests",
            ),
            turn(tool_calls=[call("stage_file", path="tests/test_calc.py", content=TESTS_SUB)]),
            turn(tool_calls=[submit_subtract()]),
            turn("Submitted; all good."),
            # try 2: the tests' verdict came back as the notes; fix, try, submit
            turn(
                tool_calls=[call("stage_file", path="src/calc.py", content=CALC_SUB)],
                expect_in_messages=[
                    "passed on the base and fail now",
                    "tests.test_calc::test_add",
                    "assert -1 == 5",
                ],
            ),
            turn(
                tool_calls=[
                    call("run_tests", args=["-k", "subtract"]).expecting(
                        "Tests on your staged change: exit 0", "1 passed", "deselected"
                    )
                ]
            ),
            turn(tool_calls=[submit_subtract()]),
            turn("Submitted."),
        ],
        routes={
            VERIFIER_MARKER: [
                turn(
                    VERIFIED,
                    expect_in_messages=[
                        "Checked by the pipeline",
                        "3 passed (base: 2 passed)",
                        "tests.test_calc::test_subtract",
                    ],
                )
            ]
        },
        name="builder",
    )
    loop.models[Role.BUILDER] = model
    with use_model(loop.provider):
        built = loop.tick("builder")
    model.assert_finished()  # the verifier was asked once: the failing try never reached it

    assert built.outcome == "opened_pr"
    [pr] = built.made
    pull = emu.pull(pr)
    assert not pull.draft
    body = pull.body or ""
    assert f"Fixes #{issue}" in body
    assert "## Tests" in body
    assert "- Result: 3 passed (base: 2 passed)" in body
    assert "- Fail-to-pass: `tests.test_calc::test_subtract`" in body
    assert "(from setting), in the `bwrap` sandbox" in body
    assert emu.file_at(pull.head_sha, "src/calc.py") == CALC_SUB.encode()

    record = loop.record(built.run_id)
    first, second = record.attempts
    assert not first.verified
    assert first.tests.startswith("failed: ")
    assert "tests.test_calc::test_add" in first.notes
    assert second.verified
    assert second.tests == "passed: 3 passed (base: 2 passed)"
    tests = record.tests
    assert tests is not None
    assert (tests.status, tests.source, tests.backend) == ("passed", "setting", "bwrap")
    assert tests.command.startswith(sys.executable)
    assert tests.fail_to_pass == ["tests.test_calc::test_subtract"]
    assert tests.base.startswith("exit 0: 2 passed")
    assert tests.after.startswith("exit 0: 3 passed")
    assert tests.runs == 4  # one baseline, two checks, one run_tests
    assert record.stage_seconds["test"] > 0

    # status and the report show the evidence too
    assert cli.main(["status", "--home", str(loop.settings.home)]) == 0
    status = loop.capture.readouterr().out
    assert "Tests of the recent changes" in status
    assert "3 passed (base: 2 passed)" in status


def test_a_model_that_claims_success_while_tests_fail_never_opens_a_pr(
    loop: CliLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LOOP_MAX_TRIES", "2")
    emu = loop.emulator
    issue = emu.add_issue(*CALC_ISSUE)
    broken = [
        turn(tool_calls=[call("stage_file", path="src/calc.py", content=CALC_BROKEN)]),
        turn(tool_calls=[call("stage_file", path="tests/test_calc.py", content=TESTS_SUB)]),
        turn(tool_calls=[submit_subtract()]),
        turn("I ran the tests myself and every one of them passes. Verified."),
    ]
    model = ScriptedModel(
        [*broken, turn(tool_calls=[submit_subtract()]), turn("All tests pass, trust me.")],
        routes={VERIFIER_MARKER: []},  # any verifier call would fail the run
        name="builder",
    )
    loop.models[Role.BUILDER] = model
    with use_model(loop.provider):
        built = loop.tick("builder")
    model.assert_finished()

    assert built.outcome == "rejected"
    assert built.made == []
    assert emu.refs("refs/heads/agent-loop/") == {}
    record = loop.record(built.run_id)
    assert [a.verified for a in record.attempts] == [False, False]
    assert all(a.tests.startswith("failed: ") for a in record.attempts)
    assert record.tests is not None
    assert record.tests.status == "failed"
    assert record.tests.regressions == ["tests.test_calc::test_add"]
    [comment] = [c.body for c in emu.comments(issue) if "nothing was pushed" in c.body]
    assert "tests.test_calc::test_add" in comment


def test_a_change_that_deletes_a_test_is_flagged(loop: CliLoop) -> None:
    emu = loop.emulator
    emu.add_issue(*CALC_ISSUE)
    model = ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="src/calc.py", content=CALC_SUB)]),
            turn(tool_calls=[call("stage_file", path="tests/test_calc.py", content=TESTS_SUB)]),
            turn(tool_calls=[call("delete_file", path="tests/test_extra.py")]),
            turn(tool_calls=[submit_subtract()]),
            turn("Submitted."),
        ],
        routes={
            VERIFIER_MARKER: [
                turn(
                    VERIFIED,
                    expect_in_messages=[
                        "Tampering flag: tests/test_extra.py: test file deleted",
                        "Passed on the base, no longer run: tests.test_extra::test_add_zero",
                    ],
                )
            ]
        },
        name="builder",
    )
    loop.models[Role.BUILDER] = model
    with use_model(loop.provider):
        built = loop.tick("builder")
    model.assert_finished()

    assert built.outcome == "opened_pr"
    body = emu.pull(built.made[0]).body or ""
    assert "⚠️ The change weakens the tests" in body
    assert "`tests/test_extra.py`: test file deleted" in body
    assert "- No longer run: `tests.test_extra::test_add_zero`" in body
    tests = loop.record(built.run_id).tests
    assert tests is not None
    assert tests.tamper_flags == ["tests/test_extra.py: test file deleted"]


def test_a_hanging_test_is_stopped_and_recorded(
    loop: CliLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS", "8")
    monkeypatch.setenv("AGENT_LOOP_MAX_TRIES", "1")
    emu = loop.emulator
    issue = emu.add_issue(*CALC_ISSUE)
    model = ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="src/calc.py", content=CALC_SUB)]),
            turn(tool_calls=[call("stage_file", path="tests/test_hang.py", content=HANG)]),
            turn(tool_calls=[submit_subtract()]),
            turn("Submitted."),
        ],
        routes={VERIFIER_MARKER: []},
        name="builder",
    )
    loop.models[Role.BUILDER] = model
    with use_model(loop.provider):
        built = loop.tick("builder")
    model.assert_finished()

    assert built.outcome == "rejected"
    record = loop.record(built.run_id)
    tests = record.tests
    assert tests is not None
    assert tests.status == "failed"
    assert tests.after.startswith("timed out after")
    assert "timed out" in tests.summary
    assert "the tests timed out" in record.attempts[0].notes
    [comment] = [c.body for c in emu.comments(issue) if "nothing was pushed" in c.body]
    assert "the tests timed out" in comment


async def _owner_comment(emulator: GitHubEmulator, pr: int, text: str) -> int:
    emulator.add_review(pr, author=emulator.owner, comments=[("src/calc.py", 5, text)])
    async with emulator_client(emulator, token=emulator.owner_token) as gh:
        return (await gh.list_review_comments(pr))[-1].id


def _agent_pr(emu: GitHubEmulator) -> int:
    """An agent pull request adding subtract() (as the builder would have opened it)."""
    emu.push(
        "agent-loop/issue-1-add-subtract",
        {"src/calc.py": CALC_SUB, "tests/test_calc.py": TESTS_SUB},
        message="Add subtract()",
        author=emu.bot_login,
    )
    return emu.open_pull(
        "agent-loop/issue-1-add-subtract",
        title="Add subtract()",
        body="Adds subtract().\n\nFixes #1",
        author=emu.bot_login,
    )


def test_the_reviewer_refuses_to_push_a_fix_that_breaks_tests(
    loop: CliLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    emu = loop.emulator
    emu.add_issue(*CALC_ISSUE)
    pr = _agent_pr(emu)
    head = emu.pull(pr).head_sha
    broken_fix = [
        turn(tool_calls=[call("stage_file", path="src/calc.py", content=CALC_SUB_DOC_BROKEN)]),
        turn(tool_calls=[call("submit_fix", summary="Docstring added.", replies=[])]),
        turn("Fixed, tests pass."),
    ]
    # Pass 1, one try: the fix breaks test_subtract -> nothing is pushed.
    monkeypatch.setenv("AGENT_LOOP_MAX_TRIES", "1")
    asyncio.run(_owner_comment(emu, pr, "Please add a docstring to subtract()."))
    first = ScriptedModel(broken_fix, routes={VERIFIER_MARKER: []}, name="reviewer")
    loop.models[Role.REVIEWER] = first
    with use_model(loop.provider):
        refused = loop.tick("reviewer")
    first.assert_finished()
    assert refused.outcome == "rejected"
    assert emu.pull(pr).head_sha == head
    comment = emu.comments(pr)[-1].body
    assert "nothing was pushed" in comment
    assert "tests.test_calc::test_subtract" in comment

    # Pass 2, two tries: the broken fix again (refused by the tests), then a good one,
    # pushed with the evidence in its summary.
    monkeypatch.setenv("AGENT_LOOP_MAX_TRIES", "2")
    asyncio.run(_owner_comment(emu, pr, "Still missing: the docstring."))
    second = ScriptedModel(
        [
            *broken_fix,
            turn(
                tool_calls=[call("stage_file", path="src/calc.py", content=CALC_SUB_DOC)],
                expect_in_messages="tests.test_calc::test_subtract",
            ),
            turn(tool_calls=[call("submit_fix", summary="Docstring added.", replies=[])]),
            turn("Fixed."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED, expect_in_messages="Checked by the pipeline")]},
        name="reviewer",
    )
    loop.models[Role.REVIEWER] = second
    with use_model(loop.provider):
        pushed = loop.tick("reviewer")
    second.assert_finished()
    assert pushed.outcome == "pushed_fix"
    new_head = emu.pull(pr).head_sha
    assert emu.log(new_head)[0].parents == (head,)
    assert emu.file_at(new_head, "src/calc.py") == CALC_SUB_DOC.encode()
    summary = emu.comments(pr)[-1].body
    assert "## Tests" in summary
    assert "- Result: 3 passed (base: 3 passed)" in summary
    record = loop.record(pushed.run_id)
    assert [a.tests.split(":")[0] for a in record.attempts] == ["failed", "passed"]


def test_with_the_sandbox_off_the_pr_is_a_draft_that_says_no_tests_ran(
    loop: CliLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LOOP_SANDBOX", "off")
    emu = loop.emulator
    emu.add_issue(*CALC_ISSUE)
    model = ScriptedModel(
        [
            turn(
                tool_calls=[call("stage_file", path="src/calc.py", content=CALC_SUB)],
                expect_in_system="No tests run for this repository here",
            ),
            turn(tool_calls=[submit_subtract()]),
            turn("Submitted."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED, expect_in_messages="No tests ran")]},
        name="builder",
    )
    loop.models[Role.BUILDER] = model
    with use_model(loop.provider):
        built = loop.tick("builder")
    model.assert_finished()
    pull = emu.pull(built.made[0])
    assert pull.draft
    assert "**No tests ran**: the sandbox is off (`AGENT_LOOP_SANDBOX=off`)." in (pull.body or "")
    tests = loop.record(built.run_id).tests
    assert tests is not None
    assert (tests.status, tests.backend, tests.runs) == ("not_run", "off", 0)


def test_without_a_working_sandbox_the_run_exits_2_before_any_claim(
    loop: CliLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def fails(self: object) -> tuple[bool, str]:
        return False, "not installed here"

    monkeypatch.setattr(BwrapSandbox, "probe", fails)
    monkeypatch.setattr(DockerSandbox, "probe", fails)
    monkeypatch.setenv("AGENT_LOOP_SANDBOX", "auto")
    emu = loop.emulator
    issue = emu.add_issue(*CALC_ISSUE)
    loop.models[Role.BUILDER] = ScriptedModel([], name="builder")
    with use_model(loop.provider):
        code = cli.main(["run", "builder"])
    err = loop.capture.readouterr().err
    assert code == cli.EXIT_CONFIG
    assert "AGENT_LOOP_SANDBOX=auto" in err
    assert "apt-get install -y bubblewrap" in err
    assert "AGENT_LOOP_SANDBOX=off" in err
    assert emu.comments(issue) == []  # nothing claimed, nothing written
    assert asyncio.run(read_snapshot(local_memory(loop.settings))).records == []
