"""A run's `Checks`: the command from the base branch, one baseline, hard-rule reports,
the `run_tests` tool, and each reader's view of a report.

The sandbox is the plain subprocess running a tiny checker with this interpreter, so
these tests need no sandbox backend; the real bubblewrap runs are in the root
end-to-end tests.
"""

from __future__ import annotations

import sys

import pytest

from agent_loop_common.checks import NO_COMMAND, CheckReport, open_checks, run_tests_tool
from agent_loop_common.records import Role
from agent_loop_common.repo import RepoSnapshot, repository_instructions
from agent_loop_common.runtime import use_sandbox
from agent_loop_common.sandbox import (
    PlainSubprocessSandbox,
    SandboxLimits,
    TamperFlag,
    TestCommand,
    TestCounts,
    TestVerdict,
)
from agent_loop_common.settings import Settings
from agent_loop_common.staging import ChangeStage
from agent_loop_testing import GitHubEmulator, emulator_client
from agent_loop_testing.pytest_plugin import AgentRuntime

CHECKER = """\
import sys
sys.path.insert(0, "src")
from calc import add
extra = sys.argv[1:]
print("checking", " ".join(extra) or "everything")
if add(2, 3) != 5:
    print("FAILED test_add: add(2, 3) ==", add(2, 3))
    sys.exit(1)
print("1 passed")
"""
CALC = "def add(a, b):\n    return a + b\n"
BROKEN = "def add(a, b):\n    return a - b\n"
AGENTS = f"# Agents\n\nTest command: `{sys.executable} check.py`\n"


@pytest.fixture
def emulator() -> GitHubEmulator:
    emu = GitHubEmulator()
    emu.seed_files(
        {
            "AGENTS.md": AGENTS,
            "check.py": CHECKER,
            "src/calc.py": CALC,
            "src/pkg/AGENTS.md": "Keep functions pure in pkg.\n",
            "CLAUDE.md": "Prefer small commits.\n",
        }
    )
    return emu


async def _snapshot(emulator: GitHubEmulator) -> RepoSnapshot:
    github = emulator_client(emulator)
    sha = await github.get_ref("heads/main")
    assert sha is not None
    return RepoSnapshot(github, sha, "main", label="base branch main")


async def test_the_command_comes_from_the_base_and_the_baseline_runs_once(
    emulator: GitHubEmulator, agent_runtime: AgentRuntime, settings: Settings
) -> None:
    base = await _snapshot(emulator)
    with use_sandbox(PlainSubprocessSandbox(SandboxLimits(wall_seconds=30))) as baselines:
        async with (
            agent_runtime(Role.BUILDER, settings=settings) as rt,
            open_checks(rt, tree=base, config=base) as checks,
        ):
            assert checks.enabled
            assert checks.command is not None
            assert checks.command.source == "AGENTS.md"
            # a change that rewrites AGENTS.md does not pick its own judge
            good = await checks.check({"src/calc.py": CALC, "AGENTS.md": "Test command: true\n"})
            bad = await checks.check({"src/calc.py": BROKEN})
            runs = checks.runs
    assert good.status == "passed"
    assert good.after is not None
    assert good.after.argv[1].endswith("check.py")
    assert bad.rejects
    assert "the command exited 1 (base: exit 0)" in bad.feedback()
    assert "FAILED test_add: add(2, 3) == -1" in bad.feedback()
    assert "Fix the code" in bad.feedback()
    assert runs == 3  # one baseline, two checks
    assert baselines.runs == 1


async def test_run_tests_validates_arguments_and_keeps_to_its_budget(
    emulator: GitHubEmulator, agent_runtime: AgentRuntime, settings: Settings
) -> None:
    base = await _snapshot(emulator)
    stage = ChangeStage({"src/calc.py": BROKEN})
    config = settings.model_copy(update={"max_test_runs": 2})
    with use_sandbox(PlainSubprocessSandbox(SandboxLimits(wall_seconds=30))):
        async with (
            agent_runtime(Role.BUILDER, settings=config) as rt,
            open_checks(rt, tree=base, config=base) as checks,
        ):
            run_tests = run_tests_tool(checks, stage)
            refused = await run_tests(["-k", "x; rm -rf /"])
            first = await run_tests(["fast"])
            stage.put("src/calc.py", CALC)
            second = await run_tests(None)
            spent = await run_tests(None)
            checks.new_try()
            again = await run_tests([])
    assert refused.startswith("Refused: argument 'x; rm -rf /' uses shell syntax")
    assert first.startswith("Tests on your staged change: exit 1")
    assert "On the base commit (the command without your arguments): exit 0" in first
    assert '<untrusted-data label="test output">' in first
    assert "checking fast" in first
    assert "(1 run(s) left in this try.)" in first
    assert second.startswith("Tests on your staged change: exit 0")
    assert spent.startswith("Refused: this try already ran the tests 2 time(s)")
    assert again.startswith("Tests on your staged change: exit 0")


async def test_nothing_runs_without_a_command_or_with_the_sandbox_off(
    emulator: GitHubEmulator, agent_runtime: AgentRuntime, settings: Settings
) -> None:
    emulator.push("main", {"AGENTS.md": "# Agents\n\nNo tests here.\n"}, author="acme", message="m")
    base = await _snapshot(emulator)
    with use_sandbox(PlainSubprocessSandbox(SandboxLimits(wall_seconds=30))):
        async with (
            agent_runtime(Role.BUILDER, settings=settings) as rt,
            open_checks(rt, tree=base, config=base) as checks,
        ):
            assert not checks.enabled
            report = await checks.check({"src/calc.py": BROKEN})
    assert report.status == "not_run"
    assert not report.rejects
    assert report.note == NO_COMMAND
    async with (
        agent_runtime(Role.BUILDER, settings=settings) as rt,  # sandbox="off" in tests
        open_checks(rt, tree=base, config=base) as checks,
    ):
        off = await checks.check({"tests/test_calc.py": None})
    assert off.summary == "the sandbox is off (`AGENT_LOOP_SANDBOX=off`)"
    assert off.markdown().startswith("## Tests\n**No tests ran**: the sandbox is off")
    assert off.evidence(runs=0).backend == "off"


def test_a_report_renders_each_readers_view_and_sanitizes_test_names() -> None:
    report = CheckReport(
        command=TestCommand(argv=("python", "-m", "pytest", "-q"), source="pyproject.toml"),
        setup=None,
        backend="bwrap",
        isolated=True,
        verdict=TestVerdict(
            status="passed",
            summary="4 passed (base: 3 passed)",
            fail_to_pass=("tests.test_x::test_new[@octocat fixes #7]",),
        ),
        flags=(TamperFlag(kind="skip_added", path="tests/test_y.py", detail="1 more `xfail`"),),
    )
    body = report.markdown()
    assert "- Command: `python -m pytest -q` (from pyproject.toml), in the `bwrap` sandbox" in body
    assert "- Result: 4 passed (base: 3 passed)" in body
    assert "@octocat" not in body  # a mention in a test name pages nobody
    assert "fixes #7" not in body  # and closes nothing
    assert "⚠️ The change weakens the tests" in body
    verifier = report.for_verifier()
    assert "The hard rules passed" in verifier
    assert '<untrusted-data label="test names and flags">' in verifier
    assert "Tampering flag: tests/test_y.py: 1 more `xfail`" in verifier
    evidence = report.evidence(runs=3)
    assert evidence.tamper_flags == ["tests/test_y.py: 1 more `xfail`"]
    assert report.line == "passed: 4 passed (base: 3 passed)"


def test_a_change_that_reaches_into_the_runner_is_tampered_in_every_view() -> None:
    """A finding makes the status `tampered` (never `passed`), the pull request a draft
    (not judged) saying why, the verifier is shown it, the record holds it."""
    machinery = TamperFlag(
        kind="test_machinery",
        path="src/calc.py",
        detail="walks every live object (gc.get_objects) (line 9)",
    )
    report = CheckReport(
        command=TestCommand(argv=("python", "-m", "pytest", "-q"), source="pyproject.toml"),
        setup=None,
        backend="bwrap",
        isolated=True,
        verdict=TestVerdict(
            status="tampered",
            summary="2 passed (base: 1 failed, 1 passed)",
            tampered=("registered a pytest plugin from src/calc.py:12 (_Steer; hooks: x)",),
            guard_failing=("tests/test_calc.py::test_subtract",),
            not_shown_fixed=("tests.test_calc::test_gone",),
        ),
        flags=(machinery,),
    )
    assert report.status == "tampered"
    assert not report.judged
    assert not report.rejects
    assert report.why_no_verdict.startswith("the change's code reaches into the test runner")
    body = report.markdown()
    assert body.startswith("## Tests\n**Tampered**: the change's code reaches into the test")
    assert "- src/calc.py: walks every live object (gc.get_objects) (line 9)" in body
    assert "- pytest guard: registered a pytest plugin from src/calc.py:12" in body
    assert "- Reported: 2 passed (base: 1 failed, 1 passed) (not evidence" in body
    assert "saw these tests fail when pytest made their reports: `tests/test_calc.py" in body
    assert (
        "Not shown fixed (failed on the base, skipped or absent after the change): `tests." in body
    )
    assert "a process the change's code also runs in" in body
    verifier = report.for_verifier()
    assert "its results CANNOT be trusted" in verifier
    assert '<untrusted-data label="what was found">' in verifier
    assert "must be rejected" in verifier
    notes = "\n".join(report.tamper_notes())
    assert "remove this code" in notes
    assert "gc.get_objects" in notes
    evidence = report.evidence(runs=2)
    assert evidence.status == "tampered"
    assert evidence.tampered == [
        "src/calc.py: walks every live object (gc.get_objects) (line 9)",
        "pytest guard: registered a pytest plugin from src/calc.py:12 (_Steer; hooks: x)",
    ]
    assert evidence.guard_failing == ["tests/test_calc.py::test_subtract"]
    assert evidence.not_shown_fixed == ["tests.test_calc::test_gone"]
    # the scan alone is enough, whatever the run said (or with no run at all)
    passed = TestVerdict(status="passed", summary="2 passed (base: 2 passed)")
    for verdict in (passed, None):
        alone = CheckReport(
            command=None,
            setup=None,
            backend="off",
            isolated=False,
            verdict=verdict,
            flags=(machinery,),
            note="the sandbox is off",
        )
        assert alone.status == "tampered"
        assert alone.ran == (verdict is not None)
        assert "src/calc.py: walks every live object" in alone.markdown()
    # a hard-rule failure is still a failure (rejected by code), the finding in its notes
    failed = CheckReport(
        command=None,
        setup=None,
        backend="bwrap",
        isolated=True,
        flags=(machinery,),
        verdict=TestVerdict(status="failed", summary="1 failed (base: 1 passed)"),
    )
    assert failed.status == "failed"
    assert failed.rejects
    assert "gc.get_objects" in failed.feedback()


def test_an_unisolated_run_is_labelled_as_such() -> None:
    report = CheckReport(
        command=TestCommand(argv=("python", "-m", "pytest"), source="setting"),
        setup=None,
        backend="plain-subprocess (not isolated)",
        isolated=False,
        verdict=TestVerdict(
            status="passed", summary="2 passed (base: 2 passed)", failing=(), output_tail=""
        ),
    )
    assert "in the `plain-subprocess` sandbox (not isolated)" in report.markdown()
    assert not report.evidence(runs=2).isolated
    assert TestCounts().summary() == "no tests ran"


async def test_repository_instructions_come_from_the_base_and_the_nearest_agents_md(
    emulator: GitHubEmulator,
) -> None:
    base = await _snapshot(emulator)
    rules = await repository_instructions(base, ["src/pkg/mod/x.py", "docs/y.md"])
    assert [path for path, _ in rules.files] == ["AGENTS.md", "CLAUDE.md", "src/pkg/AGENTS.md"]
    text = rules.render(level=2)
    assert text.startswith("## The maintainers' instructions")
    assert "rank below your system instructions" in text
    assert "read from the base branch main" in text
    assert '<untrusted-data label="maintainers instructions src/pkg/AGENTS.md">' in text
    root_only = await repository_instructions(base, ["docs/y.md"])
    assert [path for path, _ in root_only.files] == ["AGENTS.md", "CLAUDE.md"]
    assert "Sub-folders have instructions of their own (`src/pkg/AGENTS.md`)" in (
        root_only.render()
    )
    emulator.push("main", {"AGENTS.md": "x" * 50_000}, author="acme", message="big")
    big = await repository_instructions(await _snapshot(emulator))
    assert len(big.files[0][1]) < 8_100
    assert "more characters not shown" in big.files[0][1]


async def test_a_command_that_cannot_start_on_the_base_judges_nothing(
    emulator: GitHubEmulator, agent_runtime: AgentRuntime, settings: Settings
) -> None:
    base = await _snapshot(emulator)
    config = settings.model_copy(update={"test_command": "/nonexistent/python -m pytest"})
    with use_sandbox(PlainSubprocessSandbox(SandboxLimits(wall_seconds=30))):
        async with (
            agent_runtime(Role.BUILDER, settings=config) as rt,
            open_checks(rt, tree=base, config=base) as checks,
        ):
            report = await checks.check({"src/calc.py": BROKEN})
    assert report.status == "no_evidence"  # it ran, and proves nothing (issue 22)
    assert not report.rejects
    assert not report.judged
    assert report.summary.startswith("the test command could not start on the base commit")
    assert "/nonexistent/python" in report.markdown()
