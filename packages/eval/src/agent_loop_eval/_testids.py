"""Between the sandbox's per-test outcomes (JUnit names) and pytest node ids.

An instance names its tests as SWE-bench does, by pytest node id
(`tests/test_x.py::TestC::test_y[p]`). The sandbox reads outcomes from the JUnit report
the test command writes, where pytest names a test by `classname` (the dotted module
path, then any classes: `tests.test_x.TestC`) and `name` (`test_y[p]`); its
`TestCounts.outcomes` keys them `classname::name`. Both forms meet on the sandbox's
`name_key` (`tests.test_x.TestC.test_y[p]`), which is how a node id's outcome is looked
up (`outcomes_of`). Going the other way (`node_id`) needs to know where the module ends
and the classes begin: the tree's file list says it (`tests/test_x.py` exists), else
names starting with a capital letter are taken for classes (pytest collects `Test*`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from agent_loop_common.sandbox import TestOutcome, name_key

__all__ = ["node_id", "node_outcomes", "outcomes_of"]


def _module_split(parts: list[str], files: Collection[str]) -> int:
    """How many leading parts of a dotted classname are the module's path."""
    if files:
        suffixes = {f"/{f}" for f in files if f.endswith(".py")}
        for k in range(len(parts), 0, -1):
            candidate = "/".join(parts[:k]) + ".py"
            if candidate in files or any(s.endswith(f"/{candidate}") for s in suffixes):
                return k
    k = len(parts)
    while k > 1 and parts[k - 1][:1].isupper():
        k -= 1
    return k


def node_id(junit_name: str, files: Collection[str] = ()) -> str:
    """The pytest node id of a test the sandbox named `classname::name` (JUnit).

    `tests.test_x.TestC::test_y[p]` gives `tests/test_x.py::TestC::test_y[p]` when
    `tests/test_x.py` is in `files` (repository-relative paths; pytest's root may sit
    below the repository's, so a file ending in the module's path counts too). A name
    without a classname is returned as it is.
    """
    classname, sep, name = junit_name.partition("::")
    if not sep or not classname:
        return junit_name
    parts = classname.split(".")
    k = _module_split(parts, files)
    module = "/".join(parts[:k]) + ".py"
    return "::".join([module, *parts[k:], name])


def node_outcomes(
    outcomes: Mapping[str, TestOutcome], files: Collection[str] = ()
) -> dict[str, TestOutcome]:
    """The sandbox's outcomes (`TestCounts.outcomes`) keyed by pytest node id."""
    return {node_id(name, files): outcome for name, outcome in outcomes.items()}


def outcomes_of(
    node_ids: Iterable[str], outcomes: Mapping[str, TestOutcome]
) -> dict[str, TestOutcome | None]:
    """The outcome of each of `node_ids` in the sandbox's `outcomes` (JUnit names), or
    `None` for a test the run did not report (not collected: a missing test fails)."""
    by_key: dict[str, TestOutcome] = {name_key(n): o for n, o in outcomes.items()}
    return {node: by_key.get(name_key(node)) for node in node_ids}
