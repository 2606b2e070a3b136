"""The pytest guard (issue 30): loaded first in the sandbox's pytest runs, it records code
that steers the run's evidence from inside, and its absence is itself a finding.

The real-run tests put the repository's real pytest suite in the real bubblewrap
sandbox with a change that forges a pass in a way the scan of the change cannot see
(its code comes from a data file at run time), or that keeps the guard from doing its
work, and check that the verdict is `tampered`; and that ordinary suites (xfail, skips,
a conftest that registers a plugin and adjusts reports) give no finding at all.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from agent_loop_common.sandbox import (
    GUARD_PLACEHOLDER,
    BwrapLayout,
    BwrapSandbox,
    DockerSpec,
    GuardFinding,
    OutputExcerpt,
    PlainSubprocessSandbox,
    RunResult,
    SandboxLimits,
    TestCommand,
    TestCounts,
    bwrap_argv,
    compare,
    docker_argv,
    scan_test_machinery,
    with_pytest_guard,
    write_tree,
)
from agent_loop_common.sandbox._command import expand_placeholders
from agent_loop_common.sandbox._guard import (
    GuardReading,
    guard_findings,
    install_guard,
    read_guard_report,
    read_guard_reports,
)
from agent_loop_testing import bwrap_works

LIMITS = SandboxLimits(wall_seconds=60, memory_mb=1024, max_processes=64, max_file_mb=32)


# ---------------------------------------------------------------- the command and the argv


def test_a_pytest_command_gets_the_guard_and_others_do_not() -> None:
    pytest_cmd = TestCommand(argv=("python", "-m", "pytest", "-q"), source="pyproject.toml")
    guarded = with_pytest_guard(pytest_cmd)
    assert guarded.argv == ("python", "-m", "pytest", "-q", "-p", GUARD_PLACEHOLDER)
    assert with_pytest_guard(guarded) == guarded
    assert "pytest guard loads first" in guarded.notes[-1]
    for argv in (("npm", "test"), ("go", "test", "./..."), ("make", "test")):
        command = TestCommand(argv=argv, source="setting")
        assert with_pytest_guard(command) == command


def test_the_placeholder_becomes_the_runs_module_or_goes_away() -> None:
    argv = ("pytest", "-q", "--junitxml=$SANDBOX_JUNIT", "-p", GUARD_PLACEHOLDER)
    assert expand_placeholders(argv, junit_path="/o/j.xml", guard="_agent_loop_guard_ab") == (
        "pytest",
        "-q",
        "--junitxml=/o/j.xml",
        "-p",
        "_agent_loop_guard_ab",
    )
    assert expand_placeholders(argv, junit_path="/o/j.xml") == (
        "pytest",
        "-q",
        "--junitxml=/o/j.xml",
    )


def _layout(tmp_path: Path, guard: Path | None) -> BwrapLayout:
    return BwrapLayout(
        bwrap="/usr/bin/bwrap",
        prlimit="/usr/bin/prlimit",
        repo=tmp_path / "repo",
        home=tmp_path / "home",
        tmp=tmp_path / "tmp",
        out=tmp_path / "out",
        shm=tmp_path / "shm",
        etc={},
        limits=LIMITS,
        path="/usr/bin:/bin",
        guard=guard,
    )


def _pairs(argv: list[str], flag: str) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == flag]


def test_bwrap_shows_the_guard_read_only_on_the_python_path(tmp_path: Path) -> None:
    guarded = bwrap_argv(_layout(tmp_path, tmp_path / "guard"), ["pytest"], network=False)
    assert (str(tmp_path / "guard"), "/sandbox/guard") in _pairs(guarded, "--ro-bind")
    assert ("PYTHONPATH", "/sandbox/guard") in _pairs(guarded, "--setenv")
    assert str(tmp_path / "guard") not in [b for b, _ in _pairs(guarded, "--bind")]
    plain = bwrap_argv(_layout(tmp_path, None), ["pytest"], network=False)
    assert "PYTHONPATH" not in plain
    assert "/sandbox/guard" not in plain


def test_docker_mounts_the_guard_read_only(tmp_path: Path) -> None:
    spec = DockerSpec(
        docker="docker",
        image="python:3.12-slim",
        name="n",
        repo=tmp_path / "repo",
        home=tmp_path / "home",
        out=tmp_path / "out",
        uid=65534,
        gid=65534,
        limits=LIMITS,
        guard=tmp_path / "guard",
    )
    argv = docker_argv(spec, ["python", "-m", "pytest"], network=False)
    assert f"type=bind,source={tmp_path / 'guard'},target=/sandbox/guard,readonly" in argv
    assert "PYTHONPATH=/sandbox/guard" in argv


def test_the_guard_is_installed_read_only_under_a_fresh_name(tmp_path: Path) -> None:
    first = install_guard(tmp_path / "g1", ["src/calc.py"])
    second = install_guard(tmp_path / "g2", [])
    assert first != second
    assert first.startswith("_agent_loop_guard_")
    assert first.isidentifier()
    module = tmp_path / "g1" / f"{first}.py"
    assert module.stat().st_mode & 0o777 == 0o444
    assert json.loads((tmp_path / "g1" / f"{first}.json").read_text()) == {
        "changed": ["src/calc.py"]
    }
    assert "def pytest_plugin_registered" in module.read_text()


# ---------------------------------------------------------------- reading the report back


def _result(exit_code: int = 0, *, failing: int = 0, passed: int = 2) -> RunResult:
    return RunResult(
        backend="bwrap",
        argv=("pytest",),
        exit_code=exit_code,
        tests=TestCounts(passed=passed, failed=failing, source="junit"),
        output=OutputExcerpt(),
    )


def test_a_missing_report_when_pytest_ran_is_a_finding() -> None:
    [absent] = guard_findings(_result(), GuardReading(found=False))
    assert absent.kind == "absent"
    assert "never reported" in absent.detail
    # pytest did not even start: nothing to say
    not_started = _result(127).model_copy(update={"tests": None})
    assert guard_findings(not_started, GuardReading(found=False)) == ()


def test_an_unfinished_report_with_exit_0_is_a_finding() -> None:
    [unfinished] = guard_findings(_result(), GuardReading(found=True, finished=False))
    assert unfinished.kind == "unfinished"
    assert guard_findings(_result(1, failing=1), GuardReading(found=True)) == ()


def test_failures_the_guard_saw_that_the_results_do_not_show_are_findings() -> None:
    reading = GuardReading(found=True, finished=True, failed=1, failing=("t.py::x",), exitstatus=1)
    details = [f.detail for f in guard_findings(_result(0), reading)]
    assert details == [
        "saw 1 failed report(s) made by pytest, but the command exited 0",
        "saw 1 failed report(s) made by pytest, but the reported results show none failing",
        "pytest's session ended with status 1 but the process exited 0",
    ]
    honest = GuardReading(found=True, finished=True, failed=1, exitstatus=1)
    assert guard_findings(_result(1, failing=1), honest) == ()


def test_the_report_is_read_as_hostile_input(tmp_path: Path) -> None:
    assert read_guard_report(tmp_path / "none.json") == GuardReading(found=False)
    host = tmp_path / "host.json"
    host.write_text('{"state": "finished"}')
    link = tmp_path / "link.json"
    link.symlink_to(host)
    assert read_guard_report(link).problem == "the guard's report is a symbolic link"
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert read_guard_report(fifo).problem == "the guard's report is not a regular file"
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (1024 * 1024 + 1))
    assert "larger than 1 MB" in read_guard_report(big).problem
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert read_guard_report(bad).problem == "the guard's report is not a JSON object"
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps(
            {
                "state": "finished",
                "findings": [{"kind": "plugin_registered", "detail": "d", "where": "a.py:3"}, 7],
                "failed": 2,
                "failing": ["t.py::a", 5, "t.py::b"],
                "exitstatus": 1,
            }
        )
    )
    reading = read_guard_report(good)
    assert reading.finished
    assert reading.failed == 2
    assert reading.exitstatus == 1
    assert reading.findings == (GuardFinding(kind="plugin_registered", detail="d", where="a.py:3"),)
    assert reading.failing == ("t.py::a", "5", "t.py::b")


def test_pytest_xdist_workers_reports_are_read_with_the_main_ones(tmp_path: Path) -> None:
    """Workers import the code under test and make the reports: what they saw counts."""
    name = "_agent_loop_guard_0123456789abcdef"
    main = {"state": "finished", "findings": [], "failed": 0, "failing": [], "exitstatus": 0}
    flipped = {
        **main,
        "findings": [{"kind": "report_changed", "detail": "changed ... (src/a.py:3)"}],
        "failed": 1,
        "failing": ["t.py::x"],
    }
    (tmp_path / f"{name}.json").write_text(json.dumps(main))
    (tmp_path / f"{name}.worker-gw0.json").write_text(json.dumps(flipped))
    (tmp_path / f"{name}.worker-gw1.json").write_text(json.dumps({"state": "loaded"}))
    reading = read_guard_reports(tmp_path, name)
    assert reading.finished
    assert reading.failed == 1
    assert reading.failing == ("t.py::x",)
    assert [f.detail for f in reading.findings] == [
        "changed ... (src/a.py:3)",
        "the pytest guard's final check never ran in worker-gw1",
    ]
    details = [f.detail for f in guard_findings(_result(0), reading)]
    assert "saw 1 failed report(s) made by pytest, but the command exited 0" in details


def test_findings_the_base_has_too_are_not_held_against_the_change() -> None:
    finding = GuardFinding(kind="absent", detail="pytest ran but the pytest guard never reported")
    base = _result().model_copy(update={"guard_findings": (finding,)})
    after = _result().model_copy(update={"guard_findings": (finding,)})
    verdict = compare(base, after)
    assert verdict.status == "passed"
    assert verdict.tampered == ()
    assert "found the same on the base commit" in verdict.notes[0]
    new = GuardFinding(
        kind="plugin_registered", detail="registered ... from src/a.py:3", where="src/a.py:3"
    )
    verdict = compare(base, after.model_copy(update={"guard_findings": (finding, new)}))
    assert verdict.status == "tampered"
    assert verdict.tampered == ("registered ... from src/a.py:3",)
    # a hard-rule failure still fails, with the finding in its feedback
    failing = _result(1, failing=1).model_copy(update={"guard_findings": (new,)})
    failed = compare(base, failing)
    assert failed.status == "failed"
    assert "registered ... from src/a.py:3" in failed.feedback()


# ---------------------------------------------------------------- real runs in the sandbox


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
    "--junitxml=$SANDBOX_JUNIT",
    "-p",
    GUARD_PLACEHOLDER,
)
PYPROJECT = "[tool.pytest.ini_options]\npythonpath = ['.']\n"
CALC = "def add(a, b):\n    return a + b\n\n\ndef subtract(a, b):\n    return b - a\n"
TESTS = (
    "from calc import add, subtract\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_subtract():\n    assert subtract(5, 3) == 2\n"
)
BASE = {"pyproject.toml": PYPROJECT, "calc.py": CALC, "tests/test_calc.py": TESTS}

# The review's forgery, in a data file the change loads and runs at import: the scan of
# calc.py sees nothing, the guard sees what it does.
PAYLOAD = """
import gc

def _passed(report):
    if report.failed:
        report.outcome = "passed"

_passed.__dict__["py" + "test_impl"] = {
    "wrapper": False, "hookwrapper": False, "optionalhook": False,
    "tryfirst": True, "trylast": False, "specname": None,
}

class _Steer:
    pass

setattr(_Steer, "py" + "test_runtest_log" + "report", staticmethod(_passed))
for _found in gc.get_objects():
    if type(_found).__name__ == "Config" and hasattr(_found, "pluginmanager"):
        {register}
        break
"""
LOADER = CALC + (
    "\n\nimport os\n\n"
    "with open(os.path.join(os.path.dirname(__file__), 'calc.dat')) as _data:\n"
    "    exec(_data.read())\n"
)


def _payload(register: str, *, before: str = "") -> str:
    return PAYLOAD.replace("        {register}", before + "        " + register)


async def _verdict(tmp_path: Path, changes: dict[str, str], *, plain: bool = False):
    tree = write_tree(BASE, tmp_path / "repo")
    sandbox = PlainSubprocessSandbox(LIMITS) if plain else BwrapSandbox(LIMITS)
    base = await sandbox.run(tree, PYTEST)
    after = await sandbox.run(tree, PYTEST, changes=dict(changes))
    assert base.guarded
    assert base.guard_findings == (), base.guard_findings
    return base, after, compare(base, after)


@in_bwrap
async def test_a_forged_pass_the_scan_cannot_see_is_tampered(tmp_path: Path) -> None:
    changes = {
        "calc.py": LOADER,
        "calc.dat": _payload("_found.pluginmanager.register(_Steer())"),
    }
    assert scan_test_machinery(changes, {"calc.py": CALC}) == ()
    _, after, verdict = await _verdict(tmp_path, changes)
    # the forgery worked on every witness outside the guard ...
    assert after.exit_code == 0
    assert after.tests is not None
    assert after.tests.failing_count == 0
    assert after.disagreements == ()
    # ... and the guard saw it
    assert verdict.status == "tampered"
    found = "\n".join(verdict.tampered)
    assert "registered a pytest plugin from <string>" in found
    assert "changed a test report from failed to passed (<string>" in found
    assert "the session counts 0 failed" in found
    assert "does not count a failed report as failing: tests/test_calc.py::test_subtract" in found
    assert verdict.guard_failing == ("tests/test_calc.py::test_subtract",)
    assert verdict.fail_to_pass == ()


@in_bwrap
async def test_registering_behind_pytests_back_is_found(tmp_path: Path) -> None:
    """pluggy's own `register` skips pytest's `pytest_plugin_registered`: the hook is
    found at the end, outside any registration."""
    register = "type(_found.pluginmanager).__mro__[1].register(_found.pluginmanager, _Steer())"
    changes = {"calc.py": LOADER, "calc.dat": _payload(register)}
    _, _, verdict = await _verdict(tmp_path, changes)
    assert verdict.status == "tampered"
    assert any(
        "added a pytest_runtest_logreport hook outside any registration (<string>" in t
        for t in verdict.tampered
    ), verdict.tampered


@in_bwrap
async def test_pytests_functions_replaced_and_reports_rewritten_behind_it(tmp_path: Path) -> None:
    patch = (
        "import _pytest.runner as _runner\n"
        "_made = _runner.TestReport.from_item_and_call\n"
        "def _quiet(item, call):\n"
        "    report = _made(item, call)\n"
        "    vars(report)['outcome'] = 'passed'\n"
        "    return report\n"
        "_runner.TestReport.from_item_and_call = staticmethod(_quiet)\n"
    )
    changes = {"calc.py": LOADER, "calc.dat": patch}
    _, after, verdict = await _verdict(tmp_path, changes)
    assert after.exit_code == 0, after.output.text
    assert verdict.status == "tampered"
    found = "\n".join(verdict.tampered)
    assert "replaced pytest's _pytest.reports.TestReport.from_item_and_call (<string>" in found


@in_bwrap
async def test_a_changed_test_file_is_not_trusted_with_the_session(tmp_path: Path) -> None:
    """Test files may use pytest's machinery, but the change's own are not vouched for:
    a test it added that resets the session's failure count is a finding."""
    reset = TESTS + ("\n\ndef test_zz_last(request):\n    request.session.testsfailed = 0\n")
    _, after, verdict = await _verdict(tmp_path, {"tests/test_calc.py": reset})
    assert after.exit_code == 0
    assert verdict.status == "failed"  # the printed "1 failed" still disagrees with exit 0
    assert any(
        "changed the session's testsfailed from 1 to 0 (tests/test_calc.py:" in t
        for t in verdict.tampered
    ), verdict.tampered


@in_bwrap
async def test_a_guard_unregistered_by_the_change_is_a_finding(tmp_path: Path) -> None:
    remove = (
        "for _name, _plugin in list(_found.pluginmanager.list_name_plugin()):\n"
        "            if _name.startswith('_agent_loop'):\n"
        "                _found.pluginmanager.unregister(_plugin)\n"
    )
    changes = {
        "calc.py": LOADER,
        "calc.dat": _payload("_found.pluginmanager.register(_Steer())", before="        " + remove),
    }
    _, after, verdict = await _verdict(tmp_path, changes)
    assert after.exit_code == 0, after.output.text
    assert verdict.status == "tampered"
    assert verdict.tampered == (
        "pytest exited 0 but the pytest guard's final check never ran (the guard was "
        "unregistered, or the session was cut short)",
    )


@in_bwrap
async def test_a_pytest_the_change_shadows_never_loads_the_guard(tmp_path: Path) -> None:
    fake = (
        "import os, sys\n"
        "with open(os.environ['SANDBOX_JUNIT'], 'w') as f:\n"
        '    f.write(\'<testsuite><testcase classname="tests.test_calc" name="test_add"/>\'\n'
        '            \'<testcase classname="tests.test_calc" name="test_subtract"/></testsuite>\')\n'
        "print('2 passed in 0.01s')\n"
        "sys.exit(0)\n"
    )
    changes = {"pytest.py": fake}
    assert [f.detail for f in scan_test_machinery(changes, {})] == [
        "a module that shadows pytest, which the test run imports"
    ]
    _, after, verdict = await _verdict(tmp_path, changes)
    assert after.exit_code == 0
    assert verdict.status == "tampered"
    assert verdict.tampered == (
        "pytest ran but the pytest guard never reported: it was kept from loading (or its "
        "report was removed)",
    )


CONFTEST = """
import pytest


class Marker:
    def pytest_report_header(self, config):
        return "marker plugin"


def pytest_configure(config):
    config.pluginmanager.register(Marker(), "marker")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if "flaky_ok" in item.keywords and report.failed:
        report.outcome = "skipped"
        report.longrepr = ("conftest", 0, "known flaky")
"""
ORDINARY_TESTS = """
import pytest

from calc import add


def test_add():
    assert add(2, 3) == 5


@pytest.mark.xfail(reason="not yet")
def test_later():
    assert add(1, 1) == 3


@pytest.mark.skip(reason="slow")
def test_slow():
    pass


@pytest.mark.flaky_ok
def test_flaky():
    assert False
"""


@in_bwrap
async def test_an_ordinary_suite_with_its_own_plugins_gives_no_finding(tmp_path: Path) -> None:
    files = {
        "pyproject.toml": PYPROJECT + "markers = ['flaky_ok']\n",
        "calc.py": CALC,
        "conftest.py": CONFTEST,
        "tests/test_other.py": ORDINARY_TESTS,
    }
    tree = write_tree(files, tmp_path / "repo")
    sandbox = BwrapSandbox(LIMITS)
    base = await sandbox.run(tree, PYTEST)
    after = await sandbox.run(tree, PYTEST, changes={"calc.py": CALC + "\n# tidy\n"})
    assert base.guarded
    assert after.guarded
    assert base.guard_findings == after.guard_findings == (), after.guard_findings
    assert compare(base, after).status == "passed"
    # the same conftest added by the change is the change's own code: not vouched for
    bare = write_tree({k: v for k, v in files.items() if k != "conftest.py"}, tmp_path / "bare")
    added = await sandbox.run(bare, PYTEST, changes={"conftest.py": CONFTEST})
    found = "\n".join(f.detail for f in added.guard_findings)
    assert "registered a pytest plugin from conftest.py:" in found
    assert "changed a test report from failed to skipped (conftest.py:" in found


async def test_the_plain_subprocess_loads_the_guard_too(tmp_path: Path) -> None:
    changes = {"calc.py": LOADER, "calc.dat": _payload("_found.pluginmanager.register(_Steer())")}
    _, _, verdict = await _verdict(tmp_path, changes, plain=True)
    assert verdict.status == "tampered"
    assert any("registered a pytest plugin from <string>" in t for t in verdict.tampered)
