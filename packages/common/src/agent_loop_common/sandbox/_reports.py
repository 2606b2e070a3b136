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

import os
import re
import stat
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from agent_loop_common.sandbox._result import TestCounts, TestOutcome

__all__ = [
    "MAX_JUNIT_BYTES",
    "MAX_JUNIT_ELEMENTS",
    "MAX_NAMES",
    "MAX_OUTCOMES",
    "JunitRead",
    "failing_name",
    "name_key",
    "parse_pytest_summary",
    "read_junit",
]

MAX_NAMES = 200
"""Most failing names kept from printed output."""
MAX_OUTCOMES = 20_000
"""Most per-test outcomes kept from a JUnit report."""
MAX_JUNIT_BYTES = 16 * 1024 * 1024
"""A larger JUnit file is not parsed (it would be a suite of hundreds of thousands of
tests with their full output)."""
MAX_JUNIT_ELEMENTS = 500_000
"""Most XML elements read from a JUnit report (a test case is one to three)."""

_MAX_NAME_CHARS = 300
_COUNT = re.compile(
    r"(\d+) (subtests )?"
    r"(passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)\b"
)
# The final line: counts then "in 1.23s" (pytest >= 5), optionally inside "=" borders;
# pytest 9 adds subtests: `17 passed, 744 subtests passed in 1.2s`.
_SUMMARY = re.compile(
    r"^=*\s*((?:\d+ (?:subtests )?[a-z]+(?:, )?)+|no tests ran)"
    r"\s+in\s+[\d.]+\s*s(?:econds)?\b.*?=*\s*$"
)
_FAILING = re.compile(r"^(FAILED|ERROR|SUBFAILED\(.*?\)) (\S.*?)(?: - .*)?$")


def parse_pytest_summary(line: str) -> dict[str, int] | None:
    """The counts of pytest's final summary line, or `None` when `line` is not one.

    `==== 1 failed, 2 passed, 1 skipped in 0.12s ====` and the `-q` form without the
    borders both give `{"failed": 1, "passed": 2, "skipped": 1}`; pytest 9's
    `17 passed, 744 subtests passed in 1.2s` gives `{"passed": 17, "subtests_passed": 744}`.
    """
    match = _SUMMARY.match(line.strip())
    if not match:
        return None
    counts: dict[str, int] = {}
    for number, subtests, word in _COUNT.findall(match.group(1)):
        key: str = {"error": "errors", "warning": "warnings"}.get(str(word), str(word))
        if subtests:
            key = f"subtests_{key}"
        counts[key] = counts.get(key, 0) + int(number)
    return counts


def failing_name(line: str) -> str | None:
    """The test named by a `FAILED ...`, `ERROR ...` or `SUBFAILED(...) ...` line of
    pytest's short summary."""
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
        subtests_passed=counts.get("subtests_passed", 0),
        subtests_failed=counts.get("subtests_failed", 0),
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


@dataclass(frozen=True)
class JunitRead:
    """What reading a JUnit report gave: counts, or why there are none."""

    counts: TestCounts | None
    """The report's counts and outcomes; `None` when it was missing or unusable."""
    problem: str = ""
    """Why a report that exists was not used (empty when it was, or when there is none)."""
    forged: bool = False
    """The report is something a test runner never writes (a symbolic link, a device,
    a FIFO): the verdict treats that as evidence that disagrees with itself."""


def _open_report(path: Path) -> tuple[BinaryIO | None, JunitRead | None]:
    """The report opened without following a symbolic link, or why it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, JunitRead(None)
    except OSError as exc:
        if path.is_symlink():
            return None, JunitRead(None, "the JUnit report is a symbolic link", forged=True)
        return None, JunitRead(None, f"the JUnit report cannot be opened ({exc.strerror})")
    handle = os.fdopen(fd, "rb")
    info = os.fstat(handle.fileno())
    if not stat.S_ISREG(info.st_mode):
        handle.close()
        return None, JunitRead(None, "the JUnit report is not a regular file", forged=True)
    if info.st_size == 0:  # the flyte task's script creates it empty: not written
        handle.close()
        return None, JunitRead(None)
    if info.st_size > MAX_JUNIT_BYTES:
        handle.close()
        return None, JunitRead(
            None, f"the JUnit report is larger than {MAX_JUNIT_BYTES // (1024 * 1024)} MB"
        )
    return handle, None


def read_junit(path: Path) -> JunitRead:
    """Counts, failing names and per-test outcomes from a JUnit XML report, or why not.

    The report is written by code under test, so it is read defensively: never through
    a symbolic link (it could point at any host file), only a regular file of at most
    `MAX_JUNIT_BYTES`, no DOCTYPE (entities are how XML bombs work; JUnit needs none),
    streamed with `iterparse` and each finished element dropped from its parent (memory
    stays flat whatever the report's size), at most `MAX_JUNIT_ELEMENTS` elements.
    Blocking: call it in a thread (`asyncio.to_thread`), never on the event loop.
    """
    handle, refusal = _open_report(path)
    if handle is None:
        return refusal or JunitRead(None)
    with handle:
        start = handle.read(64 * 1024).upper()
        if b"<!DOCTYPE" in start or b"<!ENTITY" in start:
            return JunitRead(None, "the JUnit report declares a DOCTYPE")
        handle.seek(0)
        return _stream(handle)


def _stream(handle: BinaryIO) -> JunitRead:
    outcomes: dict[str, TestOutcome] = {}
    tally = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    failing: list[str] = []
    seen = False
    elements = 0
    stack: list[ET.Element] = []
    try:
        # No DOCTYPE (checked by the caller), so no entity expansion; ElementTree never
        # fetches external resources.
        for event, element in ET.iterparse(handle, events=("start", "end")):  # noqa: S314
            if event == "start":
                elements += 1
                if elements > MAX_JUNIT_ELEMENTS:
                    return JunitRead(
                        None, f"the JUnit report has more than {MAX_JUNIT_ELEMENTS} elements"
                    )
                stack.append(element)
                continue
            stack.pop()
            if element.tag == "testsuite":
                seen = True
            if element.tag == "testcase":
                seen = True
                name = _junit_name(element)
                outcome = _outcome(element)
                tally[outcome] += 1
                if outcome in ("failed", "error") and len(failing) < MAX_NAMES:
                    failing.append(name)
                if len(outcomes) < MAX_OUTCOMES:
                    outcomes[name] = outcome
            if stack and stack[-1].tag != "testcase":
                # Done with it: drop it from its parent, so the tree never grows (a test
                # case's own children are read when it ends, then go with it). Each
                # parent holds at most one finished child, so removal is O(1).
                element.clear()
                stack[-1].remove(element)
    except (ET.ParseError, OSError, ValueError):
        return JunitRead(None, "the JUnit report is not valid XML (cut short?)")
    if not seen:
        return JunitRead(None, "the JUnit report holds no test suite")
    return JunitRead(
        TestCounts(
            passed=tally["passed"],
            failed=tally["failed"],
            errors=tally["error"],
            skipped=tally["skipped"],
            failing=tuple(failing),
            outcomes=outcomes,
            source="junit",
        )
    )
