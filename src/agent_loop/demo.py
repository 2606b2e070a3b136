"""`agent-loop demo`: the whole loop, offline, in well under a minute.

The story, all through `run_once` in Flyte local mode (the path of `agent-loop run`):

1. A GitHub emulator is served on 127.0.0.1 with a sample project (`demo_project`) and
   three issues from its owner: a feature, a bug, a spec.
2. Builder ticks until it is idle: two PRs (the bug fix after one verifier rejection),
   the spec split into sub-issues with dependencies, and a PR for the first sub-issue;
   the last tick is idle because the other sub-issues wait for it.
3. The owner reviews the feature PR with an inline comment; reviewer ticks until idle:
   every agent PR gets its own review, the commented one a verified fix and a reply.
4. The owner merges the bug fix; the distiller grades the PRs, learns lessons from the
   records, and writes the digest the next builder and reviewer runs will read.

The model is replayed (`demo_scripts`), never called: no credentials, no network beyond
loopback. Everything the agents did is real: the emulator holds the commits, PRs,
comments and sub-issues, and memory holds the run records, grades and lessons.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from agent_loop import demo_project as project
from agent_loop import demo_scripts as scripts
from agent_loop.agents import AgentName, run_agent_once
from agent_loop.demo_model import ReplayModel
from agent_loop.demo_show import Narrator, show_results
from agent_loop.reports import ReportFinder
from agent_loop.status import read_snapshot
from agent_loop_common.runtime import local_memory, use_model
from agent_loop_common.settings import Settings, load_settings
from agent_loop_common.testing import GitHubEmulator, emulator_client

__all__ = ["DEMO_MARKER", "DemoError", "DemoResult", "demo_environment", "run_demo"]

DEMO_MARKER = ".agent-loop-demo"
"""File that marks a folder as a demo home, so the demo only ever empties its own."""

_MAX_TICKS = 8
"""Ticks per agent before the demo gives up waiting for it to go idle."""


class DemoError(RuntimeError):
    """The demo cannot start (e.g. its folder holds something else)."""


@dataclass
class DemoResult:
    """What the demo did, for the CLI's exit code and for tests."""

    home: Path
    seconds: float = 0.0
    summaries: list[tuple[AgentName, dict[str, Any]]] = field(
        default_factory=list[tuple[AgentName, dict[str, Any]]]
    )
    """Every tick's summary, in order (`{}` for an idle tick)."""
    problems: list[str] = field(default_factory=list[str])
    """Replay mismatches, failed ticks: empty when the story went as scripted."""
    reports: list[Path] = field(default_factory=list[Path])
    """The Flyte reports (`report.html`) of the ticks."""
    emulator: GitHubEmulator | None = None
    """The emulator, kept for inspection (tests)."""

    @property
    def ok(self) -> bool:
        return not self.problems


def _prepare_home(home: Path) -> Path:
    home = home.resolve()
    if home.exists() and any(home.iterdir()):
        if not (home / DEMO_MARKER).exists():
            raise DemoError(
                f"{home} is not empty and is not a demo folder; pass --home with a new "
                "or empty folder."
            )
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True)
    (home / DEMO_MARKER).write_text("agent-loop demo home: emptied by every `agent-loop demo`.\n")
    return home


@contextmanager
def demo_environment(emulator: GitHubEmulator, url: str, home: Path) -> Generator[Settings]:
    """The demo's configuration in the environment (tasks read it there), restored after.

    Every `GITHUB_*` and `AGENT_LOOP_*` variable of the caller is set aside, so a real
    token, App key or model setting in the shell cannot leak into the demo, and model
    requests are refused outright (`AGENT_LOOP_ALLOW_MODEL_REQUESTS=0`).
    """
    saved = {k: v for k, v in os.environ.items() if k.startswith(("GITHUB_", "AGENT_LOOP_"))}
    for key in saved:
        del os.environ[key]
    os.environ.update(
        {
            "GITHUB_API_URL": url,
            "GITHUB_TOKEN": emulator.bot_token,
            "AGENT_LOOP_REPO": emulator.full_name,
            "AGENT_LOOP_BOT_LOGIN": emulator.bot_login,
            "AGENT_LOOP_HOME": str(home),
            "AGENT_LOOP_ALLOW_MODEL_REQUESTS": "0",
            "AGENT_LOOP_DEPLOYMENT_ID": "demo",
        }
    )
    try:
        yield load_settings()
    finally:
        for key in [k for k in os.environ if k.startswith(("GITHUB_", "AGENT_LOOP_"))]:
            del os.environ[key]
        os.environ.update(saved)


def seed(emulator: GitHubEmulator) -> dict[str, int]:
    """The sample project and the owner's three issues; returns issue numbers by key."""
    emulator.seed_files(project.FILES, message="widgets: a tiny stock inventory")
    return {
        issue.key: emulator.add_issue(issue.title, issue.body)
        for issue in (project.FEATURE, project.BUG, project.SPEC)
    }


class _Story:
    """One demo run: the emulator, the replayed model, the narrator and what happened."""

    def __init__(self, emulator: GitHubEmulator, settings: Settings, narrator: Narrator) -> None:
        self.emulator = emulator
        self.settings = settings
        self.say = narrator
        self.model = ReplayModel(scripts.builder_episodes(), on_step=narrator.model_step)
        self.reports = ReportFinder()
        self.summaries: list[tuple[AgentName, dict[str, Any]]] = []
        self.problems: list[str] = []

    def tick(self, agent: AgentName) -> dict[str, Any]:
        started = time.perf_counter()
        self.say.tick_start(agent)
        with self.reports.watch(agent):
            try:
                summary = run_agent_once(agent, self.settings)
            except Exception as exc:  # a failed tick is part of the story's result
                self.problems.append(f"{agent} tick failed: {type(exc).__name__}: {exc}")
                summary = {"outcome": "error", "error": str(exc)}
        self.summaries.append((agent, summary))
        self.say.tick_end(agent, summary, time.perf_counter() - started)
        if summary.get("error"):
            self.problems.append(f"{agent} run {summary.get('run_id', '?')}: {summary['error']}")
        return summary

    def until_idle(self, agent: AgentName) -> list[dict[str, Any]]:
        done: list[dict[str, Any]] = []
        for _ in range(_MAX_TICKS):
            summary = self.tick(agent)
            if not summary or summary.get("outcome") == "error":
                return done
            done.append(summary)
        self.problems.append(f"the {agent} was still busy after {_MAX_TICKS} ticks")
        return done

    def run_ids(self) -> dict[str, str]:
        """`"<agent>:<target>"` -> run id of every tick that recorded a run."""
        return {
            f"{agent}:{summary.get('target', '')}": str(summary["run_id"])
            for agent, summary in self.summaries
            if summary.get("run_id")
        }


def _owner_review(emulator: GitHubEmulator, title: str) -> tuple[int, int]:
    """The owner's inline review comment on the PR titled `title`: (PR, comment id)."""

    async def find() -> tuple[int, int]:
        async with emulator_client(emulator, token=emulator.owner_token) as owner:
            pulls = await owner.list_pulls(state="open")
            pr = next(p.number for p in pulls if p.title == title)
            emulator.add_review(
                pr,
                author=emulator.owner,
                state="COMMENTED",
                comments=[("tests/test_inventory.py", 1, project.REVIEW_COMMENT)],
            )
            comments = await owner.list_review_comments(pr)
            return pr, comments[-1].id

    return asyncio.run(find())


def _merge(emulator: GitHubEmulator, title: str) -> int:
    """The owner merges the open PR titled `title`; returns its number."""

    async def find() -> int:
        async with emulator_client(emulator, token=emulator.owner_token) as owner:
            pulls = await owner.list_pulls(state="open")
            return next(p.number for p in pulls if p.title == title)

    pr = asyncio.run(find())
    emulator.merge_pull(pr, by=emulator.owner)
    return pr


def run_demo(home: Path, *, out: TextIO = sys.stdout, progress: bool = True) -> DemoResult:
    """Run the whole story and print it; see the module docstring.

    Args:
        home: The demo folder (emptied first; it must be new, empty or a demo folder).
        out: Where the story is printed.
        progress: Print each model step and tick as it happens (else only the results).

    Raises:
        DemoError: `home` holds something that is not a previous demo.
    """
    started = time.perf_counter()
    home = _prepare_home(home)
    narrator = Narrator(out, progress=progress)
    # The emulator's clock moves one second per write from `start`; an hour back keeps
    # it behind the real clock the runs use, as GitHub's own timestamps would be.
    emulator = GitHubEmulator(start=datetime.now(UTC) - timedelta(hours=1))
    issues = seed(emulator)
    result = DemoResult(home=home, emulator=emulator)
    with emulator.serve() as url, demo_environment(emulator, url, home) as settings:
        narrator.intro(url, emulator, home, issues)
        story = _Story(emulator, settings, narrator)
        with use_model(story.model):
            narrator.act("1. The builder works through the issues, one per tick")
            story.until_idle("builder")
            narrator.act("2. The owner reviews the feature PR; the reviewer reviews every agent PR")
            pr, comment_id = _owner_review(emulator, scripts.FEATURE_PR_TITLE)
            narrator.note(f"@{emulator.owner} commented on PR #{pr}: {project.REVIEW_COMMENT!r}")
            story.model.add(*scripts.reviewer_episodes(comment_id))
            story.until_idle("reviewer")
            narrator.act("3. The owner merges the bug fix; the distiller grades and learns")
            merged = _merge(emulator, scripts.BUG_PR_TITLE)
            narrator.note(f"@{emulator.owner} merged PR #{merged}")
            runs = story.run_ids()
            story.model.add(
                scripts.distiller_episode(
                    rejected_run=runs.get(f"builder:issue#{issues['bug']}", "?"),
                    review_fix_run=runs.get(f"reviewer:pr#{pr}", "?"),
                )
            )
            story.tick("distiller")
        story.problems += story.model.problems()
        snapshot = asyncio.run(read_snapshot(local_memory(settings)))
        result.seconds = time.perf_counter() - started
        show_results(narrator, emulator, snapshot, story.reports.found, home)
    result.summaries = story.summaries
    result.problems = story.problems
    result.reports = story.reports.all()
    narrator.outro(result.seconds, result.problems, home)
    return result
