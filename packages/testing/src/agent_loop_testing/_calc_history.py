"""A repository history of merged fixes, for the benchmark's tests: the calc sample grown
by three fixes, each with the issue it closed, its code, its tests and canary strings.

`agent-loop eval run` replays the builder on the commit a fix was merged onto and scores
it with the fix's tests; its tests need such a history before any instance is mined. So
`seed_calc_history` commits the calc sample (`CALC_REPO`) and then, one commit each,
`subtract`, `multiply` and `divide` (the last one's tests also check `add` with negative
numbers, a test that already passes at its base), and a later commit. Every fix's code
and tests carry a unique canary line, and so does the later commit, so a test can prove
that none of them reached a model or the sandbox before scoring. The test builds the
instances from it (`agent_loop_eval.diff_files` of `before` and `code` / `tests`): the
test doubles import only `common`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent_loop_testing._e2e import CALC, CALC_REPO, TESTS

if TYPE_CHECKING:
    from agent_loop_testing._emulator import GitHubEmulator

__all__ = ["CalcFix", "CalcHistory", "seed_calc_history"]

_TESTS_FILE = "tests/test_calc.py"
_CODE_FILE = "src/calc.py"


@dataclass(frozen=True)
class CalcFix:
    """One merged fix: the issue it closed and the commit it was merged onto."""

    issue: int
    """The issue's number (what the builder's prompt names)."""
    pull: int
    """The pull request's number (the instance id's `-N`)."""
    title: str
    body: str
    base: str
    """The commit the fix was merged onto."""
    before: dict[str, str]
    """The files the fix changes, at `base`."""
    code: dict[str, str]
    """The fix's code files after it (the gold patch's side)."""
    tests: dict[str, str]
    """The fix's test files after it (the test patch's side)."""
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    gold_canary: str
    """A line only the fix's code has."""
    test_canary: str
    """A line only the fix's tests have."""
    merged: str = ""
    """The commit the fix made."""

    @property
    def canaries(self) -> tuple[str, str]:
        return self.gold_canary, self.test_canary


@dataclass
class CalcHistory:
    """The seeded history: its fixes in order, and the commit after them."""

    fixes: list[CalcFix] = field(default_factory=list[CalcFix])
    later_canary: str = "LATER-COMMIT-CANARY-e61b"
    head: str = ""


def _op(name: str, symbol: str) -> str:
    return f"\n\ndef {name}(a, b):\n    return a {symbol} b\n"


def seed_calc_history(emulator: GitHubEmulator) -> CalcHistory:
    """Commit the calc sample, three fixes and a later commit on the default branch."""
    base = emulator.seed_files(dict(CALC_REPO), message="calc: add()")
    history = CalcHistory()
    code, tests = CALC, TESTS
    steps = [
        (1, "subtract", "-", ["add"], ""),
        (2, "multiply", "*", ["add", "subtract"], ""),
        (
            3,
            "divide",
            "/",
            ["add", "subtract", "multiply"],
            "\n\ndef test_add_negative():\n    assert add(-2, -3) == -5\n",
        ),
    ]
    for issue, name, symbol, existing, extra_test in steps:
        gold = f"# gold-canary-{name}-7d21"
        marker = f"# test-canary-{name}-51c9"
        new_code = code + _op(name, symbol) + f"{gold}\n"
        imports = ", ".join([*existing, name])
        body = tests.split("\n", 1)[1]
        new_tests = (
            f"from calc import {imports}\n{body}"
            + f"\n\ndef test_{name}():\n    {marker}\n    assert {name}(6, 3) == {_expected(symbol)}\n"
            + extra_test
        )
        passing = [f"{_TESTS_FILE}::test_{e}" for e in existing]
        if extra_test:
            passing.append(f"{_TESTS_FILE}::test_add_negative")
        fix = CalcFix(
            issue=issue,
            pull=10 + issue,
            title=f"Add {name}()",
            body=f"We need `{name}(a, b)` in calc.",
            base=base,
            before={_CODE_FILE: code, _TESTS_FILE: tests},
            code={_CODE_FILE: new_code},
            tests={_TESTS_FILE: new_tests},
            fail_to_pass=[f"{_TESTS_FILE}::test_{name}"],
            pass_to_pass=passing,
            gold_canary=gold,
            test_canary=marker,
        )
        base = emulator.push(
            emulator.default_branch,
            {_CODE_FILE: new_code, _TESTS_FILE: new_tests},
            author=emulator.owner,
            message=f"Add {name}() (#{fix.pull})\n\nFixes #{issue}",
        )
        history.fixes.append(_merged(fix, base))
        code, tests = new_code, new_tests
    history.head = emulator.push(
        emulator.default_branch,
        {"NOTES.md": f"{history.later_canary}\n"},
        author=emulator.owner,
        message=f"later work {history.later_canary}",
    )
    return history


def _expected(symbol: str) -> str:
    return {"-": "3", "*": "18", "/": "2"}[symbol]


def _merged(fix: CalcFix, sha: str) -> CalcFix:
    from dataclasses import replace

    return replace(fix, merged=sha)
