"""`agent-loop demo`: the whole loop, offline, in well under a minute.

The story, all through `run_once` in Flyte local mode (the path of `agent-loop run`):

1. A GitHub emulator is served on 127.0.0.1 with a sample project (`demo_project`) and
   three issues from its owner: a feature, a bug, a spec.
2. Builder ticks until it is idle: two PRs (the bug fix after its first try failed a
   test), the spec split into sub-issues with dependencies, and a PR for the first
   sub-issue; the last tick is idle because the other sub-issues wait for it.
3. The owner reviews the feature PR with an inline comment; reviewer ticks until idle:
   every agent PR gets its own review, the commented one a verified fix and a reply.
4. The owner merges the bug fix; the distiller grades the PRs, learns lessons from the
   records, and writes the digest the next builder and reviewer runs will read.

The model is replayed (`demo_scripts`), never called: no credentials, no network beyond
loopback. Everything the agents did is real: the emulator holds the commits, PRs,
comments and sub-issues, and memory holds the run records, grades and lessons. The
sample project's pytest suite really runs on every proposed change, with this Python,
in the sandbox the agents use (bubblewrap or Docker when one works here; otherwise a
plain subprocess with a scrubbed environment, which the demo says is not isolated: it
only ever runs the demo's own sample code).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import sys
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from agent_loop import demo_project as project
from agent_loop import demo_scripts as scripts
from agent_loop._logging import preserved_logging
from agent_loop.agents import AgentName, run_agent_once
from agent_loop.demo_model import ReplayModel
from agent_loop.demo_show import Narrator, show_results
from agent_loop.status import read_snapshot
from agent_loop_common.progress import use_progress
from agent_loop_common.records import Outcome, Role
from agent_loop_common.runtime import TickSummary, local_memory, use_model, use_sandbox
from agent_loop_common.sandbox import open_sandbox
from agent_loop_common.settings import Settings, load_settings
from agent_loop_testing import GitHubEmulator, emulator_client, shown_lines

__all__ = [
    "DEMO_MARKER",
    "REPLAYED_LABEL",
    "DemoError",
    "DemoResult",
    "demo_environment",
    "demo_test_command",
    "run_demo",
]

DEMO_MARKER = ".agent-loop-demo"
"""File that marks a folder as a demo home, so the demo only ever empties its own."""

REPLAYED_LABEL = "replayed (demo script, no model called)"
"""The model the demo's records and reports name: never `AGENT_LOOP_MODEL`."""

_MAX_TICKS = 8
"""Ticks per agent before the demo gives up waiting for it to go idle."""


class DemoError(RuntimeError):
    """The demo cannot start (e.g. its folder holds something else)."""


def demo_test_command() -> str:
    """The sample project's tests: pytest with this Python, by absolute path.

    This workspace's own pytest plugins are switched off: the hermetic guard lives in the
    workspace's sources, which the sandbox does not show, and the async plugins only
    cost start-up time.

    Raises:
        DemoError: pytest is not installed next to agent-loop.
    """
    if importlib.util.find_spec("pytest") is None:
        raise DemoError(
            f"the demo runs the sample project's tests with pytest, which {sys.executable} "
            "does not have: install it (`uv sync` does, or `pip install pytest`)."
        )
    return (
        f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:agent_loop_hermetic "
        "-p no:asyncio -p no:anyio --junitxml=$SANDBOX_JUNIT"
    )


@dataclass
class DemoResult:
    """What the demo did, for the CLI's exit code and for tests."""

    home: Path
    seconds: float = 0.0
    ticks: list[tuple[AgentName, TickSummary]] = field(
        default_factory=list[tuple[AgentName, TickSummary]]
    )
    """Every tick's summary, in order."""
    tick_seconds: list[float] = field(default_factory=list[float])
    """Wall time of each tick (same order as `ticks`)."""
    problems: list[str] = field(default_factory=list[str])
    """Replay mismatches, failed ticks: empty when the story went as scripted."""
    reports: list[Path] = field(default_factory=list[Path])
    """The ticks' Flyte reports, kept in the demo folder (`<home>/reports/`)."""
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
def demo_environment(
    emulator: GitHubEmulator, url: str, home: Path, *, log_level: str = "WARNING"
) -> Generator[Settings]:
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
            "AGENT_LOOP_TEST_COMMAND": demo_test_command(),
            # Tasks that configure logging themselves read it here: keep the story readable.
            "AGENT_LOOP_LOG_LEVEL": log_level,
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
        self.model = ReplayModel(scripts.builder_episodes())
        self.report_paths: list[tuple[str, Path]] = []
        self.ticks: list[tuple[AgentName, TickSummary]] = []
        self.tick_seconds: list[float] = []
        self.problems: list[str] = []

    def tick(self, agent: AgentName) -> TickSummary:
        started = time.perf_counter()
        self.say.tick_start(agent)
        try:
            tick = run_agent_once(agent, self.settings)
        except Exception as exc:  # a failed tick is part of the story's result
            tick = TickSummary(
                role=Role(agent), outcome=Outcome.ERROR, error=f"{type(exc).__name__}: {exc}"
            )
        if tick.report:
            label = f"{agent} {tick.target_label or 'idle tick'}"
            self.report_paths.append((label, Path(tick.report)))
        self.ticks.append((agent, tick))
        self.tick_seconds.append(time.perf_counter() - started)
        self.say.tick_end(agent, tick, self.tick_seconds[-1])
        if tick.error:
            self.problems.append(f"{agent} run {tick.run_id or '?'}: {tick.error}")
        return tick

    def until_idle(self, agent: AgentName) -> list[TickSummary]:
        done: list[TickSummary] = []
        for _ in range(_MAX_TICKS):
            tick = self.tick(agent)
            if tick.idle or tick.outcome == "error":
                return done
            done.append(tick)
        self.problems.append(f"the {agent} was still busy after {_MAX_TICKS} ticks")
        return done

    def run_id(self, agent: AgentName, target: str) -> str:
        """The run id of `agent`'s run on `target` (`issue #2`, `PR #4`)."""
        for who, tick in self.ticks:
            if who == agent and tick.target_label == target and tick.run_id:
                return tick.run_id
        self.problems.append(f"no {agent} run on {target} was recorded")
        return "?"


class _Acts(_Story):
    """The three acts of the story (see the module docstring)."""

    def __init__(
        self,
        emulator: GitHubEmulator,
        settings: Settings,
        narrator: Narrator,
        issues: dict[str, int],
    ) -> None:
        super().__init__(emulator, settings, narrator)
        self.issues = issues
        self.feature_pr: int | None = None

    def build(self) -> None:
        self.say.act("1. The builder works through the issues, one per tick")
        self.until_idle("builder")

    def review(self) -> None:
        self.say.act("2. The owner reviews the feature PR; the reviewer reviews every agent PR")
        found = _owner_review(self.emulator, scripts.FEATURE_PR_TITLE)
        if found is None:
            self.problems.append(f"no open PR titled {scripts.FEATURE_PR_TITLE!r} to review")
            return
        self.feature_pr, comment_id = found
        owner = self.emulator.owner
        self.say.note(f"@{owner} commented on PR #{self.feature_pr}: {project.REVIEW_COMMENT!r}")
        self.model.add(*scripts.reviewer_episodes(comment_id))
        self.until_idle("reviewer")

    def distill(self) -> None:
        self.say.act("3. The owner merges the bug fix; the distiller grades and learns")
        merged = _merge(self.emulator, scripts.BUG_PR_TITLE)
        if merged is None:
            self.problems.append(f"no open PR titled {scripts.BUG_PR_TITLE!r} to merge")
            return
        self.say.note(f"@{self.emulator.owner} merged PR #{merged}")
        self.model.add(
            scripts.distiller_episode(
                rejected_run=self.run_id("builder", f"issue #{self.issues['bug']}"),
                review_fix_run=self.run_id("reviewer", f"PR #{self.feature_pr}"),
            )
        )
        self.tick("distiller")


def _owner_review(emulator: GitHubEmulator, title: str) -> tuple[int, int] | None:
    """The owner's inline review comment on the PR titled `title`: (PR, comment id)."""

    async def find() -> tuple[int, int] | None:
        async with emulator_client(emulator, token=emulator.owner_token) as owner:
            pulls = await owner.list_pulls(state="open")
            pr = next((p.number for p in pulls if p.title == title), None)
            if pr is None:
                return None
            path = "tests/test_inventory.py"
            files = {f.filename: f for f in await owner.list_pull_files(pr)}
            shown = shown_lines(files[path].patch or "") if path in files else []
            # GitHub takes a review thread only on a line the diff shows: the first it adds
            line = next((n for n, added in shown if added), None)
            if line is None:
                return None
            emulator.add_review(
                pr,
                author=emulator.owner,
                state="COMMENTED",
                comments=[(path, line, project.REVIEW_COMMENT)],
            )
            comments = await owner.list_review_comments(pr)
            return pr, comments[-1].id

    return asyncio.run(find())


def _merge(emulator: GitHubEmulator, title: str) -> int | None:
    """The owner merges the open PR titled `title`; returns its number."""

    async def find() -> int | None:
        async with emulator_client(emulator, token=emulator.owner_token) as owner:
            pulls = await owner.list_pulls(state="open")
            return next((p.number for p in pulls if p.title == title), None)

    pr = asyncio.run(find())
    if pr is not None:
        emulator.merge_pull(pr, by=emulator.owner)
    return pr


def run_demo(
    home: Path,
    *,
    out: TextIO = sys.stdout,
    progress: bool = True,
    outcomes_only: bool = False,
    log_level: str = "WARNING",
) -> DemoResult:
    """Run the whole story and print it; see the module docstring.

    Args:
        home: The demo folder (emptied first; it must be new, empty or a demo folder).
        out: Where the story is printed.
        progress: Print each model step and tick as it happens (else only the results).
        outcomes_only: Print only each tick's outcome line (and any problem).
        log_level: Log level of the agents' own logs (they go to stderr).

    Raises:
        DemoError: `home` holds something that is not a previous demo.
    """
    with preserved_logging():  # a task may configure logging in this process
        narrator = Narrator(out, progress=progress, outcomes_only=outcomes_only)
        return _run_demo(home, narrator, log_level)


def _run_demo(home: Path, narrator: Narrator, log_level: str) -> DemoResult:
    started = time.perf_counter()
    home = _prepare_home(home)
    demo_test_command()  # before anything else: say so if pytest is missing
    # The real clock, as `emulator serve`: the report's "issue to PR" then reads the
    # seconds the demo took, not the hour an emulated clock set back would add.
    emulator = GitHubEmulator(clock="real")
    issues = seed(emulator)
    result = DemoResult(home=home, emulator=emulator)
    with (
        emulator.serve() as url,
        demo_environment(emulator, url, home, log_level=log_level) as settings,
    ):
        # The demo's own sample code: the plain subprocess is acceptable when no isolating
        # backend works here, and every result (and the intro) says it is not isolated.
        sandbox = asyncio.run(open_sandbox(settings, allow_unisolated=True))
        narrator.intro(url, emulator, home, issues, sandbox=sandbox)
        story = _Acts(emulator, settings, narrator, issues)
        with (
            use_model(story.model, label=REPLAYED_LABEL),
            use_sandbox(sandbox),
            use_progress(narrator.progress),
        ):
            for act in (story.build, story.review, story.distill):
                act()
                if story.problems:
                    narrator.note("The story went off script; skipping the rest.")
                    break
        story.problems += story.model.problems()
        snapshot = asyncio.run(read_snapshot(local_memory(settings)))
        result.seconds = time.perf_counter() - started
        show_results(narrator, emulator, snapshot, story.report_paths, home)
    result.ticks = story.ticks
    result.tick_seconds = story.tick_seconds
    result.problems = story.problems
    result.reports = [path for _, path in story.report_paths]
    narrator.outro(result.seconds, result.problems, home)
    return result
