"""`agent-loop eval mine`'s options on a served emulator, with a test command that
reports no test outcomes (every candidate that reaches validation is then
`setup_failed`, at once, which is enough to see which pull requests each run takes):
`--since`, `--limit`, `--repo`, the default file; and a run with the sandbox off is
refused before anything is decided."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from agent_loop import cli
from agent_loop_eval import SkipReason, read_skipped
from agent_loop_testing import (
    GitHubEmulator,
    HistoryIssue,
    HistoryPull,
    bwrap_e2e_marks,
    serve_for_cli,
)

pytestmark = bwrap_e2e_marks()
NO_OUTCOMES = {"AGENT_LOOP_SANDBOX": "bwrap", "AGENT_LOOP_TEST_COMMAND": "true"}


def _pull(name: str, days: int) -> list[HistoryIssue | HistoryPull]:
    return [
        HistoryIssue(f"issue-{name}", f"Need {name}()", wait=timedelta(days=days)),
        HistoryPull(
            name,
            f"Add {name}()",
            {f"src/{name}.py": f"{name} = 1\n", f"tests/test_{name}.py": "def test(): pass\n"},
            closes=(f"issue-{name}",),
        ),
    ]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = cli.main(["eval", "mine", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_since_limit_and_the_default_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator = GitHubEmulator("acme", "calc")  # the clock starts on 2026-01-01
    emulator.seed_files({"README.md": "x\n"})
    emulator.seed_history([*_pull("one", 1), *_pull("two", 30), *_pull("three", 1)])
    with serve_for_cli(monkeypatch, emulator, tmp_path, **NO_OUTCOMES):
        out = _run(capsys, "--since", "2026-01-15", "--limit", "1")
        assert "1 new merged pull request(s) to mine (0 known)" in out
        assert "Add two(): skipped, setup_failed (" in out
        default = tmp_path / "eval" / "acme__calc" / "instances.skipped.jsonl"
        assert [s.reason for s in read_skipped(default)] == [SkipReason.SETUP_FAILED]
        out = _run(capsys, "--repo", "acme/calc")
        assert "2 new merged pull request(s) to mine (1 known)" in out
        assert "Add one()" in out.split("Add three()")[0]  # oldest merge first
        out = _run(capsys, "--since", "2030-01-01T00:00:00Z")
        assert "0 new merged pull request(s) to mine (3 known)" in out


def test_the_sandbox_off_is_refused_and_nothing_is_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator = GitHubEmulator("acme", "calc")
    emulator.seed_files({"README.md": "x\n"})
    emulator.seed_history(_pull("one", 1))
    with serve_for_cli(monkeypatch, emulator, tmp_path, AGENT_LOOP_SANDBOX="off"):
        code = cli.main(["eval", "mine"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "AGENT_LOOP_SANDBOX=off" in err
    assert out == ""
    assert not (tmp_path / "eval").exists()  # no sidecar: the next run mines #2 for real


def test_a_repository_github_does_not_know(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator = GitHubEmulator("acme", "calc")
    emulator.seed_files({"README.md": "x\n"})
    with serve_for_cli(monkeypatch, emulator, tmp_path, **NO_OUTCOMES):
        monkeypatch.setenv("AGENT_LOOP_REPO", "acme/gone")
        code = cli.main(["eval", "mine"])
    _, err = capsys.readouterr()
    assert code == 1
    assert "GitHub answered 404" in err
    assert "nothing was mined" in err
    assert "mined so far" not in err
