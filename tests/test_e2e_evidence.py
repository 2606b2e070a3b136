"""Evidence a maintainer can trust (issue 22), end to end through `agent-loop run`.

The same real path as `test_e2e_verdicts.py`: Flyte local mode, the emulator served on
loopback, a strict `ScriptedModel` driving the real builder, and the sample project's
real pytest suite in the real bubblewrap sandbox. Each test is an attack or a trap a
user met: a forged `atexit` report, a test command that proves nothing (`/bin/false`),
and a user-set pytest command without a JUnit report.
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Iterator

import pytest

from agent_loop import cli
from agent_loop_common.records import Role
from agent_loop_common.sandbox import _select
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    CALC,
    CALC_ISSUE,
    CALC_REPO,
    CALC_SUB,
    VERIFIED,
    CliLoop,
    GitHubEmulator,
    ScriptedModel,
    bwrap_e2e_marks,
    call,
    serve_for_cli,
    subtract_try,
    turn,
)

pytestmark = bwrap_e2e_marks()

# This workspace's Python by absolute path, as a user would set `python -m pytest -q`
# (`python` itself is not on the sandbox's PATH); no `--junitxml`: the sandbox adds it.
USER_PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:agent_loop_hermetic"

# Product code only: subtract() is wrong (test_subtract fails), and at exit the module
# rewrites pytest's JUnit report as all-passed and leaves with status 0.
CALC_FORGED = (
    CALC
    + """

def subtract(a, b):
    return b - a


import atexit
import os
import sys


def _forge():
    for arg in sys.argv:
        if arg.startswith("--junitxml="):
            with open(arg.split("=", 1)[1], "w") as report:
                report.write(
                    '<testsuites><testsuite name="pytest">'
                    '<testcase classname="tests.test_calc" name="test_add"/>'
                    '<testcase classname="tests.test_calc" name="test_subtract"/>'
                    "</testsuite></testsuites>"
                )
    os._exit(0)


atexit.register(_forge)
"""
)
# An honest second try that still registers an exit hook: accepted, and flagged.
CALC_HOOKED = CALC_SUB + '\n\nimport atexit\n\natexit.register(print, "calc: bye")\n'


@pytest.fixture
def loop(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> Iterator[CliLoop]:
    _select.clear_probe_cache()
    emulator = GitHubEmulator()
    emulator.seed_files(CALC_REPO)
    with serve_for_cli(
        monkeypatch,
        emulator,
        tmp_path / "home",
        AGENT_LOOP_SANDBOX="bwrap",
        AGENT_LOOP_TEST_COMMAND=USER_PYTEST,
        AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS="120",
    ):
        yield CliLoop(emulator, cli.main, capsys)
    _select.clear_probe_cache()


def test_a_user_set_pytest_command_gets_counts_and_fail_to_pass(loop: CliLoop) -> None:
    loop.emulator.add_issue(*CALC_ISSUE)
    model = ScriptedModel(
        subtract_try(CALC_SUB),
        routes={
            VERIFIER_MARKER: [
                turn(VERIFIED, expect_in_messages=["2 passed (base: 1 passed)", "test_subtract"])
            ]
        },
        name="builder",
    )
    built = loop.run(Role.BUILDER, model)
    pull = loop.emulator.pull(built.made[0])
    body = pull.body or ""
    assert not pull.draft
    assert "--junitxml=$SANDBOX_JUNIT` (from setting)" in body
    assert "- Result: 2 passed (base: 1 passed)" in body
    assert "- Fail-to-pass: `tests.test_calc::test_subtract`" in body
    tests = loop.record(built.run_id).tests
    assert tests is not None
    assert tests.status == "passed"
    assert tests.fail_to_pass == ["tests.test_calc::test_subtract"]


def test_a_forged_atexit_report_is_rejected_and_an_exit_hook_is_flagged(
    loop: CliLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LOOP_MAX_TRIES", "2")
    loop.emulator.add_issue(*CALC_ISSUE)
    second = subtract_try(CALC_HOOKED)
    second[0] = turn(
        tool_calls=[call("stage_file", path="src/calc.py", content=CALC_HOOKED)],
        expect_in_messages=[
            "inconsistent evidence: the command exited 0 but a printed test summary reports 1",
            "more use(s) of `atexit`",
        ],
    )
    model = ScriptedModel(
        [*subtract_try(CALC_FORGED), *second],
        routes={
            VERIFIER_MARKER: [
                turn(
                    VERIFIED,
                    expect_in_messages=[
                        "2 passed (base: 1 passed)",
                        "Tampering flag: src/calc.py: 2 more use(s) of `atexit`",
                    ],
                )
            ]
        },
        name="builder",
    )
    built = loop.run(Role.BUILDER, model)  # the verifier was asked once: never for the forgery

    assert built.outcome == "opened_pr"
    record = loop.record(built.run_id)
    first, accepted = record.attempts
    assert not first.verified
    assert first.tests.startswith("failed: ")
    assert "inconsistent evidence" in first.notes
    assert accepted.verified
    body = loop.emulator.pull(built.made[0]).body or ""
    assert "⚠️ The change touches how test results are reported" in body
    assert "`src/calc.py`: 2 more use(s) of `atexit`" in body
    assert loop.emulator.file_at(loop.emulator.pull(built.made[0]).head_sha, "src/calc.py") == (
        CALC_HOOKED.encode()
    )


def test_a_command_that_proves_nothing_opens_a_draft_saying_why(
    loop: CliLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LOOP_TEST_COMMAND", "/bin/false")
    loop.emulator.add_issue(*CALC_ISSUE)
    model = ScriptedModel(
        subtract_try(CALC_SUB),
        routes={VERIFIER_MARKER: [turn(VERIFIED, expect_in_messages="give NO verdict")]},
        name="builder",
    )
    built = loop.run(Role.BUILDER, model)

    assert built.outcome == "opened_pr"
    pull = loop.emulator.pull(built.made[0])
    assert pull.draft
    body = pull.body or ""
    assert "**No verdict**: the tests ran but prove nothing about this change" in body
    assert "failed the same way on the base commit (exit 1)" in body
    assert "- Result: exit 1 (base: exit 1)" in body
    tests = loop.record(built.run_id).tests
    assert tests is not None
    assert tests.status == "no_evidence"
    assert tests.summary == "exit 1 (base: exit 1)"
