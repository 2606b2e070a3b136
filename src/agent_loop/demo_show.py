"""How the demo tells its story: progress as it happens, then what the loop produced.

The results are read back the way a person would look: through the GitHub API (the
owner's view of PRs, diffs, sub-issues, replies) and from memory (records, metrics,
lessons), not from the demo's own notes, so what is shown is what is there.
"""

from __future__ import annotations

import asyncio
import difflib
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from agent_loop._table import clip, fmt_duration
from agent_loop.live import ended_on
from agent_loop.status import MemorySnapshot, lessons_table, metrics_table, runs_table
from agent_loop_common.github import GitHub, PullRequest
from agent_loop_common.progress import ProgressEvent, ProgressKind, event_line
from agent_loop_common.runtime import TickSummary
from agent_loop_common.sandbox import Sandbox
from agent_loop_testing import GitHubEmulator, emulator_client

__all__ = ["Narrator", "show_results"]

_DIFF_LINES = 32
_NOT_NARRATED: frozenset[ProgressKind] = frozenset({"run.ended"})
"""Events the story tells its own way: each tick's end line (`tick_end`)."""
_DIBS = "agent-loop:dibs"


class Narrator:
    """Prints the demo's progress and results to `out`.

    Args:
        out: Where to print.
        progress: Print each model step and tick as it happens.
        outcomes_only: Print each tick's outcome line and nothing else (`demo --quiet`),
            plus what went wrong if the story went off script.
    """

    def __init__(self, out: TextIO, *, progress: bool = True, outcomes_only: bool = False) -> None:
        self.out = out
        self.progress_shown = progress and not outcomes_only
        self.outcomes_only = outcomes_only
        self._ticks: dict[str, int] = {}

    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def line(self, text: str = "") -> None:
        if not self.outcomes_only:
            self._print(text)

    def act(self, title: str) -> None:
        self.line()
        self.line(f"== {title}")

    def section(self, title: str) -> None:
        self.line()
        self.line(f"-- {title}")

    def note(self, text: str) -> None:
        self.line(f"   {text}")

    def intro(
        self,
        url: str,
        emulator: GitHubEmulator,
        home: Path,
        issues: Mapping[str, int],
        *,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.line("agent-loop demo: the whole loop, offline, with a REPLAYED model")
        self.line(f"   GitHub:  an emulator of {emulator.full_name} at {url} (loopback only)")
        self.line("   model:   replayed from a script (no AI is called, no credentials used)")
        self.line(f"   flyte:   local mode; memory and runs under {home}")
        if sandbox is not None:
            how = (
                "isolated: no network, no secrets, a private copy"
                if sandbox.isolated
                else "NOT isolated: no bubblewrap or Docker works here, so the demo's own "
                "sample code runs as you, with a scrubbed environment and limits"
            )
            self.line(f"   tests:   the sample project's pytest suite, in {sandbox.name} ({how})")
        listed = ", ".join(f"#{n} {emulator.issue(n).title!r}" for n in issues.values())
        self.line(f"   issues filed by @{emulator.owner}: {listed}")

    def tick_start(self, agent: str) -> None:
        self._ticks[agent] = self._ticks.get(agent, 0) + 1
        if self.progress_shown:
            self.line(f"-> {agent} tick {self._ticks[agent]}")

    def progress(self, event: ProgressEvent) -> None:
        """A run's progress event as it happens (`use_progress`), as `agent-loop run`
        prints it: tool calls, what was staged, the tests, the verdict."""
        if not self.progress_shown or event.kind in _NOT_NARRATED:
            return
        line = event_line(event)
        if line is not None:
            self.line(f"     {line}")

    def tick_end(self, agent: str, tick: TickSummary, seconds: float) -> None:
        if tick.idle:
            self._print(f"   {agent}: idle, nothing to do ({fmt_duration(seconds)})")
            return
        made_numbers = [n for n in tick.made if n != tick.target_number]
        made = f" -> {', '.join(f'#{n}' for n in made_numbers)}" if made_numbers else ""
        error = f"  error: {clip(tick.error, 100)}" if tick.error else ""
        self._print(f"   {agent}: {ended_on(tick)}{made} ({fmt_duration(seconds)}){error}")

    def outro(self, seconds: float, problems: Sequence[str], home: Path) -> None:
        if self.outcomes_only:
            for problem in problems:
                self._print(f"   off script: {clip(problem, 300)}")
            return
        self.act("Done")
        self.note(f"The demo took {fmt_duration(seconds)}.")
        if problems:
            self.note("It did NOT go as scripted:")
            for problem in problems:
                self.note(f"  - {clip(problem, 300)}")
        self.note("The model was REPLAYED: its answers were scripted for this sample project,")
        self.note("while the agents, verifier, GitHub writes, claims and memory were real.")
        self.note("To run the agents with a real model on your own repository:")
        self.note("  export AGENT_LOOP_REPO=you/your-repo GITHUB_TOKEN=...  ANTHROPIC_API_KEY=...")
        self.note("  export AGENT_LOOP_MODEL=anthropic/claude-sonnet-4-6   # or openai/gpt-5, ...")
        self.note("  uv run agent-loop run builder --issue 42")
        self.note(f"Look at this demo's memory again: uv run agent-loop status --home {home}")


async def _commit_diff(gh: GitHub, sha: str) -> list[str]:
    """The unified diff a commit made against its first parent (what a merge brought in)."""
    commit = await gh.get_commit(sha)
    if not commit.parents:
        return []
    parent = commit.parents[0]
    before = {e.path: e.sha for e in await gh.get_tree(parent) if e.type == "blob"}
    after = {e.path: e.sha for e in await gh.get_tree(sha) if e.type == "blob"}
    lines: list[str] = []
    for path in sorted(set(before) | set(after)):
        if before.get(path) == after.get(path):
            continue
        old = (await gh.get_file(path, parent) or b"").decode("utf-8", "replace")
        new = (await gh.get_file(path, sha) or b"").decode("utf-8", "replace")
        lines += difflib.unified_diff(
            old.splitlines(),
            new.splitlines(),
            f"a/{path}" if path in before else "/dev/null",
            f"b/{path}" if path in after else "/dev/null",
            lineterm="",
        )
    return lines


async def _pull_lines(gh: GitHub, emulator: GitHubEmulator, pull: PullRequest) -> list[str]:
    state = "merged" if pull.merged else pull.state
    lines = [f"PR #{pull.number} {pull.title!r} [{state}] {pull.head_ref} by @{pull.user.login}"]
    fixes = re.findall(r"(?:Fixes|Closes|Resolves) #\d+", pull.body)
    if fixes:
        lines[0] += f" ({', '.join(fixes)})"
    if pull.draft:
        lines[0] += " (draft)"
    # the evidence, with this Python's long path shortened for the screen
    evidence = [line.replace(sys.executable, "python") for line in _tests_section(pull.body)]
    lines += [f"   {clip(line, 220)}" for line in evidence]
    diff = [
        line
        for line in (await gh.get_pull_diff(pull.number)).splitlines()
        if not line.startswith(("diff --git ", "index ", "new file mode "))
    ]
    merge_sha = emulator.pull(pull.number).merge_commit_sha if pull.merged else None
    if not diff and merge_sha:
        lines[0] += f", merged as {merge_sha[:7]}"
        diff = await _commit_diff(gh, merge_sha)
    shown = diff[:_DIFF_LINES]
    lines += [f"   | {d}" for d in shown]
    if len(diff) > len(shown):
        lines.append(f"   | ... {len(diff) - len(shown)} more diff lines")
    return lines


def _tests_section(body: str) -> list[str]:
    """The `## Tests` section of a pull request body (the evidence), without its heading."""
    _, found, rest = body.partition("## Tests\n")
    if not found:
        return []
    return [line for line in rest.split("\n## ", 1)[0].splitlines() if line.strip()]


async def _github_sections(emulator: GitHubEmulator, narrator: Narrator) -> None:
    async with emulator_client(emulator, token=emulator.owner_token) as gh:
        pulls = sorted(await gh.list_pulls(state="all"), key=lambda p: p.number)
        issues = [i for i in await gh.list_issues(state="all") if not i.is_pull_request]
        narrator.section(f"Pull requests ({len(pulls)}), with their diffs as merged or proposed")
        for pull in pulls:
            for line in await _pull_lines(gh, emulator, pull):
                narrator.note(line)
        subs = [i for i in issues if i.user.login == emulator.bot_login]
        narrator.section(f"Sub-issues filed by the builder ({len(subs)})")
        for issue in sorted(subs, key=lambda i: i.number):
            deps = re.findall(r"depends on ((?:#\d+(?:, )?)+)", issue.body)
            after = f"  depends on {deps[0]}" if deps else ""
            narrator.note(f"#{issue.number} {issue.title!r} [{issue.state}]{after}")
        # The issues the builder split (its sub-issues say `Part of #N.`), not the ones a
        # merged pull request closed.
        parents = {int(n) for i in subs for n in re.findall(r"Part of #(\d+)\.", i.body)}
        specs = [i for i in issues if i.state == "closed" and i.number in parents]
        for spec in specs:
            narrator.note(f"#{spec.number} {spec.title!r} was closed with the list of sub-issues")
        narrator.section("Review fixes and replies")
        for pull in pulls:
            await _review_lines(gh, emulator, pull, narrator)


async def _review_lines(
    gh: GitHub, emulator: GitHubEmulator, pull: PullRequest, narrator: Narrator
) -> None:
    replies = [c for c in await gh.list_review_comments(pull.number) if c.in_reply_to_id]
    comments = [
        c
        for c in await gh.list_issue_comments(pull.number)
        if c.user.login == emulator.bot_login and _DIBS not in c.body
    ]
    commits = [c for c in emulator.log(pull.head_sha)[:3] if "review" in c.message.lower()]
    if not (replies or comments or commits):
        return
    narrator.note(f"PR #{pull.number} {pull.title!r}:")
    for commit in commits[:1]:
        narrator.note(f"   commit {commit.sha[:7]}: {clip(commit.message.splitlines()[0], 90)}")
    for reply in replies:
        narrator.note(f"   reply to comment {reply.in_reply_to_id}: {clip(reply.body, 90)}")
    for comment in comments[-1:]:
        narrator.note(f"   comment: {clip(comment.body, 110)}")


def show_results(
    narrator: Narrator,
    emulator: GitHubEmulator,
    snapshot: MemorySnapshot,
    reports: Sequence[tuple[str, Path]],
    home: Path,
) -> None:
    """Print the PRs and diffs, sub-issues, review fixes, lessons, metrics and reports."""
    narrator.act("What the loop produced")
    asyncio.run(_github_sections(emulator, narrator))
    narrator.section(f"Runs recorded in memory ({len(snapshot.records)})")
    narrator.line(runs_table(snapshot.records, limit=20))
    narrator.section("Metrics (from the run records and the distiller's grades)")
    narrator.note("Tokens are counted from the replayed text; the cost is 0: no model was called.")
    narrator.line(metrics_table(snapshot.metrics))
    narrator.section(f"Lessons the distiller learned ({len(snapshot.lessons.lessons)})")
    if snapshot.lessons.lessons:
        narrator.line(lessons_table(snapshot.lessons.lessons, width=100))
    if snapshot.digest.strip():
        narrator.note(
            f"digest for the next runs: {len(snapshot.digest)} characters, first line: "
            f"{clip(snapshot.digest.strip().splitlines()[0], 80)!r}"
        )
    narrator.section(f"Flyte reports, one per tick (open in a browser; under {home / 'reports'})")
    width = max((len(label) for label, _ in reports), default=0)
    for label, path in reports:
        narrator.note(f"{label:<{width}}  {path}")
    narrator.note(f"memory: {snapshot.location.root}")
    narrator.note(f"demo folder: {home}")
