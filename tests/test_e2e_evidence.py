"""Evidence a maintainer can trust (issue 22), end to end through `agent-loop run`.

The same real path as `test_e2e_verdicts.py`: Flyte local mode, the emulator served on
loopback, a strict `ScriptedModel` driving the real builder, and the sample project's
real pytest suite in the real bubblewrap sandbox. Each test is an attack or a trap a
user met: a forged `atexit` report, a test command that proves nothing (`/bin/false`),
and a user-set pytest command without a JUnit report.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from agent_loop import cli
from agent_loop.status import read_snapshot
from agent_loop_common.records import Role, RunRecord
from agent_loop_common.runtime import TickSummary, local_memory, use_model
from agent_loop_common.sandbox import BwrapSandbox, SandboxLimits, _select
from agent_loop_common.settings import Settings, load_settings
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import GitHubEmulator, ScriptedCall, ScriptedModel, Turn, call, turn


def _bwrap_works() -> tuple[bool, str]:
    return asyncio.run(BwrapSandbox(SandboxLimits()).probe())


WORKS, WHY = _bwrap_works()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not WORKS, reason=f"bubblewrap cannot run here: {WHY}"),
]

# This workspace's Python by absolute path, as a user would set `python -m pytest -q`
# (`python` itself is not on the sandbox's PATH); no `--junitxml`: the sandbox adds it.
USER_PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:agent_loop_hermetic"

PYPROJECT = '[project]\nname = "calc"\nversion = "0.1.0"\n\n[tool.pytest.ini_options]\npythonpath = ["src"]\n'
CALC = "def add(a, b):\n    return a + b\n"
CALC_SUB = CALC + "\n\ndef subtract(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TESTS_SUB = TESTS.replace("import add", "import add, subtract") + (
    "\n\ndef test_subtract():\n    assert subtract(5, 3) == 2\n"
)
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
VERIFIED = '{"verified": true, "notes": "Checked the code and the tests."}'
ISSUE = ("Add subtract()", "We need `subtract(a, b)` in calc, with a test.")


@dataclass
class Loop:
    emulator: GitHubEmulator
    settings: Settings
    models: dict[Role, ScriptedModel]

    def provider(self, role: Role, purpose: str, usage: object, budget: object) -> ScriptedModel:
        return self.models[role]

    def record(self, run_id: str) -> RunRecord:
        records = asyncio.run(read_snapshot(local_memory(self.settings))).records
        [record] = [r for r in records if r.run_id == run_id]
        return record


@pytest.fixture
def loop(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> Iterator[Loop]:
    for key in list(os.environ):
        if key.startswith(("GITHUB_", "AGENT_LOOP_")) and key != "AGENT_LOOP_ALLOW_MODEL_REQUESTS":
            monkeypatch.delenv(key)
    _select.clear_probe_cache()
    emulator = GitHubEmulator()
    emulator.seed_files(
        {
            "pyproject.toml": PYPROJECT,
            "src/calc.py": CALC,
            "tests/test_calc.py": TESTS,
            "README.md": "# calc\n",
        }
    )
    with emulator.serve() as url:
        monkeypatch.setenv("GITHUB_API_URL", url)
        monkeypatch.setenv("GITHUB_TOKEN", emulator.bot_token)
        monkeypatch.setenv("AGENT_LOOP_REPO", emulator.full_name)
        monkeypatch.setenv("AGENT_LOOP_HOME", str(tmp_path / "home"))
        monkeypatch.setenv("AGENT_LOOP_SANDBOX", "bwrap")
        monkeypatch.setenv("AGENT_LOOP_TEST_COMMAND", USER_PYTEST)
        monkeypatch.setenv("AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS", "120")
        yield Loop(emulator, load_settings(), {})
    _select.clear_probe_cache()


def _tick(loop: Loop, model: ScriptedModel, capsys: pytest.CaptureFixture[str]) -> TickSummary:
    loop.models[Role.BUILDER] = model
    with use_model(loop.provider):
        code = cli.main(["run", "builder", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    model.assert_finished()
    return TickSummary.model_validate_json(out.strip().splitlines()[-1])


def _submit() -> ScriptedCall:
    return call(
        "submit_implementation",
        title="Add subtract()",
        body="Adds `subtract(a, b)` with a test.",
        summary="subtract() and its test.",
    ).expecting("Submitted")


def _try(calc: str) -> list[Turn]:
    return [
        turn(tool_calls=[call("stage_file", path="src/calc.py", content=calc)]),
        turn(tool_calls=[call("stage_file", path="tests/test_calc.py", content=TESTS_SUB)]),
        turn(tool_calls=[_submit()]),
        turn("Submitted."),
    ]


def test_a_user_set_pytest_command_gets_counts_and_fail_to_pass(
    loop: Loop, capsys: pytest.CaptureFixture[str]
) -> None:
    loop.emulator.add_issue(*ISSUE)
    model = ScriptedModel(
        _try(CALC_SUB),
        routes={
            VERIFIER_MARKER: [
                turn(VERIFIED, expect_in_messages=["2 passed (base: 1 passed)", "test_subtract"])
            ]
        },
        name="builder",
    )
    built = _tick(loop, model, capsys)
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
    loop: Loop, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LOOP_MAX_TRIES", "2")
    loop.emulator.add_issue(*ISSUE)
    second = _try(CALC_HOOKED)
    second[0] = turn(
        tool_calls=[call("stage_file", path="src/calc.py", content=CALC_HOOKED)],
        expect_in_messages=[
            "inconsistent evidence: the command exited 0 but a printed test summary reports 1",
            "more use(s) of `atexit`",
        ],
    )
    model = ScriptedModel(
        [*_try(CALC_FORGED), *second],
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
    built = _tick(loop, model, capsys)  # the verifier was asked once: never for the forgery

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
    loop: Loop, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LOOP_TEST_COMMAND", "/bin/false")
    loop.emulator.add_issue(*ISSUE)
    model = ScriptedModel(
        _try(CALC_SUB),
        routes={VERIFIER_MARKER: [turn(VERIFIED, expect_in_messages="give NO verdict")]},
        name="builder",
    )
    built = _tick(loop, model, capsys)

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
