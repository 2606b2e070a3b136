"""`eval mine`: task instances from the repository's merged pull requests.

For each merged pull request, oldest merge first, that no earlier run decided about:

1. **linked issue**: the issues of this repository it closes (GraphQL
   `closingIssuesReferences`, and closing keywords in its body), merged into the default
   branch; pull requests among them do not count;
2. **its files** (the PR files listing, with a rename's old path): test files by the
   sandbox's rule (`is_test_path`), the rest code; it needs both, and at most
   `MineLimits.max_files` files and `max_changed_lines` changed lines;
3. **trust**: every linked issue passes the rule live work uses (`issue_refusal`), and
   its text is taken as it was when the pull request was opened (`text_when_opened`,
   from its `renamed` events and its body's edit history): a later edit could hint at
   the fix; when that text cannot be told the pull request is skipped
   (`edited_after_fix`), and whoever wrote it must pass the trust rule too;
4. **the change**: the files at the base (the commit it was merged onto: the merge
   commit's first parent, a squash commit's only parent, the parent of the first
   rebased commit; `merged_onto`) and at the merge commit, compared
   on the PR's files only, so whatever else a merge brought stays out; `test_patch` is
   the change to test files, `patch` the rest;
5. **validation** in the sandbox, set up as the builder sets up a run at that base (the
   configured or detected test command, the zero-config Python setup and its cache):
   the base with the test change (`before`) and with the test change and the fix
   (`after`), each `MineLimits.runs` times, classified by `classify`; pytest runs with
   `--continue-on-collection-errors`, so a test module that cannot import before the
   fix leaves the other modules' outcomes to compare.

Mining only reads GitHub: listings, contents and tarballs over REST, the links and
edits over GraphQL queries. A GitHub (or GitHub-like server) whose GraphQL API fails
still gets mined, as far as REST tells, and the miner says so once (`on_note`): the
linked issues are the closing keywords of the PR's body only, the merge commit is the
one the PR's `merged` event names, and an issue's text counts as its author's (who last
edited a body is GraphQL's to tell; on GitHub only the author and people with write
access can edit it) and is taken as it is now, its body's history being GraphQL's too
(a title is still taken as it was, from REST's `renamed` events).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime

from agent_loop_common.checks import CheckReport, Checks, open_sandbox_checks
from agent_loop_common.github import (
    BodyHistory,
    GitHub,
    GitHubError,
    Issue,
    IssueEvent,
    NotFound,
    PullFile,
    PullLinks,
    PullRequest,
    RateLimited,
)
from agent_loop_common.repo import RepoSnapshot
from agent_loop_common.sandbox import (
    BaselineCache,
    Sandbox,
    TestCommand,
    TestOutcome,
    runs_pytest,
    without_guard,
)
from agent_loop_common.settings import Settings
from agent_loop_common.texts import closing_references
from agent_loop_common.trust import Trust
from agent_loop_eval._classify import Classified, classify
from agent_loop_eval._instance import Instance, instance_id
from agent_loop_eval._issues import (
    IssueText,
    issue_refusal,
    problem_statement,
    text_when_opened,
)
from agent_loop_eval._mined import SkippedPull, SkipReason
from agent_loop_eval._onto import merged_onto
from agent_loop_eval._patches import BinaryChange, diff_files, split_test_paths
from agent_loop_eval._testids import node_outcomes

__all__ = ["COLLECTION_ERRORS", "MineLimits", "Mined", "Miner", "through_collection_errors"]


@dataclass(frozen=True)
class MineLimits:
    """How much mining takes on per pull request."""

    max_files: int = 50
    """Most files a pull request may change (more: `too_large`)."""
    max_changed_lines: int = 2_000
    """Most lines it may add and delete in all (more: `too_large`)."""
    max_pass_to_pass: int = 200
    """Most PASS_TO_PASS tests kept per instance (those of the test change's files first)."""
    runs: int = 2
    """Runs of each tree (before, after): a test whose outcome differs is flaky."""


@dataclass(frozen=True)
class Mined:
    """What mining decided about one merged pull request."""

    pull: PullRequest
    instance: Instance | None
    skipped: SkippedPull | None
    seconds: float
    """Wall time spent on it (GitHub reads and sandbox runs)."""


COLLECTION_ERRORS = "--continue-on-collection-errors"
"""Added to a pytest command for validation and kept in the instance's `test_command`:
a test module that cannot import before the fix (its new test imports a new function)
would otherwise stop the whole run, and no other test would have an outcome to compare."""


def through_collection_errors(command: TestCommand | None) -> TestCommand | None:
    """`command` with `COLLECTION_ERRORS` when it runs pytest without it."""
    if command is None or not runs_pytest(command.argv) or COLLECTION_ERRORS in command.argv:
        return command
    return command.model_copy(update={"argv": (*command.argv, COLLECTION_ERRORS)})


class _Skip(Exception):
    """A non-local exit: this pull request is not an instance, for `reason`."""

    def __init__(self, reason: SkipReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _decoded(path: str, data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Skip(SkipReason.BINARY_CHANGE, f"{path} is not UTF-8 text") from None


def _said(exc: GitHubError) -> str:
    """GitHub's own words for a failure, short (the status when it said nothing)."""
    said = " ".join(exc.github_message.split())[:120]
    return said or (f"HTTP {exc.status}" if exc.status else type(exc).__name__)


def _paths(files: list[PullFile]) -> list[str]:
    paths = {f.filename for f in files}
    paths.update(f.previous_filename for f in files if f.previous_filename)
    return sorted(paths)


class Miner:
    """Mines one repository's merged pull requests (see the module docstring).

    Args:
        github: The repository's facade (only reads are made through it).
        settings: The trust rule, the test and setup commands, the environment cache.
        sandbox: Where validation runs (`sandbox_for(settings)`).
        limits: How much one pull request may be.
        on_note: Told once each thing mining cannot do as documented here (GitHub's
            GraphQL API failed: what it falls back to), as a sentence for people.
    """

    def __init__(
        self,
        github: GitHub,
        settings: Settings,
        sandbox: Sandbox,
        limits: MineLimits | None = None,
        *,
        on_note: Callable[[str], None] | None = None,
    ) -> None:
        self.github = github
        self.settings = settings
        self.sandbox = sandbox
        self.limits = limits or MineLimits()
        self.on_note = on_note
        self.notes: list[str] = []
        """What `on_note` was told, in order."""
        self._trust: Trust | None = None
        self.baselines = BaselineCache()
        self._default_branch: str | None = None
        self._graphql_links = True
        self._graphql_edits = True

    async def candidates(
        self, *, since: datetime | None, known: Collection[int], limit: int | None
    ) -> list[PullRequest]:
        """Merged pull requests not in `known`, merged at or after `since`, oldest merge
        first, at most `limit`."""
        found = [p for p in await self.github.merged_pulls(since=since) if p.number not in known]
        found.sort(key=lambda p: (p.merged_at or p.updated_at, p.number))
        return found[:limit] if limit is not None else found

    async def mine(
        self,
        pulls: list[PullRequest],
        *,
        on_start: Callable[[PullRequest], None] | None = None,
    ) -> AsyncIterator[Mined]:
        """Each pull request's result, in order, as soon as it is known."""
        for pull in pulls:
            if on_start is not None:
                on_start(pull)
            yield await self.mine_pull(pull)

    async def mine_pull(self, pull: PullRequest) -> Mined:
        """One pull request: its instance, or why it is skipped."""
        start = time.perf_counter()
        try:
            instance = await self._instance(pull)
        except _Skip as skip:
            merged_at = pull.merged_at or pull.updated_at
            skipped = SkippedPull(
                pull_number=pull.number,
                reason=skip.reason,
                detail=skip.detail,
                merged_at=merged_at,
                title=pull.title,
            )
            return Mined(pull, None, skipped, time.perf_counter() - start)
        return Mined(pull, instance, None, time.perf_counter() - start)

    async def trust(self) -> Trust:
        """Whose issues count, as for live work: the agents' identity is the configured
        `AGENT_LOOP_BOT_LOGIN`, else the token's own account (asked once)."""
        if self._trust is None:
            login = self.settings.bot_login or (await self.github.viewer()).login
            minimum = self.settings.trusted_min_permission
            self._trust = Trust(self.github, minimum=minimum, agent_login=login)
        return self._trust

    async def _default(self) -> str:
        if self._default_branch is None:
            # REST's repository, not GraphQL's `default_branch()`: mining needs the name
            # only, and goes on where GraphQL fails.
            self._default_branch = (await self.github.repository()).default_branch
        return self._default_branch

    async def _issues(self, pull: PullRequest) -> tuple[list[Issue], str]:
        """The linked issues (not pull requests) and the merge commit."""
        default = await self._default()
        if pull.base_ref != default:
            raise _Skip(
                SkipReason.NO_LINKED_ISSUE,
                f"merged into {pull.base_ref}, not the default branch {default}",
            )
        links = await self._links(pull.number)
        numbers = list(
            dict.fromkeys(
                [*links.closing_issues, *closing_references(pull.body, self.github.full_name)]
            )
        )
        issues: list[Issue] = []
        for number in numbers:
            try:
                issue = await self.github.get_issue(number)
            except NotFound:
                continue
            if not issue.is_pull_request:
                issues.append(issue)
        if not issues:
            raise _Skip(SkipReason.NO_LINKED_ISSUE, "it closes no issue of the repository")
        merge_sha = links.merge_commit_sha or await self._merged_event(pull.number)
        if not merge_sha:
            raise _Skip(SkipReason.NO_LINKED_ISSUE, "GitHub names no merge commit for it")
        return issues, merge_sha

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
            if self.on_note is not None:
                self.on_note(text)

    async def _links(self, number: int) -> PullLinks:
        """GraphQL's links of PR `number`; none (after a note) once GraphQL failed."""
        if self._graphql_links:
            try:
                return await self.github.pull_links(number)
            except RateLimited:
                raise
            except GitHubError as exc:
                self._graphql_links = False
                self._note(
                    f"GitHub's GraphQL API failed ({_said(exc)}): the issues a pull request "
                    "closes are read from the closing keywords of its body only (an issue "
                    "linked by hand is missed), its merge commit from its `merged` event"
                )
        return PullLinks(merge_commit_sha="", closing_issues=())

    async def _merged_event(self, number: int) -> str:
        """The commit PR `number`'s `merged` event names (REST's merge commit)."""
        events = await self.github.list_issue_events(number)
        found = [e.commit_id for e in events if e.event == "merged" and e.commit_id]
        return found[-1] if found else ""

    async def _refusal(self, issue: Issue, events: list[IssueEvent]) -> str:
        """Why `issue` may not be shown to a model (`issue_refusal`); without the last
        editor (after a note) once GraphQL failed to tell it."""
        trust = await self.trust()
        if self._graphql_edits:
            try:
                return await issue_refusal(self.github, trust, self.settings, issue, events=events)
            except RateLimited:
                raise
            except GitHubError as exc:
                if not exc.url.rstrip("/").endswith("graphql"):
                    raise
                self._graphql_failed(exc)
        return await issue_refusal(
            self.github, trust, self.settings, issue, edits=False, events=events
        )

    def _graphql_failed(self, exc: GitHubError) -> None:
        self._graphql_edits = False
        self._note(
            f"GitHub's GraphQL API failed ({_said(exc)}): who last edited an issue and "
            "its body's earlier text cannot be read, so an issue's text counts as its "
            "author's and is taken as it is now"
        )

    async def _history(self, number: int) -> BodyHistory | None:
        """Issue `number`'s body history; `None` (after a note) once GraphQL failed."""
        if not self._graphql_edits:
            return None
        try:
            return await self.github.body_history(number)
        except RateLimited:
            raise
        except GitHubError as exc:
            if not exc.url.rstrip("/").endswith("graphql"):
                raise
            self._graphql_failed(exc)
            return None

    async def _text(self, pull: PullRequest, issue: Issue, events: list[IssueEvent]) -> IssueText:
        """`issue`'s text when `pull` was opened, by people the trust rule trusts."""
        history = await self._history(issue.number)
        text = text_when_opened(issue, events, history, pull.created_at)
        if text.unknown:
            raise _Skip(
                SkipReason.EDITED_AFTER_FIX,
                f"#{issue.number}'s text when #{pull.number} was opened cannot be told: "
                f"{text.unknown}",
            )
        trust = await self.trust()
        for writer in text.writers:
            if writer is None or not await trust.trusted(writer):
                who = f"@{writer}" if writer else "a deleted account"
                raise _Skip(
                    SkipReason.UNTRUSTED_ISSUE,
                    f"#{issue.number}'s text when #{pull.number} was opened was written by "
                    f"{who}, who is below the trust rule (needs {trust.minimum})",
                )
        return text

    def _split(self, files: list[PullFile]) -> tuple[list[str], list[str]]:
        code, tests = split_test_paths(_paths(files))
        if not tests:
            raise _Skip(SkipReason.NO_TEST_CHANGE, f"{len(code)} file(s), none a test file")
        if not code:
            raise _Skip(SkipReason.NO_CODE_CHANGE, f"{len(tests)} test file(s) only")
        lines = sum(f.additions + f.deletions for f in files)
        limits = self.limits
        if len(files) > limits.max_files or lines > limits.max_changed_lines:
            raise _Skip(
                SkipReason.TOO_LARGE,
                f"{len(files)} files, {lines} changed lines (at most {limits.max_files} "
                f"files and {limits.max_changed_lines} lines)",
            )
        return code, tests

    async def _instance(self, pull: PullRequest) -> Instance:
        issues, merge_sha = await self._issues(pull)
        code_paths, test_paths = self._split(await self.github.list_pull_files(pull.number))
        texts: list[IssueText] = []
        for issue in issues:
            events = await self.github.list_issue_events(issue.number)
            refused = await self._refusal(issue, events)
            if refused:
                raise _Skip(SkipReason.UNTRUSTED_ISSUE, refused)
            texts.append(await self._text(pull, issue, events))
        merge = await self.github.get_commit(merge_sha)
        if not merge.parents:
            raise _Skip(SkipReason.NO_LINKED_ISSUE, f"merge commit {merge_sha[:7]} has no parent")
        base_sha = await merged_onto(
            self.github, merge, head_sha=pull.head_sha, base_sha=pull.base_sha
        )
        default = await self._default()
        base = RepoSnapshot(self.github, base_sha, default, label=f"base commit {base_sha[:7]}")
        merged = RepoSnapshot(self.github, merge_sha, default, label=f"merge {merge_sha[:7]}")
        before: dict[str, str] = {}
        after: dict[str, str] = {}
        for path in [*code_paths, *test_paths]:
            old = _decoded(path, await base.read(path))
            new = _decoded(path, await merged.read(path))
            if old is not None:
                before[path] = old
            if new is not None:
                after[path] = new
        try:
            patch = diff_files(before, after, code_paths)
            test_patch = diff_files(before, after, test_paths)
        except BinaryChange as exc:
            raise _Skip(SkipReason.BINARY_CHANGE, str(exc)) from None
        if not test_patch:
            raise _Skip(SkipReason.NO_TEST_CHANGE, "its test files end as they were at the base")
        if not patch:
            raise _Skip(SkipReason.NO_CODE_CHANGE, "its code files end as they were at the base")
        tests_change = {p: after.get(p) for p in test_paths if before.get(p) != after.get(p)}
        fix_change = {p: after.get(p) for p in code_paths if before.get(p) != after.get(p)}
        tree_files = {*await base.paths(), *after}
        async with open_sandbox_checks(
            self.settings, self.sandbox, tree=base, config=base, baselines=self.baselines
        ) as checks:
            checks.command = through_collection_errors(checks.command)
            classified = await self._validate(
                checks, tests_change, {**tests_change, **fix_change}, test_paths, tree_files
            )
            # As a person would set it: the sandbox adds its pytest guard to every run
            # itself, and `$SANDBOX_PYTEST_GUARD` is no setting's to name.
            command = shlex.join(without_guard(checks.command.argv)) if checks.command else ""
            setup = shlex.join(checks.setup) if checks.setup else ""
        return Instance(
            instance_id=instance_id(self.github.full_name, pull.number),
            repo=self.github.full_name,
            base_commit=base_sha,
            problem_statement=problem_statement(texts),
            patch=patch,
            test_patch=test_patch,
            FAIL_TO_PASS=list(classified.fail_to_pass),
            PASS_TO_PASS=list(classified.pass_to_pass),
            created_at=pull.created_at,
            issue_numbers=[i.number for i in issues],
            pull_number=pull.number,
            test_command=command,
            setup_command=setup,
        )

    async def _outcomes(
        self, checks: Checks, change: Mapping[str, str | None], files: Collection[str]
    ) -> list[dict[str, TestOutcome]]:
        runs: list[dict[str, TestOutcome]] = []
        for _ in range(self.limits.runs):
            report: CheckReport = await checks.check(change)
            result = report.after
            if result is None:
                raise _Skip(SkipReason.SETUP_FAILED, report.note or "the tests did not run")
            counts = result.tests
            if counts is None or counts.outcomes is None:
                why = result.error or "the test command reports no per-test outcomes (JUnit)"
                raise _Skip(SkipReason.SETUP_FAILED, why)
            runs.append(node_outcomes(counts.outcomes, files))
        return runs

    async def _validate(
        self,
        checks: Checks,
        tests_change: Mapping[str, str | None],
        full_change: Mapping[str, str | None],
        test_paths: list[str],
        files: Collection[str],
    ) -> Classified:
        if not checks.enabled:
            raise _Skip(SkipReason.SETUP_FAILED, checks.note or "no tests can run")
        before = await self._outcomes(checks, tests_change, files)
        after = await self._outcomes(checks, full_change, files)
        classified = classify(
            before, after, test_paths, max_pass_to_pass=self.limits.max_pass_to_pass
        )
        if not classified.fail_to_pass:
            if classified.flaky_fail_to_pass:
                names = ", ".join(classified.flaky_fail_to_pass[:5])
                raise _Skip(SkipReason.FLAKY, f"flaky: {names}")
            raise _Skip(
                SkipReason.NOTHING_FAILS_BEFORE,
                "no test of its test change fails at the base and passes with the fix",
            )
        return classified
