"""A history to try `agent-loop eval` on: `acme/calc` grown by six merged pull requests.

`agent-loop emulator serve --seed history` serves it, so a person can mine, run and
compare on their own machine (docs/eval.md, "Try it on the emulator"), and
`tests/test_eval_docs.py` walks that page as written. Every step goes through the
emulator's own pull request operations (`seed_history`), so merge commits, the pull
requests' files and the issues they close are what GitHub would report. Of the six
merged pull requests, `eval mine` keeps exactly three:

| pull request | closes | changes | `eval mine` |
|---|---|---|---|
| Add subtract() | "Add subtract()" | code and tests | instance |
| Add negate() | nothing | code and tests | `no_linked_issue` |
| Add multiply() | "Add multiply()" | code and tests | instance |
| Document calc | "Document calc" | README and a docstring | `no_test_change` |
| Test add() with negative numbers | "add() with negative numbers is untested" | a test that passes at its base, and a docstring | `nothing_fails_before` |
| Add divide() | "Add divide()" | code and tests | instance |

then a release note pushed straight to the default branch (later work, after every base).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_loop_testing._emulator_history import (
    History,
    HistoryIssue,
    HistoryPull,
    HistoryPush,
    seed_history,
)

if TYPE_CHECKING:
    from agent_loop_testing._emulator import GitHubEmulator

__all__ = ["EVAL_HISTORY_OPS", "EVAL_HISTORY_REPO", "seed_eval_history"]

EVAL_HISTORY_REPO = "acme/calc"
"""The repository the history is seeded as."""

EVAL_HISTORY_OPS = {"subtract": "a - b", "multiply": "a * b", "divide": "a / b"}
"""The three fixes that make instances: each adds `def <name>(a, b): return <body>` to
`src/calc.py`, in this order, and its test in `tests/test_<name>.py`."""

_PYPROJECT = """\
[project]
name = "calc"
version = "0.1.0"
requires-python = ">=3.11"

[tool.pytest.ini_options]
pythonpath = ["src"]
testpaths = ["tests"]
"""
_CALC = '"""A tiny calculator."""\n\n\ndef add(a, b):\n    return a + b\n'
_TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
_EXPECTED = {"subtract": "2", "multiply": "15", "divide": "1.25"}
"""What each operation gives for (5, 3) ... (5, 4) for divide."""
_ARGS = {"subtract": "5, 3", "multiply": "5, 3", "divide": "5, 4"}


def _with_op(code: str, name: str) -> str:
    return code + f"\n\ndef {name}(a, b):\n    return {EVAL_HISTORY_OPS[name]}\n"


def _test_of(name: str) -> str:
    return (
        f"from calc import {name}\n\n\ndef test_{name}():\n"
        f"    assert {name}({_ARGS[name]}) == {_EXPECTED[name]}\n"
    )


def seed_eval_history(emulator: GitHubEmulator) -> History:
    """Seed `emulator` (named `acme/calc`) with the calc project and play its history."""
    emulator.seed_files(
        {
            "pyproject.toml": _PYPROJECT,
            "README.md": "# calc\n\nA tiny calculator.\n",
            "src/calc.py": _CALC,
            "tests/test_calc.py": _TESTS,
        },
        message="calc: add()",
    )
    code = _CALC
    steps: list[HistoryIssue | HistoryPull | HistoryPush] = []

    def fix(name: str, body: str) -> None:
        nonlocal code
        code = _with_op(code, name)
        steps.append(HistoryIssue(name, f"Add {name}()", body))
        steps.append(
            HistoryPull(
                f"pr-{name}",
                f"Add {name}()",
                {"src/calc.py": code, f"tests/test_{name}.py": _test_of(name)},
                closes=(name,),
            )
        )

    fix("subtract", "calc needs `subtract(a, b)`: `subtract(5, 3)` is 2.")
    steps.append(
        HistoryPull(
            "negate",
            "Add negate()",
            {
                "src/negate.py": "def negate(x):\n    return -x\n",
                "tests/test_negate.py": "from negate import negate\n\n\n"
                "def test_negate():\n    assert negate(2) == -2\n",
            },
        )
    )
    fix("multiply", "calc needs `multiply(a, b)`: `multiply(5, 3)` is 15.")
    documented = code.replace('"""A tiny calculator."""', '"""A tiny calculator: see README."""')
    steps += [
        HistoryIssue("doc", "Document calc", "The README should list the operations."),
        HistoryPull(
            "pr-doc",
            "Document calc",
            {
                "README.md": "# calc\n\nadd, subtract and multiply two numbers.\n",
                "src/calc.py": documented,
            },
            closes=("doc",),
        ),
    ]
    code = documented
    negative = _TESTS + "\n\ndef test_add_negative():\n    assert add(-2, -3) == -5\n"
    checked = code.replace("def add(a, b):\n", 'def add(a, b):\n    """a + b."""\n')
    steps += [
        HistoryIssue("neg", "add() with negative numbers is untested"),
        HistoryPull(
            "pr-neg",
            "Test add() with negative numbers",
            {"src/calc.py": checked, "tests/test_calc.py": negative},
            closes=("neg",),
        ),
    ]
    code = checked
    fix("divide", "calc needs `divide(a, b)`: `divide(5, 4)` is 1.25.")
    steps.append(HistoryPush("release", "Release 0.2", {"CHANGES.md": "0.2: divide()\n"}))
    return seed_history(emulator, steps)
