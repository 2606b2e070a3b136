"""`agent-loop run builder|reviewer` proves an unchanged idle tick idle without Flyte.

Each tick is its own process, as cron runs it, against the emulator served on loopback;
the child reports which heavy libraries it imported. The first tick (no stored state)
is the full one; the next, with nothing changed, is proven idle by the lean path and
imports neither Flyte nor githubkit nor structlog, with the same summary, report, idle
count and exit code; a change on GitHub makes the next tick the full one again.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Generator

import pytest

from agent_loop.cli import main
from agent_loop_testing import GitHubEmulator

pytestmark = pytest.mark.slow

HEAVY = ("flyte", "githubkit", "structlog", "litellm", "httpx")

_CHILD = (
    "import json, sys\n"
    "from agent_loop.cli import main\n"
    "code = main(sys.argv[1:])\n"
    f"heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
    "print(json.dumps({'code': code, 'heavy': heavy}), file=sys.stderr)\n"
)


@pytest.fixture
def served() -> Generator[tuple[GitHubEmulator, str]]:
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "# widgets\n"})
    emulator.add_user("stranger", permission="read")
    with emulator.serve() as url:
        yield emulator, url


def _tick(
    emulator: GitHubEmulator, url: str, home: pathlib.Path, agent: str = "builder", *more: str
) -> tuple[dict[str, object], list[str], str]:
    """One tick in a child process (`agent-loop run AGENT --json MORE...`): its summary,
    the heavy modules it imported, and what it said on stderr."""
    out, heavy, err = _child(emulator, url, home, "run", agent, "--json", *more)
    return json.loads(out.strip().splitlines()[-1]), heavy, err


def _child(
    emulator: GitHubEmulator, url: str, home: pathlib.Path, *argv: str
) -> tuple[str, list[str], str]:
    """`agent-loop ARGV...` in a child process: its stdout, the heavy modules it
    imported, and its stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
    env.update(
        {
            "GITHUB_API_URL": url,
            "GITHUB_TOKEN": emulator.bot_token,
            "AGENT_LOOP_REPO": emulator.full_name,
            "AGENT_LOOP_HOME": str(home),
            "AGENT_LOOP_MODEL": "openai/never-called",
            "AGENT_LOOP_SANDBOX": "off",
            "OPENAI_API_KEY": "sk-test-not-a-key",
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *argv],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    facts = json.loads(done.stderr.strip().splitlines()[-1])
    assert facts["code"] == 0, done.stderr
    return done.stdout, facts["heavy"], done.stderr


def test_the_second_idle_tick_is_proven_without_flyte_and_a_change_ends_that(
    served: tuple[GitHubEmulator, str], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator, url = served
    home = tmp_path / "home"
    first, heavy, _ = _tick(emulator, url, home)
    assert first["outcome"] == "idle"
    assert {"flyte", "githubkit"} <= set(heavy)  # nothing stored yet: the full path
    billed = emulator.rate_limit_remaining(emulator.bot)

    second, heavy, said = _tick(emulator, url, home)
    assert heavy == []
    assert "without starting Flyte" in said
    assert {**second, "report": ""} == {**first, "report": ""}  # the same summary
    assert second["report"] != first["report"]
    assert (
        pathlib.Path(str(second["report"])).read_text()
        == pathlib.Path(str(first["report"])).read_text()
    )
    assert emulator.rate_limit_remaining(emulator.bot) == billed  # 0 billed requests

    emulator.add_issue("Rewrite everything", "Please.", author="stranger")
    third, heavy, _ = _tick(emulator, url, home)
    assert third["outcome"] == "idle"  # refused (untrusted), decided by the full path
    assert "flyte" in heavy
    fourth, heavy, _ = _tick(emulator, url, home)
    assert fourth["outcome"] == "idle"
    assert heavy == []
    # printed for people, in full or in one line, the lean path stays lean
    out, heavy, _ = _child(emulator, url, home, "run", "builder")
    assert heavy == []
    assert out.startswith("builder: idle tick, nothing to do (no eligible issue).")
    assert out.splitlines()[-1].startswith("  took ")
    out, heavy, _ = _child(emulator, url, home, "run", "builder", "--quiet")
    assert heavy == []
    assert out.startswith("builder: idle (no eligible issue) · ")
    assert len(out.splitlines()) == 1

    reviewer, heavy, _ = _tick(emulator, url, home, "reviewer")
    assert reviewer["outcome"] == "idle"
    assert "flyte" in heavy
    reviewer, heavy, _ = _tick(emulator, url, home, "reviewer")
    assert reviewer["outcome"] == "idle"
    assert heavy == []

    capsys.readouterr()
    assert main(["status", "--home", str(home), "--json"]) == 0
    idle = {c["role"]: c["count"] for c in json.loads(capsys.readouterr().out)["idle"]}
    assert idle == {"builder": 6, "reviewer": 2}  # proven ticks count as idle runs too


def test_a_targeted_or_remote_tick_never_takes_the_lean_path(
    served: tuple[GitHubEmulator, str], tmp_path: pathlib.Path
) -> None:
    emulator, url = served
    home = tmp_path / "home"
    _tick(emulator, url, home)
    number = emulator.add_issue("Rewrite everything", "Please.", author="stranger")
    _, heavy, _ = _tick(emulator, url, home)  # refused: idle, proven by the full path
    assert "flyte" in heavy
    summary, heavy, _ = _tick(emulator, url, home, "builder", "--issue", str(number))
    assert summary["outcome"] == "skipped"
    assert "flyte" in heavy
    again, heavy, _ = _tick(emulator, url, home)  # its void proof: the full path again
    assert again["outcome"] == "idle"
    assert "flyte" in heavy
