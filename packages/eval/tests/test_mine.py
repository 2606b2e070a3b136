"""`Miner` on the emulator: the skips decided before any test runs, the trust rule of
live work on the linked issues, and a deterministic flaky test in the plain subprocess.
(`tests/test_eval_mine.py` drives the CLI over a whole history in the real sandbox.)"""

from __future__ import annotations

import sys
from pathlib import Path

from agent_loop_common.sandbox import DisabledSandbox, PlainSubprocessSandbox, SandboxLimits
from agent_loop_eval import MineLimits, Miner, SkipReason
from agent_loop_testing import (
    GitHubEmulator,
    HistoryIssue,
    HistoryPull,
    emulator_client,
    emulator_settings,
)


def change(name: str) -> dict[str, str | bytes | None]:
    """A code file and a test file of their own: each pull request changes something."""
    return {f"src/{name}.py": f"{name} = 1\n", f"tests/test_{name}.py": "def test():\n    pass\n"}


PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:agent_loop_hermetic"


def _emulator() -> GitHubEmulator:
    emulator = GitHubEmulator("acme", "calc")
    emulator.seed_files({"src/calc.py": "def add(a, b):\n    return a - b\n", "README.md": "x\n"})
    emulator.add_user("maria", permission="maintain")
    emulator.add_user("sam", permission="read")
    return emulator


async def _mine(emulator: GitHubEmulator, tmp_path: Path, **settings: object) -> dict[int, str]:
    config = emulator_settings(emulator, tmp_path, **settings)
    async with emulator_client(emulator) as github:
        miner = Miner(github, config, DisabledSandbox(), MineLimits(max_files=3))
        pulls = await miner.candidates(since=None, known=(), limit=None)
        found: dict[int, str] = {}
        async for mined in miner.mine(pulls):
            assert mined.skipped is not None
            found[mined.pull.number] = f"{mined.skipped.reason.value}: {mined.skipped.detail}"
        return found


async def test_what_is_decided_before_the_tests_run(tmp_path: Path) -> None:
    emulator = _emulator()
    emulator.push("feature", {"x.py": "x\n"}, author="maria", message="base")
    h = emulator.seed_history(
        [
            HistoryIssue("bug", "add() subtracts"),
            HistoryIssue("by-sam", "Do it", author="sam"),
            HistoryIssue("edited", "Fix add", "as written"),
            HistoryIssue("labelled", "From sam, approved", author="sam"),
            HistoryPull("big", "Big", {**change("big"), "a": "1\n", "b": "2\n"}, closes=("bug",)),
            HistoryPull("sam", "Sam's", change("sam"), closes=("by-sam",)),
            HistoryPull("edit", "Edited", change("edit"), closes=("edited",)),
            HistoryPull("label", "Labelled", change("label"), closes=("labelled",)),
            HistoryPull(
                "binary",
                "Logo",
                {**change("logo"), "logo.png": b"\x89PNG\xff\x00"},
                closes=("bug",),
            ),
            HistoryPull("pr-ref", "Refers to a PR", change("ref"), body="Fixes #5"),
        ]
    )
    emulator.edit_issue(h.numbers["edited"], body="rewritten", by="sam")
    emulator.label_issue(h.numbers["labelled"], "agent-ok", actor="maria")
    found = await _mine(emulator, tmp_path, trusted_label="agent-ok")
    n = h.numbers
    assert found[n["big"]].startswith("too_large: 4 files")
    assert found[n["sam"]].startswith(f"untrusted_issue: #{n['by-sam']} is not from a trusted")
    assert found[n["edit"]] == (
        f"untrusted_issue: #{n['edited']} was last edited by @sam, who is below the trust "
        "rule (needs write)"
    )
    # The label applied by a maintainer approves sam's issue: the tests decide next, and
    # with the sandbox off they cannot.
    assert found[n["label"]].startswith("setup_failed: the sandbox is off")
    assert found[n["binary"]] == "binary_change: logo.png is not UTF-8 text"
    assert found[n["pr-ref"]].startswith("no_linked_issue")


async def test_a_flaky_test_is_dropped_and_the_pull_request_skipped(tmp_path: Path) -> None:
    """The new test passes on every other run (a counter file outside the tree, which
    only the unisolated plain subprocess can reach): it is never kept."""
    counter = tmp_path / "counter"
    flaky_test = (
        "import pathlib\n\nfrom calc import sub\n\n\ndef test_sub():\n"
        f"    path = pathlib.Path({str(counter)!r})\n"
        "    runs = int(path.read_text()) + 1 if path.exists() else 1\n"
        "    path.write_text(str(runs))\n"
        "    assert sub(3, 1) == 2 and runs % 2 == 1\n"
    )
    emulator = _emulator()
    emulator.seed_files({"pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["src"]\n'})
    h = emulator.seed_history(
        [
            HistoryIssue("need-sub", "Need sub()"),
            HistoryPull(
                "sub",
                "Add sub()",
                {
                    "src/calc.py": "def sub(a, b):\n    return a - b\n",
                    "tests/test_sub.py": flaky_test,
                },
                closes=("need-sub",),
            ),
        ]
    )
    config = emulator_settings(emulator, tmp_path, test_command=PYTEST)
    async with emulator_client(emulator) as github:
        miner = Miner(github, config, PlainSubprocessSandbox(SandboxLimits()))
        (pull,) = await miner.candidates(since=None, known=(), limit=None)
        mined = await miner.mine_pull(pull)
    assert mined.pull.number == h.numbers["sub"]
    assert mined.skipped is not None
    assert mined.skipped.reason is SkipReason.FLAKY
    assert mined.skipped.detail == "flaky: tests/test_sub.py::test_sub"
    assert counter.read_text() == "2"  # it ran twice after the fix, never before
