"""`Checks`: one run's test checks, from the sandbox and the configuration to verdicts.

A run that proposes code (a builder build, a reviewer pass) opens its checks once,
after it knows the commit its change applies to:

- the **tree** is that commit (the builder's base, the reviewer's pull request head),
  extracted once from the tarball the read tools already download, and copied for
  every run in the sandbox;
- the **command** comes from `AGENT_LOOP_TEST_COMMAND`, else from the **configuration
  commit** (`AGENTS.md`, `pyproject.toml`, ... on the base branch), never from the
  change under test, so a change cannot choose its own judge;
- the **baseline** (the command on the tree) runs at most once per base SHA and
  command, shared by every try and every `run_tests` call of the run (and, through the
  runtime's baseline store, by every run of a process at that commit). It does not
  depend on the change, so a run starts it as soon as its checks are open
  (`start_baseline`): the environment's build and the run on the base go on beside the
  agent's conversation, and only the change's own run waits for the change.

When the sandbox is off or no command is found, nothing runs: every report says why,
and the pull request opens as a draft saying no tests ran. Every verdict is live
progress (`tests.ran`, `by="check"`), as each `run_tests` call of an agent is.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

from agent_loop_common.checks._report import CheckReport
from agent_loop_common.progress import emit
from agent_loop_common.repo import RepoSnapshot
from agent_loop_common.runtime import Runtime
from agent_loop_common.sandbox import (
    ENVS_FOLDER,
    NO_TEST_COMMAND,
    PYTEST_CONFIG_FILES,
    BaselineStore,
    CommandRejected,
    DefaultSetup,
    EnvReuse,
    RunResult,
    Sandbox,
    TamperFlag,
    TestCommand,
    TestVerdict,
    baseline_key,
    compare,
    env_reuse,
    extract_tarball,
    flag_test_tampering,
    plan_tests,
    scan_test_machinery,
    validate_extra_args,
)
from agent_loop_common.settings import Settings

__all__ = ["Checks", "open_checks", "open_sandbox_checks"]

_DETECTED_FROM = (
    "AGENTS.md",
    "pyproject.toml",
    *PYTEST_CONFIG_FILES,
    "setup.cfg",
    "tox.ini",
    "conftest.py",
    "package.json",
    "go.mod",
    "Cargo.toml",
    "Makefile",
    "makefile",
    "GNUmakefile",
    "setup.py",
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-test.txt",
)
"""The root files the test command and the default setup are detected from (only these
are fetched, not the tree)."""

NO_COMMAND = NO_TEST_COMMAND
"""Why no tests run when no command was found (`sandbox.NO_TEST_COMMAND`)."""


class Checks:
    """The tests of one run: the sandbox, the command, the base tree and its baseline.

    Args:
        sandbox: Where commands run (`DisabledSandbox` when the sandbox is off).
        tree: The commit a change applies to (the baseline runs on it).
        command: The test command, or `None` when none was found.
        setup: The setup command run before the tests on the same copy, if any.
        baselines: Where baseline results are kept (per base SHA and command).
        max_tool_runs: Most `run_tests` calls per try.
        note: Why no tests run, when they do not (the sandbox is off, no command).
        default_setup: The default Python setup, when `setup` is it (shown in words).
        setup_from_repo: `setup` was named by `AGENTS.md` (it gets no host folder bound).
        envs: Where environments built by the default setup are kept (per base commit,
            setup and dependency files), so later tries and runs reuse them.
    """

    def __init__(
        self,
        *,
        sandbox: Sandbox,
        tree: RepoSnapshot,
        command: TestCommand | None,
        setup: tuple[str, ...] | None,
        baselines: BaselineStore,
        max_tool_runs: int,
        note: str = "",
        default_setup: DefaultSetup | None = None,
        setup_from_repo: bool = False,
        envs: Path | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.tree = tree
        self.command = command
        self.setup = setup
        self.baselines = baselines
        self.max_tool_runs = max_tool_runs
        self.note = note
        self.default_setup = default_setup
        self.setup_from_repo = setup_from_repo
        self.envs = envs
        self._reuse: EnvReuse | None = None
        self.runs = 0
        """Commands this run started in the sandbox (baselines, checks, `run_tests`)."""
        self.tool_runs = 0
        """`run_tests` calls in the current try."""
        self._root: Path | None = None
        self._lock = asyncio.Lock()
        self._early: asyncio.Task[None] | None = None

    @property
    def enabled(self) -> bool:
        """Whether tests run at all (a working sandbox and a test command)."""
        return self.sandbox.enabled and self.command is not None

    async def _tree_path(self) -> Path:
        async with self._lock:
            if self._root is None:
                archive = await self.tree.archive()
                root = Path(tempfile.mkdtemp(prefix="agent-loop-tree-"))
                try:
                    await asyncio.to_thread(extract_tarball, archive, root / "repo")
                except BaseException:
                    shutil.rmtree(root, ignore_errors=True)
                    raise
                self._root = root
            return self._root / "repo"

    async def _run(
        self, argv: Sequence[str], changes: Mapping[str, str | None] | None = None
    ) -> RunResult:
        tree = await self._tree_path()
        self.runs += 1
        reuse = await self._env_reuse(tree)
        # A command found in the repository's files (AGENTS.md) never chooses a host
        # folder for the sandbox to show; one from the operator's setting may.
        from_setting = self.command is not None and self.command.source == "setting"
        return await self.sandbox.run(
            tree,
            argv,
            changes=changes,
            setup=self.setup,
            operator_command=from_setting,
            operator_setup=not self.setup_from_repo,
            reuse=reuse,
        )

    async def _env_reuse(self, tree: Path) -> EnvReuse | None:
        """Where the default setup's environment for this tree is kept, if it is cached."""
        if self.default_setup is None or self.envs is None:
            return None
        if self._reuse is None:
            self._reuse = await asyncio.to_thread(
                env_reuse, self.envs, self.tree.sha, tree, self.default_setup.setup
            )
        return self._reuse

    async def baseline(self) -> RunResult | None:
        """The command's result on the tree (run once per SHA and command), or `None`."""
        if not self.enabled or self.command is None:
            return None
        argv = self.command.argv
        key = baseline_key(self.tree.sha, argv, self.setup)
        return await self.baselines.get_or_run(key, lambda: self._run(argv))

    def start_baseline(self, timed: Callable[[str], AbstractAsyncContextManager[None]]) -> None:
        """Start the baseline now, in the background, under the stage `timed("baseline")`.

        The environment's build and the run on the base commit then overlap the agent's
        conversation; `check` and `run_tests` join the run in flight (the baseline store
        runs a key once). A failure here is not reported: the first caller that needs the
        baseline runs it again and gets the error where it belongs. Nothing starts when
        no tests run. `aclose` cancels a run still going when the checks close.
        """
        if not self.enabled or self._early is not None:
            return

        async def run() -> None:
            async with timed("baseline"):
                await self.baseline()

        self._early = asyncio.create_task(run(), name="checks-baseline")
        self._early.add_done_callback(_quiet)

    async def aclose(self) -> None:
        """Stop a baseline `start_baseline` began that nobody waited for, then `close`."""
        early, self._early = self._early, None
        if early is not None and not early.done():
            early.cancel()
            with contextlib.suppress(BaseException):
                await early
        await asyncio.to_thread(self.close)

    def _report(
        self,
        *,
        flags: tuple[TamperFlag, ...],
        verdict: TestVerdict | None = None,
        base: RunResult | None = None,
        after: RunResult | None = None,
        note: str = "",
    ) -> CheckReport:
        return CheckReport(
            command=self.command,
            setup=self.setup,
            backend=self.sandbox.name,
            isolated=self.sandbox.isolated,
            verdict=verdict,
            flags=flags,
            base=base,
            after=after,
            note=note or self.note,
            setup_label=self.default_setup.label() if self.default_setup else "",
        )

    async def check(self, files: Mapping[str, str | None]) -> CheckReport:
        """Run the tests on the tree with `files` applied and judge them by the hard rules.

        Args:
            files: The change: path -> full new content, `None` to delete.
        """
        base_texts = await self.tree.originals(sorted(files))
        flags = flag_test_tampering(files, base_texts) + scan_test_machinery(files, base_texts)
        if not self.enabled or self.command is None:
            report = self._report(flags=flags)
        else:
            base = await self.baseline()
            broken = _unusable(base)
            if broken:
                # Not the change's fault: the command (or its setup) does not work on the
                # base commit. Nothing is judged; the pull request says no tests ran.
                report = self._report(flags=flags, base=base, note=broken)
            else:
                after = await self._run(self.command.argv, changes=files)
                verdict = compare(base, after)
                report = self._report(verdict=verdict, flags=flags, base=base, after=after)
        emit(
            "tests.ran",
            by="check",
            status=report.status,
            summary=report.summary,
            rejects=report.rejects,
            failing=list(report.verdict.failing[:10]) if report.verdict is not None else [],
        )
        return report

    async def run(self, files: Mapping[str, str | None]) -> RunResult:
        """The command once on the tree with `files` applied, outside any try's
        `run_tests` budget and with no baseline: the benchmark's scoring run, whose
        per-test outcomes (the JUnit report) are read against the instance's tests.

        Raises:
            CommandRejected: Tests do not run here (the sandbox is off, no command).
        """
        if not self.enabled or self.command is None:
            raise CommandRejected(f"no tests can run: {self.note}")
        return await self._run(self.command.argv, changes=files)

    def new_try(self) -> None:
        """Start counting `run_tests` calls for a new try."""
        self.tool_runs = 0

    async def try_run(
        self, files: Mapping[str, str | None], extra: Sequence[str] = ()
    ) -> tuple[RunResult, RunResult | None]:
        """The command (with validated `extra` arguments) on the tree with `files` applied.

        Returns:
            The run, and the baseline (the command alone on the tree) to compare with.

        Raises:
            CommandRejected: `extra` has shell syntax or a path outside the tree, the
                try's `run_tests` budget is spent, or tests do not run here.
        """
        if not self.enabled or self.command is None:
            raise CommandRejected(f"no tests can run: {self.note}")
        if self.tool_runs >= self.max_tool_runs:
            raise CommandRejected(
                f"this try already ran the tests {self.tool_runs} time(s), the most allowed "
                "(AGENT_LOOP_MAX_TEST_RUNS); submit, and the pipeline runs them on your change"
            )
        args = validate_extra_args(extra)
        self.tool_runs += 1
        base = await self.baseline()
        return await self._run((*self.command.argv, *args), changes=files), base

    def close(self) -> None:
        """Delete the extracted tree."""
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None


def _quiet(task: asyncio.Task[None]) -> None:
    """Retrieve a background baseline's failure: whoever needs it runs it again."""
    if not task.cancelled():
        task.exception()


def _unusable(base: RunResult | None) -> str:
    """Why the baseline says the tests cannot judge anything here, or `""`."""
    if base is None:
        return ""
    if base.setup is not None and not base.setup.ok:
        return f"the setup command failed on the base commit ({base.setup.summary()})"
    if base.error and base.exit_code == 127:
        return f"the test command could not start on the base commit ({base.error})"
    return ""


async def _detection_files(config: RepoSnapshot) -> dict[str, str]:
    present = set(await config.paths())
    files: dict[str, str] = {}
    for name in _DETECTED_FROM:
        if name in present:
            text = await config.text(name)
            if text is not None:
                files[name] = text
    return files


@asynccontextmanager
async def open_checks(
    runtime: Runtime, *, tree: RepoSnapshot, config: RepoSnapshot
) -> AsyncGenerator[Checks]:
    """The run's `Checks`; the extracted tree is deleted when the block ends.

    Args:
        runtime: The run (its sandbox, settings and baseline store).
        tree: The commit the change applies to.
        config: The commit the test command is detected from: the default branch,
            never the change (for the builder the same as `tree`).

    Raises:
        ConfigError: No sandbox works here (the claim's preflight normally said so first).
        CommandRejected: `AGENT_LOOP_SETUP_COMMAND` uses shell syntax (refused at load).
    """
    sandbox = await runtime.sandbox()
    async with open_sandbox_checks(
        runtime.settings, sandbox, tree=tree, config=config, baselines=runtime.baselines
    ) as checks:
        yield checks


@asynccontextmanager
async def open_sandbox_checks(
    settings: Settings,
    sandbox: Sandbox,
    *,
    tree: RepoSnapshot,
    config: RepoSnapshot,
    baselines: BaselineStore,
) -> AsyncGenerator[Checks]:
    """`open_checks` outside a run: the same command, setup and environment cache from
    `settings` and the `config` commit, in a sandbox the caller opened (the eval checks
    mined pull requests this way, with no claim, memory or model).

    Raises:
        CommandRejected: `AGENT_LOOP_SETUP_COMMAND` uses shell syntax (refused at load).
    """
    if sandbox.enabled:
        files = {} if settings.test_command else await _detection_files(config)
        plan = plan_tests(settings, files)
    else:  # nothing runs: no command, and no default setup to build
        plan = plan_tests(settings, {}).model_copy(
            update={"command": None, "note": "the sandbox is off (`AGENT_LOOP_SANDBOX=off`)"}
        )
    checks = Checks(
        sandbox=sandbox,
        tree=tree,
        command=plan.command,
        setup=plan.setup,
        baselines=baselines,
        max_tool_runs=settings.max_test_runs,
        note=plan.note,
        default_setup=plan.default_setup,
        setup_from_repo=plan.setup_from_repo,
        envs=(settings.home / ENVS_FOLDER).resolve(),
    )
    try:
        yield checks
    finally:
        await checks.aclose()
