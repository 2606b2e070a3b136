"""The `Sandbox` every backend implements, and what they share.

A run is always the same: copy the tree into a fresh workspace (applying a staged
change to the copy, never to the original), optionally run a setup command with the
network on, install the pytest guard under a fresh name when the command asks for it
(after the setup, so nothing the change runs first can know the name: `_guard`), run
the command with the network off, read what the test runner and the guard reported, and
delete the workspace. Backends differ only in `_execute`: how one command starts inside
their isolation (and whether they can show the guard's folder to it, `pytest_guard`).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from agent_loop_common.redaction import redact_secrets
from agent_loop_common.sandbox._capture import OutputCapture
from agent_loop_common.sandbox._command import JUNIT_PLACEHOLDER
from agent_loop_common.sandbox._errors import CommandRejected, TreeError
from agent_loop_common.sandbox._evidence import evidence_disagreements
from agent_loop_common.sandbox._guard import (
    guard_findings,
    has_guard_placeholder,
    install_guard,
    read_guard_reports,
)
from agent_loop_common.sandbox._limits import SandboxLimits
from agent_loop_common.sandbox._paths import ProtectedPaths
from agent_loop_common.sandbox._process import ProcessOutcome
from agent_loop_common.sandbox._pysetup import EnvReuse, folder_dependency_digest
from agent_loop_common.sandbox._reports import read_junit
from agent_loop_common.sandbox._result import LimitName, OutputExcerpt, RunResult, TestCounts
from agent_loop_common.sandbox._tree import Workspace, safe_relpath

__all__ = ["OFF_BACKEND", "DisabledSandbox", "Sandbox", "infer_limit", "result_from"]

OFF_BACKEND = "off"
"""The backend name of a sandbox that runs nothing (`AGENT_LOOP_SANDBOX=off`)."""

_MEMORY = re.compile(r"MemoryError|Cannot allocate memory|out of memory|std::bad_alloc", re.I)
_FILE_SIZE = re.compile(r"File too large|File size limit exceeded|EFBIG")
_PROCESSES = re.compile(
    r"BlockingIOError|Resource temporarily unavailable|fork: retry|Cannot fork|EAGAIN"
)


def infer_limit(
    *, exit_code: int, signal_number: int | None, timed_out: bool, text: str
) -> LimitName | None:
    """The limit a command most likely ran into, from how it ended and what it printed."""
    if timed_out:
        return "time"
    if exit_code == 0:
        return None
    if signal_number == signal.SIGXCPU:
        return "cpu"
    if signal_number == signal.SIGXFSZ or _FILE_SIZE.search(text):
        return "file_size"
    if _MEMORY.search(text):
        return "memory"
    if _PROCESSES.search(text):
        return "processes"
    return None


def result_from(
    outcome: ProcessOutcome,
    *,
    backend: str,
    argv: Sequence[str],
    network: bool,
    notes: Sequence[str] = (),
) -> RunResult:
    """A `RunResult` from a finished process: output, printed test counts, limits.

    Token-shaped strings in the output and the test names are redacted
    (`redact_secrets`): they reach the model's feedback and the pull request. The
    sandbox holds no secret; this is the second line, for one that got in anyway. The
    JUnit report is read afterwards by `Sandbox.run` (in a thread, never on the event
    loop), which also checks that the evidence agrees with itself.
    """
    excerpt = _redacted_output(outcome.capture.excerpt())
    printed = outcome.capture.printed_counts()
    if printed is not None:
        printed = _redacted_tests(printed)
    return RunResult(
        backend=backend,
        argv=tuple(argv),
        exit_code=outcome.exit_code,
        signal=outcome.signal,
        duration_seconds=round(outcome.duration, 4),
        timed_out=outcome.timed_out,
        limit=infer_limit(
            exit_code=outcome.exit_code,
            signal_number=outcome.signal,
            timed_out=outcome.timed_out,
            text=excerpt.text,
        ),
        network=network,
        output=excerpt,
        tests=printed,
        printed=printed,
        printed_failing_max=outcome.capture.scanner.most_failing,
        error=outcome.start_error,
        notes=tuple(notes),
    )


def _redacted_output(excerpt: OutputExcerpt) -> OutputExcerpt:
    head, tail = redact_secrets(excerpt.head), redact_secrets(excerpt.tail)
    if (head, tail) == (excerpt.head, excerpt.tail):
        return excerpt
    return excerpt.model_copy(update={"head": head, "tail": tail})


def _redacted_tests(tests: TestCounts) -> TestCounts:
    failing = tuple(redact_secrets(name) for name in tests.failing)
    outcomes = (
        {redact_secrets(name): outcome for name, outcome in tests.outcomes.items()}
        if tests.outcomes is not None
        else None
    )
    if failing == tests.failing and outcomes == tests.outcomes:
        return tests
    return tests.model_copy(update={"failing": failing, "outcomes": outcomes})


class Sandbox(ABC):
    """Runs commands on a private copy of a tree, isolated as its backend allows.

    Args:
        limits: Time, memory, process and file-size limits of each command.
        protected: Host paths never shown to a command (default: this machine's homes).
        readonly_paths: Extra host paths to show read-only (protected ones are refused).
        work_root: Where workspaces are created (default: the system's temp folder).
        head_bytes: Output bytes kept from the start of each command.
        tail_bytes: Output bytes kept from the end.
    """

    name: ClassVar[str]
    """The backend's name, shown in results and by `agent-loop sandbox check`."""
    isolated: ClassVar[bool] = True
    """False only for the plain subprocess: it shares the machine with the agent."""
    enabled: ClassVar[bool] = True
    """False only for `off`: nothing runs."""
    pytest_guard: ClassVar[bool] = True
    """The backend can show the pytest guard's folder to the command (`_guard`); one that
    cannot runs a guarded command without it (`-p $SANDBOX_PYTEST_GUARD` dropped)."""
    fixed_repo_path: ClassVar[bool] = False
    """The copy is always at one path inside (`/sandbox/repo`), so an environment built in
    one copy (an editable install names that path) works in another (`reuse`)."""

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        protected: ProtectedPaths | None = None,
        readonly_paths: Sequence[str | Path] = (),
        work_root: Path | None = None,
        head_bytes: int = 8 * 1024,
        tail_bytes: int = 24 * 1024,
    ) -> None:
        self.limits = limits or SandboxLimits()
        self.protected = protected if protected is not None else ProtectedPaths.current()
        self.readonly_paths = tuple(readonly_paths)
        self.work_root = work_root
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes

    def workspace_owner(self) -> tuple[int, int] | None:
        """`(uid, gid)` the workspace must belong to, when the command runs as another user."""
        return None

    def new_capture(self) -> OutputCapture:
        """An output capture with this sandbox's head and tail sizes."""
        return OutputCapture(self.head_bytes, self.tail_bytes)

    async def run(
        self,
        tree: Path,
        argv: Sequence[str],
        *,
        network: bool = False,
        time_limit: float | None = None,
        changes: Mapping[str, str | bytes | None] | None = None,
        setup: Sequence[str] | None = None,
        skip: Sequence[str] = (),
        operator_command: bool = True,
        operator_setup: bool = True,
        reuse: EnvReuse | None = None,
    ) -> RunResult:
        """Run `argv` on a private copy of `tree` and report what happened.

        Args:
            tree: The repository folder (never modified).
            argv: The command; `$SANDBOX_JUNIT` in an argument becomes the report path.
            network: Let the command reach the network (setup steps only; tests never).
            time_limit: Wall-time limit in seconds (default: the sandbox's limit).
            changes: A staged change (`path -> text`, `None` deletes) applied to the copy.
            setup: A command run first on the same copy, with the network on; when it
                fails, `argv` does not run and the result carries the setup's result.
            skip: Paths relative to `tree` not to copy (besides `.git`, never copied).
            operator_command: `argv` comes from the operator (a setting, the CLI, the
                caller's code). False when the repository's files chose it (`AGENTS.md`):
                then a program it names by absolute path gets no host folder bound, since
                nothing in the repository chooses what the sandbox sees.
            operator_setup: The same for `setup` (False when `AGENTS.md` named it).
            reuse: Where the environment `setup` builds is kept: when the copy's
                dependency files match `reuse.digest` and it was built, it is copied in
                and `setup` does not run; a run with no `changes` that builds it keeps it.

        Raises:
            CommandRejected: `argv` is empty.
            TreeError: `tree` is not a folder, is a protected one (a home folder, the
                agent's state folder), or `changes` has a bad path.
        """
        if not argv or not argv[0]:
            raise CommandRejected("the command is empty")
        refusal = self.protected.tree_refusal(tree)
        if refusal is not None:
            raise TreeError(f"will not copy {tree} into a sandbox: {refusal}")
        limit = time_limit if time_limit is not None else self.limits.wall_seconds
        workspace = await asyncio.to_thread(
            Workspace.create,
            tree,
            changes=changes,
            owner=self.workspace_owner(),
            exclude=[*self.protected.in_tree(tree), *(tree / safe_relpath(p) for p in skip)],
            parent=self.work_root,
        )
        try:
            setup_result: RunResult | None = None
            notes: tuple[str, ...] = ()
            matches = (
                reuse is not None
                and self.fixed_repo_path
                and await asyncio.to_thread(_same_dependencies, workspace, reuse)
            )
            if (
                setup
                and reuse is not None
                and matches
                and await asyncio.to_thread(_restore_env, workspace, reuse, self.workspace_owner())
            ):
                notes = (
                    f"setup: reused the environment built for this base commit ({reuse.folder})",
                )
            elif setup:
                setup_result = await self._execute(
                    workspace,
                    tuple(setup),
                    network=True,
                    time_limit=limit,
                    bind_program=operator_setup,
                )
                if not setup_result.ok:
                    return RunResult(
                        backend=self.name,
                        argv=tuple(argv),
                        exit_code=None,
                        error=f"the setup command failed ({setup_result.summary()})",
                        setup=setup_result,
                    )
                await asyncio.to_thread(_clear_report, workspace)
                if reuse is not None and matches and changes is None:
                    await asyncio.to_thread(_keep_env, workspace, reuse)
            if self.pytest_guard and has_guard_placeholder(argv):
                # Named after the setup ran: nothing the change runs before pytest knows it.
                workspace.guard_module = await asyncio.to_thread(
                    install_guard, workspace.guard, list(changes or ())
                )
            result = await self._execute(
                workspace,
                tuple(argv),
                network=network,
                time_limit=limit,
                bind_program=operator_command,
            )
            result = await _with_report(result, workspace, argv)
            if notes:
                result = result.model_copy(update={"notes": (*notes, *result.notes)})
            return result.model_copy(update={"setup": setup_result}) if setup_result else result
        finally:
            workspace.discard()

    @abstractmethod
    async def _execute(
        self,
        workspace: Workspace,
        argv: tuple[str, ...],
        *,
        network: bool,
        time_limit: float,
        bind_program: bool = True,
    ) -> RunResult:
        """Run one command in `workspace.repo` inside this backend's isolation.

        `bind_program` False: the program was named by the repository's files, so no host
        folder is shown for it (backends that bind host folders honour it).
        """

    def describe(self) -> str:
        """One line for logs and the CLI."""
        return self.name


def _same_dependencies(workspace: Workspace, reuse: EnvReuse) -> bool:
    return folder_dependency_digest(workspace.repo) == reuse.digest


def _restore_env(workspace: Workspace, reuse: EnvReuse, owner: tuple[int, int] | None) -> bool:
    """Copy the kept environment into the copy; False when there is none (yet)."""
    if not reuse.store.is_dir():
        return False
    target = workspace.repo / reuse.folder
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(reuse.store, target, symlinks=True)
    if owner is not None:
        for path in (target, *target.rglob("*")):
            os.lchown(path, *owner)
    return True


def _keep_env(workspace: Workspace, reuse: EnvReuse) -> None:
    """Keep the environment setup built on the base commit (atomically, first one wins)."""
    built = workspace.repo / reuse.folder
    if not built.is_dir() or reuse.store.exists():
        return
    reuse.store.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=reuse.store.parent)) / "env"
    try:
        shutil.copytree(built, staging, symlinks=True)
        os.replace(staging, reuse.store)
    except OSError:
        pass  # another run kept one first, or the disk is full: the next run builds again
    finally:
        shutil.rmtree(staging.parent, ignore_errors=True)


def _clear_report(workspace: Workspace) -> None:
    workspace.junit.unlink(missing_ok=True)


async def _with_report(result: RunResult, workspace: Workspace, argv: Sequence[str]) -> RunResult:
    """`result` with the JUnit report's counts (read in a thread) and its disagreements."""
    read = await asyncio.to_thread(read_junit, workspace.junit)
    update: dict[str, object] = {}
    if read.counts is not None:
        update["tests"] = _redacted_tests(read.counts)
    if read.problem:
        update["junit_problem"] = read.problem
        update["junit_forged"] = read.forged
        update["notes"] = (*result.notes, f"{read.problem}: not used")
    merged = result.model_copy(update=update)
    expected = any(JUNIT_PLACEHOLDER in arg or "{SANDBOX_JUNIT}" in arg for arg in argv)
    disagreements = evidence_disagreements(merged, junit_expected=expected)
    if disagreements:
        merged = merged.model_copy(update={"disagreements": disagreements})
    if workspace.guard_module is None:
        return merged
    reading = await asyncio.to_thread(read_guard_reports, workspace.out, workspace.guard_module)
    return merged.model_copy(
        update={
            "guarded": True,
            "guard_findings": guard_findings(merged, reading),
            "guard_failing": tuple(redact_secrets(n) for n in reading.failing),
        }
    )


class DisabledSandbox(Sandbox):
    """`AGENT_LOOP_SANDBOX=off`: runs nothing, and says so in every result.

    The caller opens its pull request as a draft and states that no tests ran.
    """

    name = OFF_BACKEND
    isolated = False
    enabled = False

    async def run(
        self,
        tree: Path,
        argv: Sequence[str],
        *,
        network: bool = False,
        time_limit: float | None = None,
        changes: Mapping[str, str | bytes | None] | None = None,
        setup: Sequence[str] | None = None,
        skip: Sequence[str] = (),
        operator_command: bool = True,
        operator_setup: bool = True,
        reuse: EnvReuse | None = None,
    ) -> RunResult:
        """A result with `exit_code=None`: nothing ran."""
        return RunResult(
            backend=self.name,
            argv=tuple(argv),
            exit_code=None,
            error="the sandbox is off (AGENT_LOOP_SANDBOX=off): no tests ran",
        )

    async def _execute(
        self,
        workspace: Workspace,
        argv: tuple[str, ...],
        *,
        network: bool,
        time_limit: float,
        bind_program: bool = True,
    ) -> RunResult:  # pragma: no cover - run() never calls it
        raise NotImplementedError
