"""`agent-loop demo` end to end: the story goes as scripted, and what it makes is real.

The demo runs the real agents in Flyte local mode against the served emulator with the
replayed model. These tests check its account (each tick's outcome, the results it
prints, the reports it points at) and the work itself: the code on every PR head passes
the sample project's own tests.
"""

from __future__ import annotations

import asyncio
import io
import pathlib
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from agent_loop import cli
from agent_loop.demo import DEMO_MARKER, DemoResult, run_demo
from agent_loop_common.sandbox import BwrapSandbox, DockerSandbox, _select
from agent_loop_testing import GitHubEmulator, emulator_client

pytestmark = pytest.mark.slow


DEMO_STARTED: list[datetime] = []
"""When the module's demo started (UTC, to the second), set by the fixture."""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[DemoResult, str]:
    out = io.StringIO()
    DEMO_STARTED.append(datetime.now(UTC).replace(microsecond=0))
    result = run_demo(tmp_path_factory.mktemp("demo") / "home", out=out)
    return result, out.getvalue()


def test_the_emulator_keeps_the_real_time(demo: tuple[DemoResult, str]) -> None:
    """The demo's GitHub stamps its writes with the real time, as `emulator serve` does:
    an emulated clock set an hour back made the report read "issue to PR 59m53s" for a
    demo of five seconds."""
    emulator = demo[0].emulator
    assert emulator is not None
    issues = emulator.issues()
    times = [i.created_at for i in issues]
    times += [c.created_at for i in issues for c in emulator.comments(i.number)]
    assert DEMO_STARTED[0] <= min(times) <= max(times) <= datetime.now(UTC)


def test_the_story_goes_as_scripted(demo: tuple[DemoResult, str]) -> None:
    result, text = demo
    assert result.problems == []
    assert result.ok
    outcomes = [(agent, tick.outcome, tick.target_label) for agent, tick in result.ticks]
    assert outcomes == [
        ("builder", "opened_pr", "issue #1"),
        ("builder", "opened_pr", "issue #2"),
        ("builder", "opened_issues", "issue #3"),
        ("builder", "opened_pr", "issue #6"),
        ("builder", "idle", ""),
        ("reviewer", "pushed_fix", "PR #4"),
        ("reviewer", "reviewed_clean", "PR #5"),
        ("reviewer", "reviewed_clean", "PR #9"),
        ("reviewer", "idle", ""),
        ("distiller", "distilled", "repo"),
    ]
    # progress as it happened, then the results
    assert "tests:   the sample project's pytest suite, in " in text
    assert (
        "tests     REJECTED: 1 failed, 4 passed (base: 2 passed) "
        "(tests.test_inventory::test_remove_all_of_it)"
    ) in text
    assert "builder   run_tests  -k remove" in text
    assert "tests     passed: 5 passed (base: 2 passed)" in text
    assert "builder: opened_issues on issue #3 -> #6, #7, #8" in text
    assert "#7 'Export an inventory to CSV' [open]  depends on #6" in text
    # the split spec is closed with its sub-issues; the bug, by its merged fix, is not
    closed = [line.strip() for line in text.splitlines() if "closed with the list" in line]
    assert closed == ["#3 'Spec: CSV import and export' was closed with the list of sub-issues"]
    assert "+        return round(total, 2)" in text  # the review fix, in PR #4's diff
    assert "reply to comment" in text
    assert "Lessons the distiller learned (2)" in text
    # the evidence is in the pull request bodies (PR #5 is the bug fix)
    assert "- Result: 5 passed (base: 2 passed)" in text
    assert "- Fail-to-pass: `tests.test_inventory::test_remove_all_of_it`" in text
    assert re.search(r"^\s*runs recorded\s+8\s", text, re.M)  # the metrics table, any width
    # it says plainly that the model was replayed, and how to use a real one
    assert "REPLAYED" in text
    assert "uv run agent-loop run builder" in text
    assert "ANTHROPIC_API_KEY" in text
    # the Flyte reports it points at exist, in the demo folder: one per tick
    assert len(result.reports) == len(result.ticks)
    for (agent, tick), report in zip(result.ticks, result.reports, strict=True):
        assert report.parent == result.home / "reports"
        assert report.name.startswith(f"{agent}-{tick.run_id or 'idle-'}")
        assert str(report) in text
        html = report.read_text()
        # the model that answered is named as replayed, never AGENT_LOOP_MODEL's default
        assert "anthropic/" not in html
        if tick.run_id:
            assert "replayed" in html


async def _files_at(emulator: GitHubEmulator, ref: str) -> dict[str, bytes]:
    async with emulator_client(emulator, token=emulator.owner_token) as gh:
        entries = [e for e in await gh.get_tree(ref) if e.type == "blob"]
        return {e.path: await gh.get_file(e.path, ref) or b"" for e in entries}


def test_the_code_on_every_pr_head_passes_its_tests(
    demo: tuple[DemoResult, str], tmp_path: pathlib.Path
) -> None:
    result, _ = demo
    emulator = result.emulator
    assert emulator is not None
    heads = {
        "main (bug fix merged)": "main",
        "PR #4": emulator.pull(4).head_sha,
        "PR #9": emulator.pull(9).head_sha,
    }
    for name, ref in heads.items():
        checkout = tmp_path / name.split()[0].replace("#", "pr")
        for path, data in asyncio.run(_files_at(emulator, ref)).items():
            target = checkout / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
            cwd=checkout,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"{name}: {done.stdout[-2000:]}"
        assert " passed" in done.stdout


def test_status_reads_the_demo_memory(
    demo: tuple[DemoResult, str], capsys: pytest.CaptureFixture[str]
) -> None:
    result, _ = demo
    assert cli.main(["status", "--home", str(result.home)]) == 0
    out = capsys.readouterr().out
    assert "Recent runs (8 of 8)" in out
    assert "pushed_fix" in out
    assert "Lessons (2)" in out


def test_the_demo_command_refuses_a_folder_that_is_not_a_demo(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert cli.main(["demo", "--home", str(tmp_path), "--quiet"]) == cli.EXIT_CONFIG  # usage
    assert "is not empty and is not a demo folder" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_the_pr_bodies_carry_the_evidence(demo: tuple[DemoResult, str]) -> None:
    result, _ = demo
    emulator = result.emulator
    assert emulator is not None
    bug = emulator.pull(5)
    assert not bug.draft
    body = bug.body or ""
    assert "## Tests" in body
    assert "- Result: 5 passed (base: 2 passed)" in body
    assert "`tests.test_inventory::test_remove_all_of_it`" in body


@pytest.fixture
def no_sandbox_backend(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Neither bubblewrap nor Docker works (for this test only: later tests probe again)."""

    async def fails(self: object) -> tuple[bool, str]:
        return False, "not here"

    monkeypatch.setattr(BwrapSandbox, "probe", fails)
    monkeypatch.setattr(DockerSandbox, "probe", fails)
    _select.clear_probe_cache()
    yield
    _select.clear_probe_cache()


@pytest.mark.usefixtures("no_sandbox_backend")
def test_the_demo_command_runs_quietly_and_empties_its_own_folder(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Also on a machine where no sandbox backend works: the demo runs its own sample code
    in the plain subprocess, and says that it is not isolated."""
    home = tmp_path / "demo"
    home.mkdir()
    (home / DEMO_MARKER).write_text("")
    (home / "stale.txt").write_text("from an earlier demo")
    assert cli.main(["demo", "--home", str(home), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert not (home / "stale.txt").exists()
    # --quiet: each tick's outcome line, nothing else
    lines = out.splitlines()
    assert len(lines) == 10
    assert lines[0].startswith("   builder: opened_pr on issue #1 -> #4 (")
    assert all(re.match(r"   (builder|reviewer|distiller): ", line) for line in lines)


@pytest.mark.usefixtures("no_sandbox_backend")
def test_without_a_sandbox_backend_the_demo_says_it_is_not_isolated(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a machine where no sandbox backend works, the demo runs its own sample code in
    the plain subprocess, and says that it is not isolated."""
    assert cli.main(["demo", "--home", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "builder: opened_pr on issue #1 -> #4" in out
    assert "in plain-subprocess (not isolated) (NOT isolated: no bubblewrap or Docker" in out
    assert "in the `plain-subprocess` sandbox (not isolated)" in out
    assert "- Result: 5 passed (base: 2 passed)" in out
    assert "The demo took" in out
