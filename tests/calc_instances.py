"""SWE-bench instances of the calc sample's merged fixes (`seed_calc_history`), built as
`eval mine` would build them, for the eval's end-to-end tests: one place, so that each
test says only what its instances do differently.

Not a test double (those live in `agent_loop_testing`, which must not import the eval):
a value the root tests share, imported by name (`pythonpath` in the root pytest settings puts `tests/` on the path).
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Any

from agent_loop_eval import Instance, diff_files, instance_id
from agent_loop_testing import CalcFix, GitHubEmulator

__all__ = ["TEST_COMMAND", "calc_instance"]

TEST_COMMAND = (
    f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:agent_loop_hermetic "
    "--junitxml=$SANDBOX_JUNIT"
)
"""The calc sample's tests as an instance names them (the hermetic plugin off: the
sandbox has no network to guard)."""


def calc_instance(
    emulator: GitHubEmulator, fix: CalcFix, *, number: int | None = None, **changes: Any
) -> Instance:
    """The instance of `fix`: its base, its issue's text, its code as the gold patch and its
    tests as the test patch; under pull request `number` (its id, default the fix's own),
    then `changes` (any other field)."""
    pull = fix.pull if number is None else number
    instance = Instance(
        instance_id=instance_id(emulator.full_name, pull),
        repo=emulator.full_name,
        base_commit=fix.base,
        problem_statement=f"{fix.title}\n\n{fix.body}",
        patch=diff_files(fix.before, fix.code, fix.code),
        test_patch=diff_files(fix.before, fix.tests, fix.tests),
        FAIL_TO_PASS=fix.fail_to_pass,
        PASS_TO_PASS=fix.pass_to_pass,
        created_at=datetime.now(UTC),
        issue_numbers=[fix.issue],
        pull_number=pull,
        test_command=TEST_COMMAND,
    )
    return instance.model_copy(update=changes)
