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

This is the only place the test patch reaches the sandbox, and it runs after the build
has returned.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, Field

from agent_loop_common.checks import open_checks
from agent_loop_common.repo import RepoSnapshot
from agent_loop_common.runtime import Runtime
from agent_loop_eval._instance import Instance
from agent_loop_eval._patches import PatchError, apply_patch
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
    error: bool = False
    """The scoring could not judge the change (the instance or the setup is at fault)."""
    seconds: float = 0.0


async def score_change(
    runtime: Runtime,
    instance: Instance,
    snapshot: RepoSnapshot,
    files: dict[str, str | None],
) -> Score:
    """Score `files` (the produced change) against `instance`'s hidden tests.

    Args:
        runtime: The run (its sandbox and settings: the instance's test command).
        instance: Its `test_patch`, `FAIL_TO_PASS` and `PASS_TO_PASS`.
        snapshot: The base commit, from the tarball the build read.
        files: The change: path -> full new content, `None` to delete.
    """
    started = time.perf_counter()
    hidden = [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS]
    if not files:
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
    async with open_checks(runtime, tree=snapshot, config=snapshot) as checks:
        if not checks.enabled:
            return Score(resolved=False, note=f"no tests can run: {checks.note}", error=True)
        result = await checks.run(changes)
        command = " ".join(checks.command.argv) if checks.command else ""
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
    failing = [node for node, status in tests.items() if status != "passed"]
    note = ""
    if reported is None:
        note = "the test run reported no per-test outcomes (no usable JUnit report)"
    elif result.disagreements or result.junit_forged:
        note = "the test run's evidence disagrees: " + (
            "; ".join(result.disagreements) or "the report is not a test runner's"
        )
    return Score(
        resolved=not failing and not note,
        tests=tests,
        failing=failing,
        note=note,
        line=line,
        seconds=seconds,
    )
