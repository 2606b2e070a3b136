"""`TestPlan`: which setup and test command a repository's tests get, from one place.

A tick (`checks.open_checks`, on the base commit's files) and `agent-loop sandbox run
--dir` (on a folder's files) must run the same thing, or a person trying a repository
sees another result than the agent gets (issue 31: the CLI exited 127 on a zero-config
Python project the builder tested fine). So both ask `plan_tests`:

1. the test command: `AGENT_LOOP_TEST_COMMAND`, else detected from the files
   (`resolve_test_command`), with `--junitxml=$SANDBOX_JUNIT` added to a pytest command
   that names no report (`AGENT_LOOP_TEST_JUNIT_REPORT`), and the sandbox's pytest
   guard (`-p $SANDBOX_PYTEST_GUARD`) to every pytest command;
2. the setup: `AGENT_LOOP_SETUP_COMMAND`, else a `Setup command:` line of `AGENTS.md`
   (then it was chosen by the repository, and gets no host folder bound);
3. neither setup nor test command configured, and the command detected from a Python
   file: the default Python setup (`.sandbox-venv`, `default_python_setup`).

Pure: the files come in as texts or a reader.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from agent_loop_common.sandbox._command import parse_command
from agent_loop_common.sandbox._detect import (
    TestCommand,
    resolve_test_command,
    with_junit_report,
    with_pytest_guard,
)
from agent_loop_common.sandbox._pysetup import (
    DefaultSetup,
    agents_md_setup_command,
    default_python_setup,
)

if TYPE_CHECKING:
    from agent_loop_common.settings import Settings

__all__ = ["NO_TEST_COMMAND", "TestPlan", "plan_tests"]

NO_TEST_COMMAND = (
    "no test command was found: set AGENT_LOOP_TEST_COMMAND, or name one in AGENTS.md "
    "(`Test command: ...`) on the default branch"
)
"""Why no tests run when neither the setting nor the files give a command."""


class TestPlan(BaseModel):
    """The setup and test command of a repository's tests, and where they came from."""

    __test__ = False  # not a pytest test class
    model_config = ConfigDict(frozen=True)

    command: TestCommand | None
    """The test command; `None` when none was found (`note` says why)."""
    setup: tuple[str, ...] | None = None
    """The setup command run first on the same copy, with the network, if any."""
    setup_from_repo: bool = False
    """`setup` was named by `AGENTS.md`: no host folder is bound for its program."""
    default_setup: DefaultSetup | None = None
    """The default Python setup, when `setup` is it (shown in words: `setup_text`)."""
    note: str = ""
    """Why no tests run, when `command` is `None`."""

    def setup_text(self) -> str:
        """The setup as people read it: the default setup's words, or the command."""
        if self.default_setup is not None:
            return self.default_setup.label()
        return " ".join(self.setup or ())


def plan_tests(
    settings: Settings, files: Mapping[str, str] | Callable[[str], str | None]
) -> TestPlan:
    """The tests' plan from the settings and the repository's root files.

    Args:
        settings: `AGENT_LOOP_TEST_COMMAND`, `AGENT_LOOP_SETUP_COMMAND`,
            `AGENT_LOOP_PIP_OPTIONS`, `AGENT_LOOP_TEST_JUNIT_REPORT`.
        files: The root files commands are detected from (`path -> text`, or a reader);
            not consulted when `AGENT_LOOP_TEST_COMMAND` is set.

    Raises:
        CommandRejected: A setting or `AGENTS.md`'s setup line uses shell syntax.
    """
    read = files if callable(files) else files.get
    detecting = not settings.test_command
    command = resolve_test_command(settings.test_command, read)
    if command is not None and settings.test_junit_report:
        command = with_junit_report(command)
    setup = (
        parse_command(settings.setup_command, what="AGENT_LOOP_SETUP_COMMAND")
        if settings.setup_command
        else None
    )
    setup_from_repo = False
    agents_md = read("AGENTS.md") if detecting else None
    named = agents_md_setup_command(agents_md) if agents_md is not None else None
    if setup is None and named is not None:
        # Chosen by the repository's files: like its test command, it gets no host folder.
        setup = parse_command(named, what="the setup command in AGENTS.md")
        setup_from_repo = True
    default: DefaultSetup | None = None
    if setup is None and detecting and command is not None:
        pip_options = (
            parse_command(settings.pip_options, what="AGENT_LOOP_PIP_OPTIONS")
            if settings.pip_options
            else ()
        )
        default = default_python_setup(read, command, pip_options)
        if default is not None:
            setup, command = default.setup, default.command
    if command is not None:
        # pytest loads the sandbox's guard first: code that steers the run from inside
        # (a plugin registered from product code, a flipped report) is recorded.
        command = with_pytest_guard(command)
    return TestPlan(
        command=command,
        setup=setup,
        setup_from_repo=setup_from_repo,
        default_setup=default,
        note="" if command is not None else NO_TEST_COMMAND,
    )
