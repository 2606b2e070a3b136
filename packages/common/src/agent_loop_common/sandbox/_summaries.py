"""Test counts from what common test runners print, one line at a time.

A repository's test command may be any runner; when it writes no JUnit report, the
counts come from its printed summary. `SummaryScanner` is fed every complete line of
the output as it streams past (the middle of a long output is never kept) and knows the
final lines of:

- **pytest** 8 and 9: `3 failed, 12 passed, 1 skipped in 0.4s`, pytest 9's
  `17 passed, 744 subtests passed in 1.2s`, `no tests ran in 0.01s`, with or without
  the `=` borders; failing names from `FAILED`/`ERROR`/`SUBFAILED(...)` lines;
- **unittest**: `Ran 5 tests in 0.01s` then `OK`, `OK (skipped=1)` or
  `FAILED (failures=1, errors=2)`; failing names from `FAIL: test_x (mod.Class.test_x)`;
- **jest** (`Tests:  1 failed, 5 passed, 6 total`), **vitest** (`Tests  1 failed |
  5 passed (6)`) and **node --test** (`# pass 5` / `ℹ pass 5`, TAP or spec reporter);
- **go test**: `--- FAIL: TestX`, `--- PASS: TestX` (with `-v`) and the per-package
  `ok` / `FAIL` lines (counted as packages when no test lines were printed);
- **cargo test**: `test result: ok. 5 passed; 0 failed; 1 ignored; ...` (summed over
  the test binaries) and `test x::y ... FAILED`.

The first runner whose summary appeared wins, in the order above. Besides the counts,
the scanner remembers the most failures any one summary line reported: a run whose
exit status says "passed" while some summary said otherwise is a disagreement the
verdict refuses (`evidence_disagreements`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent_loop_common.sandbox._reports import (
    MAX_NAMES,
    counts_from_pytest,
    failing_name,
    parse_pytest_summary,
)
from agent_loop_common.sandbox._result import CountsSource, CountUnit, TestCounts

__all__ = ["SummaryScanner"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_MAX_NAME_CHARS = 300

_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s$")
_UNITTEST_END = re.compile(r"^(OK|FAILED|NO TESTS RAN)(?: \((.*)\))?$")
_UNITTEST_FAIL = re.compile(r"^(FAIL|ERROR|UNEXPECTED SUCCESS): (\S+)(?: \(([^)]*)\))?")
_UNITTEST_KEYS = {
    "failures": "failed",
    "errors": "errors",
    "skipped": "skipped",
    "expected failures": "xfailed",
    "unexpected successes": "xpassed",
}

_JEST = re.compile(r"^Tests:\s+(.*\d+ total)\s*$")
_VITEST = re.compile(r"^Tests\s+((?:\d+ \w+(?: \| )?)+)\s*\(\d+\)\s*$")
_COUNT_WORD = re.compile(r"(\d+) (passed|failed|skipped|todo|pending)\b")
_NODE = re.compile(r"^(?:#|ℹ) (tests|pass|fail|skipped|todo|cancelled) (\d+)$")

_GO_TEST = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+)")
_GO_PACKAGE = re.compile(r"^(ok|FAIL) *\t(\S+)")
_CARGO_RESULT = re.compile(
    r"^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; "
)
_CARGO_FAILED = re.compile(r"^test (\S+) \.\.\. FAILED$")


@dataclass
class _Tally:
    """Counts of one runner, accumulated line by line."""

    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    seen: bool = False
    failing: list[str] = field(default_factory=list[str])

    def name(self, name: str) -> None:
        if len(self.failing) < MAX_NAMES:
            self.failing.append(name[:_MAX_NAME_CHARS])

    def counts(self, source: CountsSource, unit: CountUnit = "tests") -> TestCounts:
        return TestCounts(
            passed=self.passed,
            failed=self.failed,
            errors=self.errors,
            skipped=self.skipped,
            failing=tuple(dict.fromkeys(self.failing))[:MAX_NAMES],
            source=source,
            unit=unit,
        )


class SummaryScanner:
    """Reads a test runner's printed lines and keeps its counts and failing names."""

    def __init__(self) -> None:
        self._pytest: dict[str, int] | None = None
        self._pytest_failing: list[str] = []
        self._unittest_ran: int | None = None
        self._unittest = _Tally()
        self._jest = _Tally()
        self._vitest = _Tally()
        self._node = _Tally()
        self._go = _Tally()
        self._go_packages = _Tally()
        self._cargo = _Tally()
        self.summaries = 0
        """Final summary lines seen (any runner)."""
        self.most_failing = 0
        """The most failures and errors any single summary line reported."""

    def _summary(self, failing: int) -> None:
        self.summaries += 1
        self.most_failing = max(self.most_failing, failing)

    def feed(self, raw: str) -> None:
        """Read one complete line of output (without its line break)."""
        line = _ANSI.sub("", raw).rstrip()
        if self._unittest_ran is not None and self._unittest_line(line.strip()):
            return  # unittest's `FAILED (failures=1)` is not a pytest failing name
        name = failing_name(line)
        if name is not None:
            if len(self._pytest_failing) < MAX_NAMES:
                self._pytest_failing.append(name)
            return
        counts = parse_pytest_summary(line)
        if counts is not None:
            self._pytest = counts
            self._summary(counts.get("failed", 0) + counts.get("errors", 0))
            return
        stripped = line.strip()
        if self._unittest_line(stripped) or self._js_line(stripped):
            return
        self._go_line(line)
        self._cargo_line(stripped)

    def _unittest_line(self, line: str) -> bool:
        ran = _UNITTEST_RAN.match(line)
        if ran:
            self._unittest_ran = int(ran.group(1))
            return True
        fail = _UNITTEST_FAIL.match(line)
        if fail:
            where = fail.group(3) or ""
            self._unittest.name(where if "." in where else f"{where}.{fail.group(2)}".strip("."))
            return True
        end = _UNITTEST_END.match(line)
        if end and self._unittest_ran is not None:
            tally = self._unittest
            tally.seen = True
            found: dict[str, int] = {}
            for part in (end.group(2) or "").split(","):
                key, _, value = part.strip().partition("=")
                if key in _UNITTEST_KEYS and value.isdigit():
                    found[_UNITTEST_KEYS[key]] = int(value)
            tally.failed = found.get("failed", 0) + found.get("xpassed", 0)
            tally.errors = found.get("errors", 0)
            tally.skipped = found.get("skipped", 0) + found.get("xfailed", 0)
            tally.passed = max(0, self._unittest_ran - tally.failed - tally.errors - tally.skipped)
            self._summary(tally.failed + tally.errors)
            self._unittest_ran = None
            return True
        return False

    def _js_line(self, line: str) -> bool:
        for pattern, tally in ((_JEST, self._jest), (_VITEST, self._vitest)):
            match = pattern.match(line)
            if match:
                words = dict.fromkeys(("passed", "failed", "skipped", "todo", "pending"), 0)
                for number, word in _COUNT_WORD.findall(match.group(1)):
                    words[word] += int(number)
                tally.seen = True
                tally.passed, tally.failed = words["passed"], words["failed"]
                tally.skipped = words["skipped"] + words["todo"] + words["pending"]
                self._summary(tally.failed)
                return True
        node = _NODE.match(line)
        if node:
            word, number = node.group(1), int(node.group(2))
            tally = self._node
            tally.seen = True
            if word == "pass":
                tally.passed = number
            elif word == "fail":
                tally.failed = number
                self._summary(number)
            elif word in ("skipped", "todo"):
                tally.skipped += number
            elif word == "cancelled":
                tally.errors = number
            return True
        return False

    def _go_line(self, line: str) -> None:
        test = _GO_TEST.match(line)
        if test:
            verb, name = test.groups()
            tally = self._go
            tally.seen = True
            if verb == "PASS":
                tally.passed += 1
            elif verb == "SKIP":
                tally.skipped += 1
            else:
                tally.failed += 1
                tally.name(name)
            return
        package = _GO_PACKAGE.match(line)
        if package:
            tally = self._go_packages
            tally.seen = True
            if package.group(1) == "ok":
                tally.passed += 1
            else:
                tally.failed += 1
                tally.name(package.group(2))
                self._summary(1)

    def _cargo_line(self, line: str) -> None:
        failed = _CARGO_FAILED.match(line)
        if failed:
            self._cargo.name(failed.group(1))
            return
        result = _CARGO_RESULT.match(line)
        if result:
            tally = self._cargo
            tally.seen = True
            tally.passed += int(result.group(2))
            tally.failed += int(result.group(3))
            tally.skipped += int(result.group(4))
            self._summary(int(result.group(3)))

    def counts(self) -> TestCounts | None:
        """The counts of the first runner that printed a summary, or `None`."""
        if self._pytest is not None:
            return counts_from_pytest(self._pytest, self._pytest_failing)
        runners: tuple[tuple[_Tally, CountsSource], ...] = (
            (self._unittest, "unittest"),
            (self._jest, "jest"),
            (self._vitest, "vitest"),
            (self._node, "node"),
            (self._go, "go"),
            (self._cargo, "cargo"),
        )
        for tally, source in runners:
            if tally.seen:
                return tally.counts(source)
        if self._go_packages.seen:
            return self._go_packages.counts("go", unit="packages")
        return None
