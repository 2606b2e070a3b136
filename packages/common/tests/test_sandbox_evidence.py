"""Evidence that agrees with itself, and no evidence that passes for a pass (issue 22).

Pure parts first (runner summaries, the JUnit reader, disagreements, the no-evidence
rule, flags for code that can steer the report, the added `--junitxml`), then the real
bubblewrap sandbox: pytest 9's subtests counted from its printed line, a forged
`atexit` report rejected, a report that is a symbolic link to a host file never read.
"""

from __future__ import annotations

import os
import sys
import tracemalloc
from pathlib import Path

import pytest

from agent_loop_common.sandbox import (
    BwrapSandbox,
    RunResult,
    SandboxLimits,
    TestCommand,
    TestCounts,
    compare,
    flag_test_tampering,
    with_junit_report,
    write_tree,
)
from agent_loop_common.sandbox._capture import OutputCapture
from agent_loop_common.sandbox._evidence import evidence_disagreements
from agent_loop_common.sandbox._reports import MAX_JUNIT_ELEMENTS, read_junit
from agent_loop_testing import bwrap_works


def _counts(text: str) -> TestCounts | None:
    capture = OutputCapture()
    capture.feed(text.encode())
    capture.finish()
    return capture.printed_counts()


# ---------------------------------------------------------------- printed summaries


def test_pytest_9_subtests_are_counted() -> None:
    counts = _counts("....\n17 passed, 744 subtests passed in 1.2s\n")
    assert counts is not None
    assert (counts.passed, counts.subtests_passed, counts.source) == (17, 744, "pytest")
    assert counts.summary() == "17 passed, 744 subtests passed"
    failing = _counts(
        "SUBFAILED(i=2) test_s.py::test_sub - assert 2 < 2\n"
        "FAILED test_s.py::test_sub - contains 1 failed subtest\n"
        "2 failed, 1 passed, 2 subtests passed in 0.19s\n"
    )
    assert failing is not None
    assert (failing.failed, failing.passed, failing.subtests_passed) == (2, 1, 2)
    assert failing.failing == ("test_s.py::test_sub",)


def test_pytest_8_summary_with_borders_and_colours() -> None:
    counts = _counts("\x1b[31m===== 1 failed, 2 passed, 1 skipped in 0.12s =====\x1b[0m\n")
    assert counts is not None
    assert (counts.failed, counts.passed, counts.skipped) == (1, 2, 1)


def test_unittest_summaries() -> None:
    ok = _counts("....\n---------\nRan 4 tests in 0.001s\n\nOK (skipped=1)\n")
    assert ok is not None
    assert (ok.source, ok.passed, ok.skipped, ok.failed) == ("unittest", 3, 1, 0)
    failed = _counts(
        "FAIL: test_sub (test_calc.T.test_sub)\n----\nRan 5 tests in 0.01s\n\n"
        "FAILED (failures=1, errors=1)\n"
    )
    assert failed is not None
    assert (failed.passed, failed.failed, failed.errors) == (3, 1, 1)
    assert failed.failing == ("test_calc.T.test_sub",)


def test_javascript_runners() -> None:
    jest = _counts("Test Suites: 1 failed, 1 total\nTests:       1 failed, 5 passed, 6 total\n")
    assert jest is not None
    assert (jest.source, jest.failed, jest.passed) == ("jest", 1, 5)
    vitest = _counts(" Test Files  1 passed (1)\n      Tests  2 failed | 7 passed (9)\n")
    assert vitest is not None
    assert (vitest.source, vitest.failed, vitest.passed) == ("vitest", 2, 7)
    node = _counts("# tests 6\n# suites 0\n# pass 5\n# fail 1\n# cancelled 0\n# skipped 0\n")
    assert node is not None
    assert (node.source, node.passed, node.failed) == ("node", 5, 1)
    spec = _counts("ℹ tests 3\nℹ pass 3\nℹ fail 0\n")
    assert spec is not None
    assert (spec.passed, spec.failed) == (3, 0)


def test_go_test_lines_and_packages() -> None:
    verbose = _counts(
        "=== RUN   TestAdd\n--- PASS: TestAdd (0.00s)\n=== RUN   TestSub\n"
        "--- FAIL: TestSub (0.00s)\n    calc_test.go:9: got 1\nFAIL\nFAIL\texample.com/calc\t0.002s\n"
    )
    assert verbose is not None
    assert (verbose.source, verbose.passed, verbose.failed) == ("go", 1, 1)
    assert verbose.failing == ("TestSub",)
    quiet = _counts("ok  \texample.com/calc\t0.002s\nok  \texample.com/calc/x\t0.001s\n")
    assert quiet is not None
    assert (quiet.passed, quiet.unit) == (2, "packages")
    assert quiet.summary() == "2 passed (packages)"


def test_cargo_results_are_summed_over_test_binaries() -> None:
    counts = _counts(
        "test tests::it_adds ... ok\ntest tests::it_subtracts ... FAILED\n"
        "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; "
        "finished in 0.00s\n"
        "test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; "
        "finished in 0.01s\n"
    )
    assert counts is not None
    assert (counts.source, counts.passed, counts.failed, counts.skipped) == ("cargo", 4, 1, 1)
    assert counts.failing == ("tests::it_subtracts",)


def test_a_later_passing_summary_cannot_hide_an_earlier_failing_one() -> None:
    capture = OutputCapture()
    capture.feed(b"1 failed, 2 passed in 0.1s\n3 passed in 0.1s\n")
    capture.finish()
    assert capture.scanner.most_failing == 1
    assert capture.scanner.summaries == 2


# ---------------------------------------------------------------- the JUnit report

REPORT = (
    '<testsuites><testsuite name="pytest">'
    '<testcase classname="tests.test_a" name="test_x"/>'
    '<testcase classname="tests.test_a" name="test_y"><failure message="no"/></testcase>'
    "</testsuite></testsuites>"
)


def test_a_report_that_is_a_symbolic_link_is_never_followed(tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.xml"
    secret.write_text(REPORT.replace("test_x", "SECRET_NAME"))
    link = tmp_path / "junit.xml"
    link.symlink_to(secret)
    read = read_junit(link)
    assert read.counts is None
    assert read.forged
    assert read.problem == "the JUnit report is a symbolic link"


def test_a_report_that_is_a_fifo_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "junit.xml"
    os.mkfifo(fifo)
    read = read_junit(fifo)  # would block forever on a plain open()
    assert (read.counts, read.forged) == (None, True)


def test_too_many_elements_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    cases = "<p/>" * (MAX_JUNIT_ELEMENTS + 1)
    path.write_text(f"<testsuites><testsuite>{cases}</testsuite></testsuites>")
    read = read_junit(path)
    assert read.counts is None
    assert "more than" in read.problem


def test_a_large_report_is_streamed_in_flat_memory(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    case = (
        '<testcase classname="tests.test_big" name="test_{}"><system-out>{}</system-out></testcase>'
    )
    with path.open("w") as handle:
        handle.write("<testsuites><testsuite>")
        for i in range(40_000):
            handle.write(case.format(i, "x" * 200))
        handle.write("</testsuite></testsuites>")
    tracemalloc.start()
    read = read_junit(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert read.counts is not None
    assert read.counts.passed == 40_000
    # 9 MB of XML; the kept outcomes are ~40k short names. The old reader kept every
    # element (and its text) alive until the end.
    assert peak < 24 * 1024 * 1024, peak


# ---------------------------------------------------------------- disagreements and verdicts


def _run(
    code: int,
    *,
    printed: TestCounts | None = None,
    junit: TestCounts | None = None,
    most_failing: int = 0,
) -> RunResult:
    return RunResult(
        backend="test",
        argv=("x",),
        exit_code=code,
        tests=junit or printed,
        printed=printed,
        printed_failing_max=most_failing,
    )


def test_a_forged_report_and_exit_disagree_with_the_printed_summary() -> None:
    printed = TestCounts(failed=1, passed=1, failing=("tests/test_a.py::test_y",))
    junit = TestCounts(passed=2, source="junit", outcomes={"a::x": "passed", "a::y": "passed"})
    found = evidence_disagreements(
        _run(0, printed=printed, junit=junit, most_failing=1), junit_expected=True
    )
    assert found == (
        "the command exited 0 but a printed test summary reports 1 failing",
        "the printed summary reports 1 failing, the JUnit report 0",
    )
    assert (
        evidence_disagreements(
            _run(
                1,
                printed=printed,
                junit=TestCounts(failed=1, passed=1, source="junit"),
                most_failing=1,
            ),
            junit_expected=True,
        )
        == ()
    )
    # exit 0 after a test killed the runner before it wrote its report
    assert evidence_disagreements(_run(0), junit_expected=True) == (
        "the command exited 0 without writing the JUnit report it was asked for "
        "(a test runner that finishes normally writes it)",
    )
    assert evidence_disagreements(_run(0), junit_expected=False) == ()


def test_inconsistent_evidence_rejects_the_change() -> None:
    base = _run(1, printed=TestCounts(failed=1, passed=1), most_failing=1)
    forged = _run(
        0,
        printed=TestCounts(failed=1, passed=2),
        junit=TestCounts(passed=3, source="junit", outcomes={"a::x": "passed"}),
        most_failing=1,
    )
    forged = forged.model_copy(
        update={"disagreements": evidence_disagreements(forged, junit_expected=True)}
    )
    verdict = compare(base, forged)
    assert verdict.status == "failed"
    assert verdict.reasons[0].startswith("inconsistent evidence: the command exited 0")
    assert verdict.inconsistent == forged.disagreements
    # the same disagreement on the base: not the change's fault, and no verdict either
    base_too = base.model_copy(update={"disagreements": ("the same thing",)})
    none = compare(base_too, forged)
    assert none.status == "no_evidence"
    assert "on the base commit too" in none.no_verdict


def test_no_evidence_is_not_a_pass() -> None:
    same = compare(_run(1), _run(1))  # /bin/false, a plugin error, a broken environment
    assert (same.status, same.summary) == ("no_evidence", "exit 1 (base: exit 1)")
    assert "failed the same way on the base commit (exit 1)" in same.no_verdict
    zero = compare(_run(5, printed=TestCounts()), _run(5, printed=TestCounts()))
    assert zero.status == "no_evidence"
    assert zero.no_verdict == "no test ran to an outcome on the change: none"
    collection = compare(
        _run(2, printed=TestCounts(errors=1)), _run(2, printed=TestCounts(errors=1))
    )
    assert collection.status == "no_evidence"
    assert "only 1 error(s)" in collection.no_verdict
    # still judged: a change that makes the suite run nothing, and a real pass
    emptied = compare(_run(0, printed=TestCounts(passed=3)), _run(0, printed=TestCounts()))
    assert emptied.status == "failed"
    assert "no test ran on the change; 3 ran on the base" in emptied.reasons
    assert compare(_run(1), _run(0)).status == "passed"
    assert compare(
        _run(0, printed=TestCounts(passed=1)), _run(0, printed=TestCounts(passed=2))
    ).judged


# ---------------------------------------------------------------- flags and the added report


def test_product_code_that_can_steer_the_report_is_flagged() -> None:
    forged = (
        "import atexit, os, sys\n\ndef add(a, b):\n    return a + b\n\n"
        "def _forge():\n    open(os.environ['SANDBOX_JUNIT'], 'w').write('<x/>')\n"
        "    os._exit(0)\n\natexit.register(_forge)\n"
    )
    flags = flag_test_tampering(
        {"src/calc.py": forged, "src/plugin.py": "import _pytest.runner\n", "x.pth": "import y\n"},
        {"src/calc.py": "def add(a, b):\n    return a + b\n"},
    )
    details = {(f.path, f.detail.split(",")[0]) for f in flags}
    assert {f.kind for f in flags} == {"evidence_hook"}
    assert ("src/calc.py", "2 more use(s) of `atexit`") in details
    assert ("src/calc.py", "1 more use(s) of `os._exit`") in details
    assert ("src/calc.py", "1 more use(s) of the JUnit report path") in details
    assert ("src/plugin.py", "1 more use(s) of pytest internals") in details
    assert ("x.pth", "a file Python runs at start-up") in details
    # tests import pytest legitimately; unchanged uses are not flagged
    assert flag_test_tampering({"tests/test_a.py": "import pytest\n"}, {}) == ()
    assert (
        flag_test_tampering({"a.py": "import atexit\nx = 1\n"}, {"a.py": "import atexit\n"}) == ()
    )


@pytest.mark.parametrize(
    ("argv", "added"),
    [
        (("python", "-m", "pytest", "-q"), True),
        (("/venv/bin/pytest",), True),
        (("uv", "run", "pytest", "tests"), True),
        (("python", "-m", "pytest", "--junitxml=out.xml"), False),
        (("python", "-m", "pytest", "--junit-xml", "out.xml"), False),
        (("python", "-m", "pytest", "-p", "no:junitxml"), False),
        (("npm", "test"), False),
        (("python", "-m", "unittest"), False),
    ],
)
def test_pytest_commands_get_a_junit_report(argv: tuple[str, ...], added: bool) -> None:
    command = with_junit_report(TestCommand(argv=argv, source="setting"))
    assert (command.argv[-1] == "--junitxml=$SANDBOX_JUNIT") is added
    assert bool(command.notes) is added


# ---------------------------------------------------------------- in the real sandbox

LIMITS = SandboxLimits(wall_seconds=60, memory_mb=1024, max_processes=64, max_file_mb=32)


WORKS, WHY = bwrap_works()
in_bwrap = pytest.mark.skipif(not WORKS, reason=f"bubblewrap cannot run here: {WHY}")
PYTEST = (
    sys.executable,
    "-m",
    "pytest",
    "-q",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:agent_loop_hermetic",
)
CALC = "def add(a, b):\n    return a + b\n"
TESTS = (
    "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_more():\n    assert add(1, 1) == 2\n"
)
PYPROJECT = "[tool.pytest.ini_options]\npythonpath = ['.']\n"
# Product code only: on exit it rewrites the report as all-passed and leaves with 0.
FORGED_CALC = """import atexit
import os
import sys


def add(a, b):
    return a - b


def _forge():
    for arg in sys.argv:
        if arg.startswith("--junitxml="):
            with open(arg.split("=", 1)[1], "w") as report:
                report.write(
                    '<testsuites><testsuite name="pytest">'
                    '<testcase classname="tests.test_calc" name="test_add"/>'
                    '<testcase classname="tests.test_calc" name="test_more"/>'
                    "</testsuite></testsuites>"
                )
    os._exit(0)


atexit.register(_forge)
"""


@in_bwrap
async def test_pytest_9_subtests_counted_in_the_sandbox(tmp_path: Path) -> None:
    tree = write_tree(
        {
            "pyproject.toml": PYPROJECT,
            "tests/test_sub.py": (
                "def test_each(subtests):\n    for i in range(5):\n"
                "        with subtests.test(i=i):\n            assert i >= 0\n\n\n"
                "def test_plain():\n    pass\n"
            ),
        },
        tmp_path / "repo",
    )
    result = await BwrapSandbox(LIMITS).run(tree, PYTEST)  # no JUnit: the printed line only
    assert result.exit_code == 0, result.output.text
    assert result.tests is not None
    assert (result.tests.passed, result.tests.subtests_passed) == (2, 5), result.output.text
    assert result.disagreements == ()


@in_bwrap
async def test_a_forged_atexit_report_is_rejected(tmp_path: Path) -> None:
    files = {"pyproject.toml": PYPROJECT, "calc.py": CALC, "tests/test_calc.py": TESTS}
    tree = write_tree(files, tmp_path / "repo")
    argv = (*PYTEST, "--junitxml=$SANDBOX_JUNIT")
    sandbox = BwrapSandbox(LIMITS)
    base = await sandbox.run(tree, argv)
    after = await sandbox.run(tree, argv, changes={"calc.py": FORGED_CALC})
    # the forgery worked on what it could reach: the exit status and the report ...
    assert after.exit_code == 0
    assert after.tests is not None
    assert after.tests.source == "junit"
    assert after.tests.failed == 0
    # ... but not on the printed summary, so nothing is believed
    assert after.printed is not None
    assert after.printed.failed == 2, after.output.text
    verdict = compare(base, after)
    assert verdict.status == "failed"
    assert any(r.startswith("inconsistent evidence") for r in verdict.reasons)
    flags = flag_test_tampering({"calc.py": FORGED_CALC}, files)
    assert {f.detail.split(",")[0] for f in flags} >= {
        "2 more use(s) of `atexit`",
        "1 more use(s) of `os._exit`",
    }


@in_bwrap
async def test_a_report_linked_to_a_host_file_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "host" / "secret.xml"
    secret.parent.mkdir()
    secret.write_text(REPORT.replace("test_y", "HOST_SECRET_NAME"))
    secret.chmod(0o644)
    linker = (
        "import os\n\n\ndef test_link():\n"
        f"    os.symlink({str(secret)!r}, os.environ['SANDBOX_JUNIT'])\n"
    )
    tree = write_tree({"pyproject.toml": PYPROJECT, "tests/test_link.py": linker}, tmp_path / "r")
    result = await BwrapSandbox(LIMITS).run(tree, (*PYTEST, "-p", "no:junitxml"))
    assert result.exit_code == 0, result.output.text
    assert "HOST_SECRET_NAME" not in result.model_dump_json()
    assert result.junit_forged
    assert "the JUnit report is a symbolic link" in result.disagreements
