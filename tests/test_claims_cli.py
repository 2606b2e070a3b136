"""`agent-loop claims list|release`: the operator's view of the claims, and releasing one
a dead process left behind, through the CLI against the served emulator."""

from __future__ import annotations

import asyncio
import json
import pathlib
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from agent_loop import cli
from agent_loop_common.claims import Claimer, ClaimLost, parse_dibs, parse_target, release_claim
from agent_loop_common.records import TargetKind
from agent_loop_testing import GitHubEmulator, emulator_client, serve_for_cli

RUN = "20261204T120000Z-deadbeef"


@pytest.fixture
def emulator() -> GitHubEmulator:
    em = GitHubEmulator()
    em.seed_files({"README.md": "# widgets\n"})
    em.add_issue("Add a colour", "Widgets need a colour.")
    return em


@pytest.fixture
def home(
    emulator: GitHubEmulator, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[pathlib.Path]:
    with serve_for_cli(monkeypatch, emulator, tmp_path / "home"):
        yield tmp_path / "home"


def _left_behind(emulator: GitHubEmulator, *, ago: timedelta = timedelta(0)) -> None:
    """A claim on issue #1 of run RUN, as a process killed with `kill -9` leaves it (made
    `ago`: a claim of two hours ago has expired)."""

    async def claim() -> None:
        async with emulator_client(emulator) as github:
            claimer = Claimer(
                github,
                deployment="laptop",
                role="builder",
                run_id=RUN,
                clock=lambda: datetime.now(UTC) - ago,
            )
            assert await claimer.claim(TargetKind.ISSUE, 1) is not None

    asyncio.run(claim())


def _note(home: pathlib.Path, pid: int) -> None:
    """The note a local run leaves beside its claim (`note_holder`), for process `pid`."""
    import socket

    (home / "claims").mkdir(parents=True, exist_ok=True)
    note = {"run": RUN, "pid": pid, "host": socket.gethostname()}
    (home / "claims" / f"{RUN}.json").write_text(json.dumps(note))


def _ended_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.usefixtures("quiet_logs")
def test_list_shows_the_live_claim_and_release_refuses_another_process_unless_forced(
    emulator: GitHubEmulator, home: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _cli(capsys, "claims", "list")[1].startswith("No live claims in acme/widgets")
    _left_behind(emulator)
    code, out, _ = _cli(capsys, "claims", "list")
    assert code == 0
    assert "issue #1" in out
    assert "live" in out
    assert RUN in out
    assert "builder @ laptop" in out
    # no process of this machine holds it: whether it still works is not known here
    assert "Release one a dead process left" not in out
    assert "may still be working" in out
    assert "agent-loop claims release issue 1 --force" in out
    code, out, _ = _cli(capsys, "claims", "list", "--json")
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert (row["target"], row["state"], row["run_id"]) == ("issue #1", "live", RUN)
    assert row["process"] == ""  # no process of this machine holds it

    code, _, err = _cli(capsys, "claims", "release", "#1")
    assert code == 1
    assert "not a process of this machine" in err
    assert "--force" in err
    assert emulator.ref_sha("agent-loop/claims/issue-1") is not None

    code, out, _ = _cli(capsys, "claims", "release", "issue", "1", "--force")
    assert code == 0
    assert "its claim ref was deleted" in out
    assert emulator.ref_sha("agent-loop/claims/issue-1") is None
    (comment,) = emulator.comments(1)
    assert [m.op for m in parse_dibs(comment.body)] == ["claim", "release"]
    assert f"released by the operator @{emulator.bot_login}" in comment.body
    assert _cli(capsys, "claims", "list")[1].startswith("No live claims")


@pytest.mark.usefixtures("quiet_logs")
def test_a_claim_whose_local_process_ended_is_released_without_force(
    emulator: GitHubEmulator, home: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    _left_behind(emulator)
    _note(home, os.getpid())  # its process still runs: refused
    code, out, _ = _cli(capsys, "claims", "list")
    assert f"pid {os.getpid()} (running)" in out
    assert "dead process" not in out  # its holder is alive: nothing to release
    assert "claims release" not in out
    code, _, err = _cli(capsys, "claims", "release", "issue 1")
    assert code == 1
    assert "still runs" in err

    pid = _ended_pid()  # the second Ctrl-C, or kill -9
    _note(home, pid)
    out = _cli(capsys, "claims", "list")[1]
    assert f"pid {pid} (ended)" in out
    assert "Release one a dead process left: agent-loop claims release issue 1\n" in out
    code, out, _ = _cli(capsys, "claims", "release", "issue 1")
    assert code == 0, out
    assert emulator.ref_sha("agent-loop/claims/issue-1") is None
    assert not (home / "claims" / f"{RUN}.json").exists()


@pytest.mark.usefixtures("quiet_logs")
def test_an_expired_claim_is_marked_released_and_nothing_to_release_says_so(
    emulator: GitHubEmulator, home: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _cli(capsys, "claims", "release", "pr", "7")[1] == (
        "No claim on pr #7 in acme/widgets: nothing to release.\n"
    )
    _left_behind(emulator, ago=timedelta(hours=2))  # ran out long ago
    code, out, _ = _cli(capsys, "claims", "list", "--all")
    assert "expired" in out
    code, out, _ = _cli(capsys, "claims", "release", "#1")  # no --force needed
    assert code == 0
    assert "its expired claim ref was marked released" in out
    head = emulator.ref_sha("agent-loop/claims/issue-1")
    assert head is not None  # left for the next claimer, as the protocol does
    assert "released" in _cli(capsys, "claims", "list", "--all")[1]


@pytest.mark.parametrize(
    ("words", "kind", "key"),
    [
        (["issue", "5"], "issue", "5"),
        (["#5"], "issue", "5"),
        (["issue#5"], "issue", "5"),
        (["issue-5"], "issue", "5"),
        (["pr", "7"], "pr", "7"),
        (["PR", "#7"], "pr", "7"),
        (["repo", "distiller"], "repo", "distiller"),
    ],
)
def test_targets_are_read_as_people_write_them(words: list[str], kind: str, key: str) -> None:
    target = parse_target(words)
    assert (target.kind.value, target.key) == (kind, key)


@pytest.mark.usefixtures("quiet_logs")
@pytest.mark.parametrize(
    "words",
    [["issue", "-3"], ["-3"], ["#-3"], ["issue", "0"], ["#5x"], ["pr", "7", "extra"], ["issue"]],
)
def test_a_malformed_target_is_refused_not_read_as_another(words: list[str]) -> None:
    """`issue -3` must not release issue #3: a sign is no separator."""
    with pytest.raises(ValueError):
        parse_target(words)


def test_a_target_that_names_nothing_is_a_usage_error(
    home: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _cli(capsys, "claims", "release", "widget", "5")
    assert code == 2
    assert "names no claim" in err


def test_a_forced_release_stops_the_live_run_writing_and_keeps_the_operators_note(
    emulator: GitHubEmulator,
) -> None:
    """`claims release --force` of a run that still works: its next write must find the
    claim gone and write nothing, and its own release must not overwrite the operator's
    note. Before, a run within its first heartbeat (10 minutes) renewed without looking,
    opened its pull request anyway, and then rewrote the comment to say its claim 'had
    already expired and passed to another run'."""

    async def scenario() -> None:
        async with emulator_client(emulator) as github:
            run = Claimer(github, deployment="laptop", role="builder", run_id=RUN)
            claim = await run.claim(TargetKind.ISSUE, 1)
            assert claim is not None
            # what `agent-loop claims release issue 1 --force` does
            await release_claim(
                github, claim.target, operator="@acme (op@host)", now=datetime.now(UTC)
            )
            with pytest.raises(ClaimLost):
                await run.renew(claim)  # right before the run's first write
            assert await run.release(claim, "opened pull request #9") is False

    asyncio.run(scenario())
    assert emulator.ref_sha("agent-loop/claims/issue-1") is None
    (comment,) = emulator.comments(1)
    assert "released by the operator @acme (op@host)" in comment.body
    assert "passed to another run" not in comment.body
    assert [m.op for m in parse_dibs(comment.body)] == ["claim", "release"]


@pytest.mark.usefixtures("quiet_logs")
def test_github_refusing_the_token_or_the_repository_names_the_setting_without_a_traceback(
    emulator: GitHubEmulator,
    home: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: a refused token printed a 40-line traceback, and `claims release` in a
    repository that does not exist said "nothing to release" and exited 0."""
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_not-a-token")
    for argv in (["list"], ["release", "issue", "1"]):
        code, out, err = _cli(capsys, "claims", *argv)
        assert code == 2, (argv, out, err)
        assert "GITHUB_TOKEN" in err
        assert "Traceback" not in err
    monkeypatch.setenv("GITHUB_TOKEN", emulator.bot_token)
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgetz")
    for argv in (["list"], ["release", "issue", "1"]):
        code, out, err = _cli(capsys, "claims", *argv)
        assert code == 2, (argv, out, err)
        assert "404" in err
        assert "AGENT_LOOP_REPO" in err
        assert "nothing to release" not in out


@pytest.mark.usefixtures("quiet_logs")
def test_an_owner_wildcard_needs_repo_and_says_so(
    home: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`AGENT_LOOP_REPOS=acme/*` names no repository by itself: `claims list` crashed
    with a traceback ("expected owner/name") instead of asking for --repo."""
    monkeypatch.delenv("AGENT_LOOP_REPO")
    monkeypatch.setenv("AGENT_LOOP_REPOS", "acme/*")
    code, _, err = _cli(capsys, "claims", "list")
    assert code == 2
    assert "add --repo OWNER/NAME" in err
    assert "Traceback" not in err
    code, out, _ = _cli(capsys, "claims", "list", "--repo", "acme/widgets")
    assert code == 0
    assert out.startswith("No live claims in acme/widgets")
    code, _, err = _cli(capsys, "claims", "list", "--repo", "other/thing")
    assert code == 2
    assert "--repo other/thing is not a configured repository (acme/*)" in err
