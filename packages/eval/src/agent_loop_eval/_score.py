"""Scoring one produced change with the instance's hidden tests, in the builder's sandbox.

SWE-bench's rule, applied to the files themselves: the produced change over the base,
then the test patch laid over that (a test file the change touched is replaced by the
test patch's version of it, so a change cannot rewrite the tests that judge it), then
the test command run once in the sandbox, set up exactly as the builder's own checks
(`open_checks`: the instance's command, else the configured or detected one, and the
same setup), with a JUnit report. Resolved when every `FAIL_TO_PASS` and `PASS_TO_PASS`
test passed; a test the run did not report counts as failed, and a run whose exit
status, printed summary and report disagree (a change that forged its evidence) resolves
nothing.

Nor does a change whose code reaches into the test runner (`tampered`, as the sandbox
judges live work: docs/sandbox.md): pytest imports the code under test into its own
process, so a change can flip its failed reports into passes before the exit status,
the summary and the JUnit report exist, and all three then agree. The scoring run is
the pytest guard's like every run; what it finds that the base's run (the build's
baseline, shared through the runtime's store) did not have, and what the scan of the
produced change finds, make the score `tampered`: never resolved, and a hidden test the
guard saw fail is failing whatever the report says. The test patch is the real fix's,
so a finding in one of its files is not held against the change.

This is the only place the test patch reaches the sandbox, and it runs after the build
has returned.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, Field

from agent_loop_common.checks import CheckReport, Checks, open_checks
from agent_loop_common.repo import RepoSnapshot
from agent_loop_common.runtime import Runtime
from agent_loop_common.sandbox import (
    RunResult,
    TamperFlag,
    TestOutcome,
    compare,
    scan_test_machinery,
    without_guard,
)
from agent_loop_eval._instance import Instance
from agent_loop_eval._patches import PatchError, apply_patch, patch_paths
from agent_loop_eval._results import TestStatus
from agent_loop_eval._testids import outcomes_of

__all__ = ["Score", "score_change"]


class Score(BaseModel):
    """What the hidden tests said of one change."""

    resolved: bool
    tests: dict[str, TestStatus] = Field(default_factory=dict[str, TestStatus])
    failing: list[str] = Field(default_factory=list[str])
    note: str = ""
    """Why it is not resolved beyond the failing tests (nothing to score, no report,
    evidence that disagrees), or what kept it from being scored."""
    line: str = ""
    """The scoring run in one line: command and result."""
    tampered: list[str] = Field(default_factory=list[str])
    """Why the scoring run's results cannot be trusted: what the scan of the change found
    (`path: shape`) and what the pytest guard found in the run (`pytest guard: ...`), as
    a live check reports them (`CheckReport.tampered`). Never resolved when any."""
    error: bool = False
    """The scoring could not judge the change (the instance or the setup is at fault)."""
    seconds: float = 0.0


async def score_change(
    runtime: Runtime,
    instance: Instance,
    snapshot: RepoSnapshot,
    files: dict[str, str | None],
    *,
    empty: bool = False,
) -> Score:
    """Score `files` (the produced change) against `instance`'s hidden tests.

    Args:
        runtime: The run (its sandbox and settings: the instance's test command).
        instance: Its `test_patch`, `FAIL_TO_PASS` and `PASS_TO_PASS`.
        snapshot: The base commit, from the tarball the build read.
        files: The change: path -> full new content, `None` to delete.
        empty: Run the hidden tests even when `files` is empty (the base with the test
            patch alone: `eval score --gold`'s check that no change resolves nothing);
            otherwise no change is unresolved without a run.
    """
    started = time.perf_counter()
    hidden = [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS]
    if not files and not empty:
        return Score(resolved=False, note="no change to score")
    if not hidden:
        return Score(resolved=False, note="the instance names no test to score with", error=True)
    base = {path: await snapshot.read(path) or b"" for path in await snapshot.paths()}
    try:
        tests_over = apply_patch(base, instance.test_patch)
    except PatchError as exc:
        return Score(
            resolved=False, note=f"the test patch does not apply at the base: {exc}", error=True
        )
    changes = {**files, **tests_over}
    flags = scan_test_machinery(files, await snapshot.originals(sorted(files)))
    async with open_checks(runtime, tree=snapshot, config=snapshot) as checks:
        if not checks.enabled:
            return Score(resolved=False, note=f"no tests can run: {checks.note}", error=True)
        # The build ran this baseline already (the same key: base, command, setup): what
        # the guard finds on the base commit is not held against the change.
        base = await checks.baseline()
        result = await checks.run(changes)
        tampered = _tampered(
            checks, flags, base, result, trusted=set(patch_paths(instance.test_patch))
        )
        command = " ".join(without_guard(checks.command.argv)) if checks.command else ""
    line = f"{command}: {result.summary()}"
    seconds = round(time.perf_counter() - started, 3)
    if result.setup is not None and not result.setup.ok:
        return Score(
            resolved=False,
            note=f"the setup failed: {result.setup.summary()}",
            line=line,
            error=True,
            seconds=seconds,
        )
    reported = result.tests.outcomes if result.tests is not None else None
    found = outcomes_of(hidden, reported or {})
    tests: dict[str, TestStatus] = {
        node: outcome if outcome is not None else "missing" for node, outcome in found.items()
    }
    if tampered:
        # The reports were steered: the guard saw these fail when pytest made them.
        guard_saw: dict[str, TestOutcome] = dict.fromkeys(result.guard_failing, "failed")
        seen_failing = outcomes_of(hidden, guard_saw)
        tests |= {node: "failed" for node, outcome in seen_failing.items() if outcome}
    failing = [node for node, status in tests.items() if status != "passed"]
    note = ""
    if reported is None:
        note = "the test run reported no per-test outcomes (no usable JUnit report)"
    elif result.disagreements or result.junit_forged:
        note = "the test run's evidence disagrees: " + (
            "; ".join(result.disagreements) or "the report is not a test runner's"
        )
    return Score(
        resolved=not failing and not note and not tampered,
        tests=tests,
        failing=failing,
        note=note,
        line=line,
        tampered=tampered,
        seconds=seconds,
    )


def _tampered(
    checks: Checks,
    flags: tuple[TamperFlag, ...],
    base: RunResult | None,
    run: RunResult,
    *,
    trusted: set[str],
) -> list[str]:
    """What makes the scoring run's results untrustworthy, as a live check words it:
    what the guard found in `run` that it did not find on `base` and that lies outside
    the test patch's files (`trusted`), then the scan's `flags` of the produced change."""
    own = tuple(f for f in run.guard_findings if f.where.rsplit(":", 1)[0] not in trusted)
    steered = run.model_copy(update={"guard_findings": own})
    report = CheckReport(
        command=checks.command,
        setup=checks.setup,
        backend=checks.sandbox.name,
        isolated=checks.sandbox.isolated,
        verdict=compare(base, steered),
        flags=flags,
        base=base,
        after=steered,
    )
    # What the guard saw the run do first (the stronger evidence), then the scan's shapes.
    scanned = sum(f.kind == "test_machinery" for f in flags)
    return [*report.tampered[scanned:], *report.tampered[:scanned]]
