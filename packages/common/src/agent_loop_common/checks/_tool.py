"""`run_tests`: the agents try their staged change against the tests before submitting.

The builder and the reviewer get the same tool. It runs the configured test command
(optionally with arguments appended, checked by `validate_extra_args`: no shell syntax,
no paths outside the tree) on the base tree with the agent's stage applied, in the same
sandbox as the pipeline's own check, at most `AGENT_LOOP_MAX_TEST_RUNS` times per try.
What the tests print reaches the model as untrusted data, trimmed to its head and tail.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agent_loop_common.agents import fence_untrusted
from agent_loop_common.checks._checks import Checks
from agent_loop_common.progress import emit
from agent_loop_common.repo import ReadTool, StagedFiles
from agent_loop_common.sandbox import CommandRejected, SandboxError

__all__ = ["run_tests_instructions", "run_tests_tool"]

_HEAD_CHARS = 2_000
_TAIL_CHARS = 6_000

ExtraArgs = Annotated[
    list[str] | None,
    Field(
        description=(
            "Arguments appended to the test command, one per item, e.g. "
            '["-k", "test_total"] or ["tests/test_inventory.py"]; null or [] for none. '
            "No shell syntax, no absolute paths."
        )
    ),
]


def run_tests_instructions(checks: Checks) -> str:
    """A paragraph for an agent's instructions saying how its change will be tested."""
    if not checks.enabled or checks.command is None:
        return (
            f"No tests run for this repository here ({checks.note}), so your change is "
            "judged on reading alone: read the code it touches carefully."
        )
    command = " ".join(checks.command.argv)
    return (
        f"The pipeline runs the repository's tests (`{command}`) in a sandbox on the base "
        "commit and on your exact staged change before the verifier sees it: a test that "
        "passed on the base and fails with your change, a new non-zero exit or a timeout "
        "rejects the try. Use run_tests to try your staged change first (at most "
        f"{checks.max_tool_runs} runs per try). Deleting, skipping or loosening tests is "
        "flagged to the verifier and in the pull request."
    )


def run_tests_tool(checks: Checks, stage: StagedFiles) -> ReadTool:
    """`run_tests(args)` over `stage`: the tests on the base tree with the stage applied."""

    async def run_tests(args: ExtraArgs = None) -> str:
        """Run the repository's tests on the base commit with your staged files applied, in a sandbox without network, and show the result. Optional arguments are appended to the test command (e.g. to select tests)."""
        try:
            after, base = await checks.try_run(dict(stage.files), args or ())
        except CommandRejected as exc:
            return f"Refused: {exc}"
        except SandboxError as exc:
            return f"The tests could not run: {exc}"
        shown = after.summary() + (f"; base {base.summary()}" if base is not None else "")
        emit("tests.ran", by="run_tests", status="ran", summary=shown, args=list(args or ()))
        lines = [f"Tests on your staged change: {after.summary()}"]
        if base is not None:
            lines.append(
                f"On the base commit (the command without your arguments): {base.summary()}"
            )
        if after.tests is not None and after.tests.failing:
            lines.append("Failing: " + ", ".join(after.tests.failing[:20]))
        found = [f.detail for f in after.guard_findings_not_in(base)]
        if found:
            lines.append(
                "The pytest guard found code steering this run from inside (results that "
                "cannot be trusted; the pull request would be a draft): " + "; ".join(found[:5])
            )
        if after.error:
            lines.append(after.error)
        text = after.output.text
        if len(text) > _HEAD_CHARS + _TAIL_CHARS:
            cut = len(text) - _HEAD_CHARS - _TAIL_CHARS
            text = (
                f"{text[:_HEAD_CHARS]}\n[... {cut} characters not shown; select fewer tests "
                "with run_tests arguments (a file, -k a name) to see more of their output "
                f"...]\n{text[-_TAIL_CHARS:]}"
            )
        lines.append(fence_untrusted("test output", text, _HEAD_CHARS + _TAIL_CHARS + 300))
        left = checks.max_tool_runs - checks.tool_runs
        lines.append(f"({left} run(s) left in this try.)")
        return "\n".join(lines)

    return run_tests
