"""Test counts and failing names from what a test runner prints or writes.

Two sources, both optional: pytest's own lines (the final summary such as
`3 failed, 12 passed, 1 skipped in 0.4s`, and the `FAILED tests/x.py::test_y - ...`
lines of its short summary), and a JUnit XML report, which any runner can write and
which names every test with its outcome. JUnit wins when both exist: it is complete
where printed output may have been cut in the middle.

Names are compared through `name_key`, which maps pytest's node ids
(`tests/test_x.py::TestA::test_y[1]`) and JUnit's `classname` + `name`
(`tests.test_x.TestA` + `test_y[1]`) onto the same dotted key.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from agent_loop_common.sandbox._result import TestCounts, TestOutcome

__all__ = [
    "MAX_NAMES",
    "MAX_OUTCOMES",
    "failing_name",
    "name_key",
    "parse_junit",
    "parse_pytest_summary",
]

MAX_NAMES = 200
"""Most failing names kept from printed output."""
MAX_OUTCOMES = 20_000
"""Most per-test outcomes kept from a JUnit report."""
MAX_JUNIT_BYTES = 32 * 1024 * 1024
"""A larger JUnit file is not parsed (it would be a suite of millions of tests)."""

_MAX_NAME_CHARS = 300
_COUNT = re.compile(
    r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)\b"
)
# The final line: counts then "in 1.23s" (pytest >= 5), optionally inside "=" borders.
_SUMMARY = re.compile(
    r"^=*\s*((?:\d+ [a-z]+(?:, )?)+|no tests ran)\s+in\s+[\d.]+\s*s(?:econds)?\b.*?=*\s*$"
)
_FAILING = re.compile(r"^(FAILED|ERROR) (\S.*?)(?: - .*)?$")


def parse_pytest_summary(line: str) -> dict[str, int] | None:
    """The counts of pytest's final summary line, or `None` when `line` is not one.

    `==== 1 failed, 2 passed, 1 skipped in 0.12s ====` and the `-q` form without the
    borders both give `{"failed": 1, "passed": 2, "skipped": 1}`.
    """
    match = _SUMMARY.match(line.strip())
    if not match:
        return None
    counts: dict[str, int] = {}
    for number, word in _COUNT.findall(match.group(1)):
        key: str = {"error": "errors", "warning": "warnings"}.get(str(word), str(word))
        counts[key] = counts.get(key, 0) + int(number)
    return counts


def failing_name(line: str) -> str | None:
    """The test named by a `FAILED ...` or `ERROR ...` line of pytest's short summary."""
    match = _FAILING.match(line.rstrip())
    if not match:
        return None
    return match.group(2).strip()[:_MAX_NAME_CHARS]


def counts_from_pytest(counts: dict[str, int], failing: list[str]) -> TestCounts:
    """`TestCounts` from a parsed summary line and the failing names seen."""
    return TestCounts(
        passed=counts.get("passed", 0),
        failed=counts.get("failed", 0),
        errors=counts.get("errors", 0),
        skipped=counts.get("skipped", 0),
        xfailed=counts.get("xfailed", 0),
        xpassed=counts.get("xpassed", 0),
        failing=tuple(dict.fromkeys(failing))[:MAX_NAMES],
        source="pytest",
    )


def name_key(name: str) -> str:
    """A comparable key for a test name, whether from pytest or from JUnit.

    `tests/test_x.py::TestA::test_y[a.b]` and `tests.test_x.TestA.test_y[a.b]` (JUnit's
    classname and name joined by a dot) give the same key; parameters are kept verbatim.
    """
    base, bracket, params = name.partition("[")
    base = base.replace("::", ".").replace("/", ".").replace("\\", ".")
    base = re.sub(r"\.py(?=\.|$)", "", base)
    return base.strip(".") + (bracket + params if bracket else "")


def _junit_name(case: ET.Element) -> str:
    classname = case.get("classname", "").strip()
    name = case.get("name", "").strip()
    joined = f"{classname}::{name}" if classname else name
    return joined[:_MAX_NAME_CHARS]


def _outcome(case: ET.Element) -> TestOutcome:
    tags = {child.tag for child in case}
    if "error" in tags:
        return "error"
    if "failure" in tags:
        return "failed"
    if "skipped" in tags:
        return "skipped"
    return "passed"


def _declares_entities(path: Path) -> bool:
    """Whether the XML has a DOCTYPE (entities are how XML bombs work; JUnit needs none)."""
    try:
        with path.open("rb") as handle:
            start = handle.read(64 * 1024)
    except OSError:
        return True
    return b"<!DOCTYPE" in start.upper() or b"<!ENTITY" in start.upper()


def parse_junit(path: Path) -> TestCounts | None:
    """Counts, failing names and per-test outcomes from a JUnit XML report.

    Returns `None` when the file is missing, empty, too large or not valid JUnit XML
    (a run killed while writing it leaves a truncated file).
    """
    try:
        size = path.stat().st_size
    except OSError:
        return None
    if size == 0 or size > MAX_JUNIT_BYTES or _declares_entities(path):
        return None
    outcomes: dict[str, TestOutcome] = {}
    tally = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    failing: list[str] = []
    seen = False
    try:
        # The report is written by untrusted code: no DOCTYPE (so no entity expansion)
        # was checked above, and ElementTree never fetches external resources.
        for _, element in ET.iterparse(path, events=("end",)):  # noqa: S314
            if element.tag == "testsuite":
                seen = True
            if element.tag != "testcase":
                continue
            seen = True
            name = _junit_name(element)
            outcome = _outcome(element)
            tally[outcome] += 1
            if outcome in ("failed", "error") and len(failing) < MAX_NAMES:
                failing.append(name)
            if len(outcomes) < MAX_OUTCOMES:
                outcomes[name] = outcome
            element.clear()
    except (ET.ParseError, OSError):
        return None
    if not seen:
        return None
    return TestCounts(
        passed=tally["passed"],
        failed=tally["failed"],
        errors=tally["error"],
        skipped=tally["skipped"],
        failing=tuple(failing),
        outcomes=outcomes,
        source="junit",
    )
