"""JUnit names from the sandbox and pytest node ids meet, in both directions."""

from __future__ import annotations

from agent_loop_common.sandbox import TestOutcome
from agent_loop_eval import node_id, node_outcomes, outcomes_of

FILES = ["tests/test_x.py", "tests/sub/test_y.py", "src/pkg/mod.py"]


def test_a_junit_name_becomes_the_node_id() -> None:
    assert node_id("tests.test_x::test_a", FILES) == "tests/test_x.py::test_a"
    assert node_id("tests.test_x.TestC::test_b[1-x.y]", FILES) == (
        "tests/test_x.py::TestC::test_b[1-x.y]"
    )
    assert node_id("tests.sub.test_y.TestC.Inner::test_c", FILES) == (
        "tests/sub/test_y.py::TestC::Inner::test_c"
    )
    # pytest's root below the repository's: the module's path ends a known file.
    assert node_id("sub.test_y::test_d", FILES) == "sub/test_y.py::test_d"
    # Without the tree, capitalised names are classes.
    assert node_id("tests.test_z.TestK::test_e") == "tests/test_z.py::TestK::test_e"
    assert node_id("test_plain") == "test_plain"


def test_node_ids_find_their_outcomes() -> None:
    outcomes: dict[str, TestOutcome] = {
        "tests.test_x::test_a": "passed",
        "tests.test_x.TestC::test_b[1-x.y]": "failed",
    }
    assert node_outcomes(outcomes, FILES) == {
        "tests/test_x.py::test_a": "passed",
        "tests/test_x.py::TestC::test_b[1-x.y]": "failed",
    }
    assert outcomes_of(
        ["tests/test_x.py::TestC::test_b[1-x.y]", "tests/test_x.py::test_gone"], outcomes
    ) == {"tests/test_x.py::TestC::test_b[1-x.y]": "failed", "tests/test_x.py::test_gone": None}
