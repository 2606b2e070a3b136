"""What the sandbox keeps of a command's output, and the test counts it reads from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_loop_common.sandbox import OutputExcerpt, TestCounts
from agent_loop_common.sandbox._capture import OutputCapture
from agent_loop_common.sandbox._reports import (
    MAX_NAMES,
    failing_name,
    name_key,
    parse_pytest_summary,
    read_junit,
)


def test_short_output_is_kept_whole() -> None:
    capture = OutputCapture(head_bytes=16, tail_bytes=32)
    capture.feed(b"hello\n")
    excerpt = capture.excerpt()
    assert (excerpt.head, excerpt.tail, excerpt.total_bytes) == ("hello\n", "", 6)
    assert excerpt.text == "hello\n"


def test_megabytes_of_output_keep_only_head_and_tail() -> None:
    capture = OutputCapture(head_bytes=8 * 1024, tail_bytes=24 * 1024)
    line = b"x" * 99 + b"\n"
    for i in range(50_000):  # 5 MB in 100-byte lines, fed in odd-sized chunks
        capture.feed(line[: i % 100] + line[i % 100 :])
    capture.feed(b"THE END\n")
    excerpt = capture.excerpt()
    assert excerpt.total_bytes == 5_000_008
    assert len(excerpt.head.encode()) == 8 * 1024
    assert len(excerpt.tail.encode()) == 24 * 1024
    assert excerpt.tail.endswith("THE END\n")
    assert excerpt.omitted_bytes == 5_000_008 - 32 * 1024
    assert "[... 4967240 bytes omitted ...]" in excerpt.text
    assert len(capture._head) + len(capture._tail) == 32 * 1024  # bounded memory


def test_failing_lines_in_the_middle_are_kept_even_when_the_text_is_not() -> None:
    capture = OutputCapture(head_bytes=10, tail_bytes=10)
    capture.feed(b"noise\n" * 1000)
    capture.feed(b"FAILED tests/test_a.py::test_one - Assert")  # split across chunks
    capture.feed(b"ionError: 1 != 2\nERROR tests/test_b.py::test_two\n")
    capture.feed(b"noise\n" * 1000)
    capture.feed(b"1 failed, 3 passed, 1 error in 0.52s")  # no final newline
    capture.finish()
    counts = capture.printed_counts()
    assert counts is not None
    assert counts.failing == ("tests/test_a.py::test_one", "tests/test_b.py::test_two")
    assert (counts.failed, counts.passed, counts.errors, counts.source) == (1, 3, 1, "pytest")


def test_failing_names_are_capped_and_long_lines_do_not_grow_memory() -> None:
    capture = OutputCapture()
    for i in range(MAX_NAMES + 50):
        capture.feed(f"FAILED t.py::test_{i}\n".encode())
    capture.feed(b"y" * 1_000_000)  # one enormous line
    capture.feed(b"\n2 passed in 1s\n")
    counts = capture.printed_counts()
    assert counts is not None
    assert len(counts.failing) == MAX_NAMES
    assert len(capture._line) == 0


def test_invalid_utf8_is_replaced_not_raised() -> None:
    capture = OutputCapture()
    capture.feed(b"caf\xc3")
    capture.feed(b"\xa9 \xff\n")
    assert capture.excerpt().text == "café \ufffd\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "===== 3 failed, 12 passed, 1 skipped in 0.40s =====",
            {"failed": 3, "passed": 12, "skipped": 1},
        ),
        ("3 failed, 12 passed, 1 skipped in 0.4s", {"failed": 3, "passed": 12, "skipped": 1}),
        ("12 passed, 2 warnings in 3.01s", {"passed": 12, "warnings": 2}),
        ("1 error in 0.12s", {"errors": 1}),
        ("2 errors in 0.12s", {"errors": 2}),
        (
            "1 passed, 1 xfailed, 1 xpassed, 4 deselected in 1.00s",
            {
                "passed": 1,
                "xfailed": 1,
                "xpassed": 1,
                "deselected": 4,
            },
        ),
        ("============ no tests ran in 0.01s ============", {}),
        ("5 passed in 1.2 seconds", {"passed": 5}),
    ],
)
def test_pytest_summary_lines(line: str, expected: dict[str, int]) -> None:
    assert parse_pytest_summary(line) == expected


@pytest.mark.parametrize(
    "line",
    ["tests passed in the end", "3 failed", "collected 12 items", "", "FAILED t.py::x - y"],
)
def test_lines_that_are_not_a_summary(line: str) -> None:
    assert parse_pytest_summary(line) is None


def test_failing_name_lines() -> None:
    assert failing_name("FAILED tests/x.py::test_y - assert 1 == 2") == "tests/x.py::test_y"
    assert failing_name("FAILED tests/x.py::T::test_y[a b]") == "tests/x.py::T::test_y[a b]"
    assert failing_name("ERROR tests/x.py") == "tests/x.py"
    assert failing_name("PASSED tests/x.py::test_y") is None
    assert failing_name("  FAILED indented") is None


def test_pytest_and_junit_names_meet_on_one_key() -> None:
    assert name_key("tests/test_x.py::TestA::test_y[1.5-a/b]") == name_key(
        "tests.test_x.TestA::test_y[1.5-a/b]"
    )
    assert name_key("tests/test_x.py::test_y") == "tests.test_x.test_y"
    assert name_key("pkg/tests/test_x.py") == "pkg.tests.test_x"


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="1" tests="5">
<testcase classname="tests.test_a" name="test_ok" time="0.001"/>
<testcase classname="tests.test_a" name="test_ok_too" time="0.001"/>
<testcase classname="tests.test_a" name="test_bad" time="0.001"><failure message="x">tb</failure></testcase>
<testcase classname="tests.test_a.TestB" name="test_setup[p]" time="0"><error message="e"/></testcase>
<testcase classname="tests.test_a" name="test_skip" time="0"><skipped message="s"/></testcase>
</testsuite></testsuites>
"""


def test_junit_reports_give_counts_names_and_outcomes(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(JUNIT)
    counts = read_junit(report).counts
    assert counts is not None
    assert (counts.passed, counts.failed, counts.errors, counts.skipped) == (2, 1, 1, 1)
    assert counts.failing == ("tests.test_a::test_bad", "tests.test_a.TestB::test_setup[p]")
    assert counts.outcomes == {
        "tests.test_a::test_ok": "passed",
        "tests.test_a::test_ok_too": "passed",
        "tests.test_a::test_bad": "failed",
        "tests.test_a.TestB::test_setup[p]": "error",
        "tests.test_a::test_skip": "skipped",
    }
    assert counts.source == "junit"
    assert counts.summary() == "1 failed, 2 passed, 1 skipped, 1 error"


@pytest.mark.parametrize(
    "text",
    [
        "",
        JUNIT[: len(JUNIT) // 2],  # killed while writing
        "not xml at all",
        "<root/>",
        '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaa">]><testsuite><testcase name="&a;"/></testsuite>',
    ],
)
def test_unusable_junit_reports_are_ignored(tmp_path: Path, text: str) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(text)
    assert read_junit(report).counts is None
    assert read_junit(tmp_path / "missing.xml").counts is None


def test_counts_and_excerpts_are_plain_values() -> None:
    counts = TestCounts(passed=12)
    assert counts.summary() == "12 passed"
    assert counts.total == 12
    assert TestCounts().summary() == "no tests ran"
    excerpt = OutputExcerpt(head="abc", tail="xyz", total_bytes=100, omitted_bytes=94)
    assert excerpt.text == "abc\n[... 94 bytes omitted ...]\nxyz"
    assert excerpt.last(4) == "\nxyz"
