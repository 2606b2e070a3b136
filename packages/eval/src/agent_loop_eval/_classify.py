"""From test outcomes before and after a fix to FAIL_TO_PASS and PASS_TO_PASS (pure).

Validation runs the test command on the base with the test change (`before`) and on the
base with the test change and the fix (`after`), each at least twice. A test's status in
a run is its outcome there, or `None` when the run did not report it (a test module that
fails to import reports no test of its own: a new test of a new function is missing
before, not failed, and counts as failing).

- **flaky**: its status differs between two runs of the same tree; it is dropped from
  both lists, whatever it did otherwise.
- **FAIL_TO_PASS**: a test of a file the test change touches, passed in every `after`
  run and not passed (failed, errored, skipped or missing) in every `before` run.
- **PASS_TO_PASS**: any test passed in every run, before and after; at most
  `max_pass_to_pass`, those of the test change's files first, then by node id.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from agent_loop_common.sandbox import TestOutcome

__all__ = ["Classified", "classify", "test_file"]

Outcomes = Mapping[str, TestOutcome]
"""One run's outcomes by pytest node id."""


def test_file(node: str) -> str:
    """The file part of a node id (`tests/test_x.py::T::t` -> `tests/test_x.py`)."""
    return node.split("::", 1)[0]


@dataclass(frozen=True)
class Classified:
    """The tests that decide an instance, and the ones left out as flaky."""

    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    flaky: tuple[str, ...]
    """Tests whose outcome changed between two runs of the same tree."""
    flaky_fail_to_pass: tuple[str, ...]
    """Flaky tests of the test change's files that passed in some run after the fix:
    the ones that might have been FAIL_TO_PASS."""


def classify(
    before: Sequence[Outcomes],
    after: Sequence[Outcomes],
    test_files: Collection[str],
    *,
    max_pass_to_pass: int,
) -> Classified:
    """Classify every test the runs name (see the module docstring)."""
    runs = [*before, *after]
    names = sorted({name for run in runs for name in run})
    changed = set(test_files)
    f2p: list[str] = []
    p2p: list[str] = []
    flaky: list[str] = []
    flaky_f2p: list[str] = []
    for name in names:
        was = [run.get(name) for run in before]
        now = [run.get(name) for run in after]
        if len(set(was)) > 1 or len(set(now)) > 1:
            flaky.append(name)
            if test_file(name) in changed and "passed" in now:
                flaky_f2p.append(name)
            continue
        if all(s == "passed" for s in now) and all(s != "passed" for s in was):
            if test_file(name) in changed:
                f2p.append(name)
        elif all(s == "passed" for s in [*was, *now]):
            p2p.append(name)
    p2p.sort(key=lambda n: (test_file(n) not in changed, n))
    return Classified(
        fail_to_pass=tuple(f2p),
        pass_to_pass=tuple(p2p[:max_pass_to_pass]),
        flaky=tuple(flaky),
        flaky_fail_to_pass=tuple(flaky_f2p),
    )
