"""Evidence the change's code cannot quietly steer (issue 30), end to end.

The attacks of the fourth security review, in their shape, through `agent-loop run
builder`: Flyte local mode, the emulator served on loopback, the real builder with a
strict `ScriptedModel`, and the sample project's real pytest suite in the real
bubblewrap sandbox.

1. **A consistent forged pass from product code alone.** The change keeps the bug and
   touches only `src/calc.py`. At import (during collection) the module finds pytest's
   `Config` through `gc`, registers a plugin whose hook name is built at run time
   (`"py" + "test_runtest_log" + "report"`), and turns the failed report into a pass:
   exit status, printed summary and JUnit report all say "2 passed". Before, the verdict
   was `passed` with fail-to-pass evidence and no flag. Now the pytest guard the sandbox
   loads first records the registration and the flipped report, the scan of the change
   finds the `gc` walk and the assembled hook name: the verdict is `tampered`, the
   verifier is shown why, the pull request opens as a draft that says so, and the run
   record holds the findings.
2. **A pytest configuration file the tamper check did not know** (`.pytest.ini`, read
   by pytest 9 before the older names) deselects the test that fails on the base:
   before, `passed` with no flag and the failing test silently gone. Now the file is
   flagged as test configuration and the test is "not shown fixed" in the verifier's
   prompt, the pull request and the record.
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
    REPORT_FORGERY,
    TESTS,
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

USER_PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:agent_loop_hermetic"

# The review's script, in its shape: product code only, the bug kept (subtract is
# reversed), pytest's Config found through gc, a hook whose name is assembled at run
# time, registered first in line so the session, the terminal and the JUnit report all
# see a pass.
CALC_FORGED_PASS = CALC + "\n\ndef subtract(a, b):\n    return b - a\n" + REPORT_FORGERY

CALC_BUGGY = CALC + "\n\ndef subtract(a, b):\n    return b - a\n"
TESTS_BUGGY = TESTS.replace("import add", "import add, subtract") + (
    "\n\ndef test_subtract():\n    assert subtract(5, 3) == 2\n"
)
DESELECTING_INI = (
    "[pytest]\npythonpath = src\naddopts = --deselect=tests/test_calc.py::test_subtract\n"
)


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
        AGENT_LOOP_MAX_TRIES="1",
    ):
        yield CliLoop(emulator, cli.main, capsys)
    _select.clear_probe_cache()


def test_a_forged_pass_from_product_code_is_tampered_and_opens_a_draft_saying_why(
    loop: CliLoop,
) -> None:
    loop.emulator.add_issue(*CALC_ISSUE)
    model = ScriptedModel(
        subtract_try(CALC_FORGED_PASS),
        routes={
            VERIFIER_MARKER: [
                turn(
                    VERIFIED,
                    expect_in_messages=[
                        "CANNOT be trusted",
                        # the pytest guard, at run time
                        "registered a pytest plugin from src/calc.py",
                        "changed a test report from failed to passed (src/calc.py",
                        # the scan of the change, before it ran
                        "src/calc.py:",
                        "walks every live object (gc.get_objects)",
                        "builds the pytest hook name 'pytest_runtest_logreport' at run time",
                    ],
                )
            ]
        },
        name="builder",
    )
    built = loop.run(Role.BUILDER, model)

    assert built.outcome == "opened_pr"
    pull = loop.emulator.pull(built.made[0])
    assert pull.draft
    body = pull.body or ""
    assert "**Tampered**: the change's code reaches into the test runner" in body
    assert "registered a pytest plugin from src/calc.py" in body
    assert "walks every live object (gc.get_objects)" in body
    assert "- Fail-to-pass" not in body  # a forged pass is no evidence
    tests = loop.record(built.run_id).tests
    assert tests is not None
    assert tests.status == "tampered"
    assert tests.fail_to_pass == []
    assert any("registered a pytest plugin from src/calc.py" in t for t in tests.tampered)
    assert any("gc.get_objects" in t for t in tests.tampered)
    assert any("test_subtract" in name for name in tests.guard_failing)


def test_a_pytest_ini_that_deselects_a_base_failure_is_flagged_and_not_shown_fixed(
    loop: CliLoop,
) -> None:
    loop.emulator.push(
        "main",
        {"src/calc.py": CALC_BUGGY, "tests/test_calc.py": TESTS_BUGGY},
        author=loop.emulator.owner,
        message="subtract, with its test",
    )
    loop.emulator.add_issue("subtract() is reversed", "subtract(5, 3) gives -2.")
    model = ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path=".pytest.ini", content=DESELECTING_INI)]),
            *subtract_try(CALC_BUGGY)[2:],
        ],
        routes={
            VERIFIER_MARKER: [
                turn(
                    VERIFIED,
                    expect_in_messages=[
                        "NOT shown fixed",
                        "tests.test_calc::test_subtract",
                        "Tampering flag: .pytest.ini: test configuration added",
                    ],
                )
            ]
        },
        name="builder",
    )
    built = loop.run(Role.BUILDER, model)

    body = loop.emulator.pull(built.made[0]).body or ""
    assert "`.pytest.ini`: test configuration added" in body
    assert "Not shown fixed (failed on the base, skipped or absent after the change)" in body
    assert "`tests.test_calc::test_subtract`" in body
    tests = loop.record(built.run_id).tests
    assert tests is not None
    assert tests.not_shown_fixed == ["tests.test_calc::test_subtract"]
    assert tests.fail_to_pass == []
    assert ".pytest.ini: test configuration added" in tests.tamper_flags
