"""`agent-loop eval mine` takes an issue's text as it was when the fix's pull request was
opened, never a later one that may hint at the fix.

A maintainer often edits an issue once its fix is under way or merged ("fixed in #4:
the bug was `a - b`"). Mining took the issue's text as it reads today, so such an edit
reached the problem statement, and the model under evaluation was told the fix. Now
the title is the one before any later `renamed` event and the body the last revision
of its edit history before the pull request was opened (GitHub's GraphQL
`userContentEdits`, which the emulator serves as GitHub does). When that text cannot
be told, here because the revision was deleted from the history, the pull request is
skipped as `edited_after_fix` rather than mined with a text that may leak the fix.

Through the CLI: the emulator served on loopback, the tests of the instance validated
in the real bubblewrap sandbox, nothing written to GitHub.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_loop import cli
from agent_loop_eval import SkipReason, read_instances, read_skipped
from agent_loop_testing import (
    GitHubEmulator,
    HistoryEdit,
    HistoryIssue,
    HistoryMerge,
    HistoryPull,
    bwrap_e2e_marks,
    serve_for_cli,
)

pytestmark = bwrap_e2e_marks()

TEST_COMMAND = f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:agent_loop_hermetic"
PYPROJECT = '[tool.pytest.ini_options]\npythonpath = ["src"]\n'
CALC = "def add(a, b):\n    return a - b\n"
CALC_FIXED = "def add(a, b):\n    return a + b\n"
TESTS = "def test_nothing():\n    assert True\n"
TESTS_ADD = TESTS + "\n\nfrom calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
HINT = "the bug was `a - b` in calc.py, now `a + b`"


def test_the_issue_text_is_the_one_before_the_fix_and_a_lost_one_is_skipped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator = GitHubEmulator()
    emulator.seed_files(
        {"pyproject.toml": PYPROJECT, "src/calc.py": CALC, "tests/test_calc.py": TESTS}
    )
    history = emulator.seed_history(
        [
            HistoryIssue("add", "add() subtracts", "add(2, 3) gives -1."),
            # The author's own edit before the fix: part of the task.
            HistoryEdit("add", body="add(2, 3) gives -1, add(0, 0) gives 0."),
            HistoryPull(
                "fix-add",
                "Fix add()",
                {"src/calc.py": CALC_FIXED, "tests/test_calc.py": TESTS_ADD},
                closes=("add",),
                merge=False,
            ),
            # Once the fix is known: a hint in the body, and in the title.
            HistoryEdit("add", body=f"add(2, 3) gives -1. Fixed: {HINT}."),
            HistoryEdit("add", title="add() subtracts (fixed: use +)"),
            HistoryMerge("fix-add"),
            HistoryEdit("add", body=f"Fixed in the release: {HINT}."),
            HistoryIssue("docs", "calc has no docstring", "Please document it."),
            HistoryPull(
                "fix-docs",
                "Document calc",
                {
                    "src/calc.py": '"""calc."""\n' + CALC_FIXED,
                    "tests/test_calc.py": TESTS_ADD + "\n\ndef test_doc():\n"
                    "    import calc\n\n    assert calc.__doc__\n",
                },
                closes=("docs",),
            ),
            HistoryEdit("docs", body="Done: a module docstring in calc.py."),
        ]
    )
    # Someone deletes the text the issue had when its fix was opened from its history.
    emulator.delete_issue_revision(history.numbers["docs"], 0, by=emulator.owner)
    out = tmp_path / "instances.jsonl"
    with serve_for_cli(
        monkeypatch,
        emulator,
        tmp_path / "home",
        AGENT_LOOP_SANDBOX="bwrap",
        AGENT_LOOP_TEST_COMMAND=TEST_COMMAND,
        AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS="120",
    ):
        emulator.clear_requests()
        code = cli.main(["eval", "mine", "--out", str(out)])
        printed, err = capsys.readouterr()
    assert code == 0, err

    (instance,) = read_instances(out)
    assert instance.pull_number == history.numbers["fix-add"]
    assert instance.problem_statement == "add() subtracts\nadd(2, 3) gives -1, add(0, 0) gives 0.\n"
    assert "fixed" not in instance.problem_statement.lower()
    assert instance.FAIL_TO_PASS == ["tests/test_calc.py::test_add"]

    (skipped,) = read_skipped(out.with_name("instances.skipped.jsonl"))
    assert skipped.pull_number == history.numbers["fix-docs"]
    assert skipped.reason is SkipReason.EDITED_AFTER_FIX
    assert "deleted from its history" in skipped.detail
    assert f"skipped, edited_after_fix (#{history.numbers['docs']}'s text" in printed
    assert {r.method for r in emulator.requests} <= {"GET", "POST"}
    assert all(r.path.endswith("/graphql") for r in emulator.requests if r.method == "POST")
