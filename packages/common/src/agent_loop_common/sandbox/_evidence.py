"""Evidence that agrees with itself: exit status, printed summary and JUnit report.

A run has up to three witnesses of its outcome: the exit status, the summary the test
runner printed, and the JUnit report it wrote. The code under test runs in the same
process as the runner, so any one of them can be forged from product code (an `atexit`
hook that rewrites the report and calls `os._exit(0)` turns "1 failed" into a passing
exit with a passing report). Forging all three consistently is much harder: the printed
output goes through a pipe the sandbox reads as it is written. So when the witnesses
disagree, nothing is believed: `evidence_disagreements` names each disagreement, and
the verdict rejects a change whose run has any (or, when the base commit's run
disagrees the same way, says no verdict exists). Pure.
"""

from __future__ import annotations

from agent_loop_common.sandbox._result import RunResult

__all__ = ["evidence_disagreements"]


def evidence_disagreements(result: RunResult, *, junit_expected: bool) -> tuple[str, ...]:
    """Every way the run's exit status, printed summary and JUnit report disagree.

    Args:
        result: A finished run (`printed`, `tests`, `junit_problem` filled in).
        junit_expected: The command was given the report path (`$SANDBOX_JUNIT`), so a
            runner that finished normally wrote a report there.
    """
    if not result.ran or result.timed_out:
        return ()
    found: list[str] = []
    if result.junit_forged:
        found.append(result.junit_problem)
    junit = result.tests if result.tests is not None and result.tests.source == "junit" else None
    printed = result.printed
    if result.exit_code == 0:
        if result.printed_failing_max > 0:
            found.append(
                "the command exited 0 but a printed test summary reports "
                f"{result.printed_failing_max} failing"
            )
        if junit is not None and junit.failing_count > 0:
            found.append(
                f"the command exited 0 but the JUnit report lists {junit.failing_count} failing"
            )
        if junit_expected and junit is None and not result.junit_problem:
            found.append(
                "the command exited 0 without writing the JUnit report it was asked for "
                "(a test runner that finishes normally writes it)"
            )
    if (
        junit is not None
        and printed is not None
        and (junit.failing_count > 0) != (printed.failing_count > 0)
    ):
        found.append(
            f"the printed summary reports {printed.failing_count} failing, the JUnit "
            f"report {junit.failing_count}"
        )
    return tuple(found)
