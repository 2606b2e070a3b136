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


def test_a_repository_without_an_instance_says_so_and_names_no_missing_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No merged pull request at all: exit 1 and a sentence (the next command, `eval
    run` on the file the summary used to name, would only find it missing). Pull
    requests decided, none an instance: exit 0 (their reasons are kept), the same kind
    of sentence, and the summary names only the file that exists."""
    emulator = GitHubEmulator("acme", "calc")
    emulator.seed_files({"README.md": "x\n"})
    out = tmp_path / "eval" / "acme__calc" / "instances.jsonl"
    with serve_for_cli(monkeypatch, emulator, tmp_path, **NO_OUTCOMES):
        code = cli.main(["eval", "mine"])
        printed, err = capsys.readouterr()
        assert code == 1
        assert err.splitlines() == [
            "agent-loop eval mine: acme/calc has no pull request merged: nothing to mine; an "
            "instance is a merged pull request that closed an issue and changed tests and "
            f"code (docs/eval.md); {out} is written when the first is found."
        ]
        assert "instances:" not in printed
        assert "skipped:" not in printed
        assert not out.parent.exists()
        assert cli.main(["eval", "mine", "--since", "2030-01-01"]) == 1
        assert "has no pull request merged on or after 2030-01-01" in capsys.readouterr().err

        emulator.seed_history(_pull("one", 1))  # decided: setup_failed, no instance
        code = cli.main(["eval", "mine"])
        printed, err = capsys.readouterr()
        assert code == 0
        assert "Add one(): skipped, setup_failed" in printed
        assert f"skipped:   {out.with_name('instances.skipped.jsonl')}" in printed
        assert "instances:" not in printed
        assert "no instance of acme/calc yet: none of 1 new merged pull request(s) made one" in err
        assert not out.exists()


def test_an_out_that_cannot_be_the_instances_file_is_refused_before_mining(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--out runs` (a folder) and `--out notes.txt/i.jsonl` (under a file) were
    tracebacks, the second after the first pull request was validated."""
    emulator = GitHubEmulator("acme", "calc")
    emulator.seed_files({"README.md": "x\n"})
    emulator.seed_history(_pull("one", 1))
    folder = tmp_path / "runs"
    folder.mkdir()
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    what = "--out names the instances file (JSON lines; the skipped ones go next to it)"
    with serve_for_cli(monkeypatch, emulator, tmp_path / "home", **NO_OUTCOMES):
        emulator.clear_requests()
        for out, said in (
            (folder, f"agent-loop eval mine: --out {folder} is a folder; {what}"),
            (notes / "i.jsonl", f"agent-loop eval mine: --out {notes / 'i.jsonl'}: {notes} "
             f"is a file; {what}"),
        ):  # fmt: skip
            assert cli.main(["eval", "mine", "--out", str(out)]) == 2
            printed, err = capsys.readouterr()
            assert printed == ""
            assert err.splitlines() == [said]
        assert emulator.requests == []
    assert list(folder.iterdir()) == []
    assert notes.read_text() == "mine\n"


def test_a_sidecar_that_is_not_skipped_pull_requests_is_said_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator = GitHubEmulator("acme", "calc")
    emulator.seed_files({"README.md": "x\n"})
    out = tmp_path / "instances.jsonl"
    sidecar = tmp_path / "instances.skipped.jsonl"
    with serve_for_cli(monkeypatch, emulator, tmp_path / "home", **NO_OUTCOMES):
        for content, said in (
            (b'{"foo": 1}\n', f"{sidecar}:1: not a skipped pull request: missing field(s) "),
            (b"\x1f\x8b\x08", f"{sidecar}: not UTF-8 text (byte 1 is not); the sidecar is "),
        ):
            sidecar.write_bytes(content)
            assert cli.main(["eval", "mine", "--out", str(out)]) == 2
            (line,) = capsys.readouterr().err.splitlines()
            assert line.startswith(f"agent-loop eval mine: {said}"), line


def test_a_token_github_refuses_is_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """401 is the credentials, not GitHub failing mid-way: exit 2, as `claims` does."""
    emulator = GitHubEmulator("acme", "calc")
    emulator.seed_files({"README.md": "x\n"})
    emulator.seed_history(_pull("one", 1))
    with serve_for_cli(monkeypatch, emulator, tmp_path, **NO_OUTCOMES):
        monkeypatch.setenv("GITHUB_TOKEN", "ghp_not-a-token")
        code = cli.main(["eval", "mine"])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("agent-loop eval mine: GitHub refused the credentials: GET ")
    assert "(mining only reads: read access to the repository's contents" in err
    assert err.splitlines()[-1] == "nothing was mined"
    assert "instances:" not in out
