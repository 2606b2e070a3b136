"""FAIL_TO_PASS, PASS_TO_PASS and flaky tests from runs before and after a fix."""

from __future__ import annotations

from agent_loop_common.sandbox import TestOutcome
from agent_loop_eval import classify

Run = dict[str, TestOutcome]
NEW = "tests/test_new.py::test_fixed"
OLD = "tests/test_old.py::test_kept"


def test_a_test_of_the_change_that_fails_or_is_missing_before_and_passes_after() -> None:
    before: list[Run] = [{NEW: "failed", OLD: "passed"}, {NEW: "failed", OLD: "passed"}]
    after: list[Run] = [{NEW: "passed", OLD: "passed"}, {NEW: "passed", OLD: "passed"}]
    result = classify(before, after, ["tests/test_new.py"], max_pass_to_pass=10)
    assert result.fail_to_pass == (NEW,)
    assert result.pass_to_pass == (OLD,)
    # Missing before (its module could not import) counts as failing.
    missing = classify([{OLD: "passed"}] * 2, after, ["tests/test_new.py"], max_pass_to_pass=10)
    assert missing.fail_to_pass == (NEW,)
    # A test outside the test change's files never becomes FAIL_TO_PASS.
    outside = classify(before, after, ["tests/test_other.py"], max_pass_to_pass=10)
    assert outside.fail_to_pass == ()


def test_a_test_whose_outcome_changes_between_runs_is_dropped_as_flaky() -> None:
    before: list[Run] = [{NEW: "failed", OLD: "passed"}, {NEW: "failed", OLD: "failed"}]
    after: list[Run] = [{NEW: "passed", OLD: "passed"}, {NEW: "failed", OLD: "passed"}]
    result = classify(before, after, ["tests/test_new.py"], max_pass_to_pass=10)
    assert result.fail_to_pass == ()
    assert result.pass_to_pass == ()
    assert result.flaky == (NEW, OLD)
    assert result.flaky_fail_to_pass == (NEW,)


def test_pass_to_pass_is_bounded_the_changes_own_files_first() -> None:
    names = [f"tests/test_a.py::test_{i}" for i in range(5)] + [f"{NEW}_{i}" for i in range(3)]
    runs: list[Run] = [dict.fromkeys(names, "passed")] * 2
    result = classify(runs, runs, ["tests/test_new.py"], max_pass_to_pass=4)
    assert result.pass_to_pass == (*(f"{NEW}_{i}" for i in range(3)), "tests/test_a.py::test_0")
