"""Which command runs a repository's tests, when no setting says so.

The command is read from the repository's files at the run's base commit (never from
the change being tested, which could otherwise pick its own judge). The rules, first
match wins:

1. **`AGENTS.md`** at the root:
   a. a line `Test command: <command>` (any case; the command may be in backticks;
      a leading list marker or bold markers are ignored), else
   b. the first fenced code block under the first heading whose text contains
      "test" (`## Testing`, `### Running the tests`): its first line that is not
      empty, not a comment, with a leading `$ ` prompt removed.
   A command found there that the sandbox refuses (shell syntax such as `&&`) is
   skipped with a note, and detection goes on.
2. **Python with pytest**: `pyproject.toml` with a `[tool.pytest` section or a pytest
   dependency, `pytest.toml`, `.pytest.toml`, `pytest.ini`, `.pytest.ini`, `setup.cfg`
   with `[tool:pytest]`, `tox.ini` with `[pytest]`, a root `conftest.py`: `python -m pytest -q --junitxml=$SANDBOX_JUNIT` (the JUnit
   report names every test, which the verdict needs for per-test comparisons).
3. **`package.json`** with a `scripts.test` that is not npm's placeholder: `npm test`.
4. **`go.mod`**: `go test ./...`.
5. **`Cargo.toml`**: `cargo test`.
6. **`Makefile`** with a `test:` target: `make test`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Literal, cast

from pydantic import BaseModel, ConfigDict

from agent_loop_common.sandbox._command import parse_command
from agent_loop_common.sandbox._errors import CommandRejected
from agent_loop_common.sandbox._guard import GUARD_PLACEHOLDER, without_guard
from agent_loop_common.sandbox._tamper import PYTEST_CONFIG_FILES

__all__ = [
    "CommandSource",
    "TestCommand",
    "detect_test_command",
    "resolve_test_command",
    "runs_pytest",
    "with_junit_report",
    "with_pytest_guard",
]

CommandSource = Literal[
    "setting",
    "AGENTS.md",
    "pyproject.toml",
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "setup.cfg",
    "tox.ini",
    "conftest.py",
    "package.json",
    "go.mod",
    "Cargo.toml",
    "Makefile",
]
"""Where a test command came from."""

FileReader = Callable[[str], str | None]
"""Returns a file's text at the base commit, or `None` when there is no such file."""

PYTEST_COMMAND = ("python", "-m", "pytest", "-q", "--junitxml=$SANDBOX_JUNIT")

_TEST_LINE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?test[ -]command(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*(.+?)\s*$",
    re.IGNORECASE,
)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(```+|~~~+)")
_NPM_PLACEHOLDER = "no test specified"


class TestCommand(BaseModel):
    """A test command and where it came from."""

    __test__ = False  # not a pytest test class
    model_config = ConfigDict(frozen=True)

    argv: tuple[str, ...]
    """The command as an argument vector (may contain `$SANDBOX_JUNIT`)."""
    source: CommandSource
    """Where it came from: the setting or the file it was detected from."""
    notes: tuple[str, ...] = ()
    """Candidates that were skipped on the way, and why."""

    def describe(self) -> str:
        """`python -m pytest -q (from pyproject.toml)`: as a person would run it (the
        pytest guard's `-p $SANDBOX_PYTEST_GUARD` is the sandbox's own)."""
        return f"{' '.join(without_guard(self.argv))} (from {self.source})"


def _reader(files: Mapping[str, str] | FileReader) -> FileReader:
    if callable(files):
        return files
    return files.get


def _strip_code(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "`":
        text = text.strip("`").strip()
    return text


def _agents_md_candidates(text: str) -> list[str]:
    """Rule 1: candidate commands from `AGENTS.md`, best first."""
    lines = text.splitlines()
    found: list[str] = []
    for line in lines:
        match = _TEST_LINE.match(line)
        if match:
            found.append(_strip_code(match.group(1).rstrip("*_ ")))
            break
    in_section = False
    fence: str | None = None
    for line in lines:
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
                if in_section:
                    break
                continue
            if in_section:
                command = line.strip()
                if command and not command.startswith("#"):
                    found.append(command.removeprefix("$ ").strip())
                    break
            continue
        fence_match = _FENCE.match(line)
        if fence_match:
            fence = fence_match.group(1)
            continue
        heading = _HEADING.match(line)
        if heading:
            if in_section:
                break
            in_section = "test" in heading.group(2).lower()
    return found


def _pytest_source(read: FileReader) -> CommandSource | None:
    """Rule 2: the file that says the repository uses pytest, if any."""
    pyproject = read("pyproject.toml") or ""
    if "[tool.pytest" in pyproject or re.search(r"""["']pytest\b""", pyproject):
        return "pyproject.toml"
    for name in PYTEST_CONFIG_FILES:
        if read(name) is not None:
            return cast("CommandSource", name)
    if "[tool:pytest]" in (read("setup.cfg") or ""):
        return "setup.cfg"
    if "[pytest]" in (read("tox.ini") or ""):
        return "tox.ini"
    if read("conftest.py") is not None:
        return "conftest.py"
    return None


def _npm_test(read: FileReader) -> bool:
    text = read("package.json")
    if text is None:
        return False
    try:
        data: object = json.loads(text)
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    scripts = cast("dict[str, object]", data).get("scripts")
    if not isinstance(scripts, dict):
        return False
    test = cast("dict[str, object]", scripts).get("test")
    return isinstance(test, str) and bool(test.strip()) and _NPM_PLACEHOLDER not in test


def _make_test(read: FileReader) -> bool:
    for name in ("Makefile", "makefile", "GNUmakefile"):
        text = read(name)
        if text is not None and re.search(r"^test\s*:", text, re.MULTILINE):
            return True
    return False


def detect_test_command(files: Mapping[str, str] | FileReader) -> TestCommand | None:
    """The repository's test command by the rules above, or `None` when none applies.

    Args:
        files: The base commit's files as `path -> text`, or a function reading one
            (paths relative to the repository root, `/`-separated).
    """
    read = _reader(files)
    notes: list[str] = []
    agents = read("AGENTS.md")
    if agents is not None:
        for candidate in _agents_md_candidates(agents):
            try:
                argv = parse_command(candidate, what="the test command in AGENTS.md")
            except CommandRejected as exc:
                notes.append(f"skipped: {exc}")
                continue
            return TestCommand(argv=argv, source="AGENTS.md", notes=tuple(notes))
    pytest_source = _pytest_source(read)
    if pytest_source is not None:
        return TestCommand(argv=PYTEST_COMMAND, source=pytest_source, notes=tuple(notes))
    simple: list[tuple[bool, tuple[str, ...], CommandSource]] = [
        (_npm_test(read), ("npm", "test"), "package.json"),
        (read("go.mod") is not None, ("go", "test", "./..."), "go.mod"),
        (read("Cargo.toml") is not None, ("cargo", "test"), "Cargo.toml"),
        (_make_test(read), ("make", "test"), "Makefile"),
    ]
    for applies, argv, source in simple:
        if applies:
            return TestCommand(argv=argv, source=source, notes=tuple(notes))
    return None


def resolve_test_command(
    setting: str | None, files: Mapping[str, str] | FileReader
) -> TestCommand | None:
    """`AGENT_LOOP_TEST_COMMAND` when set, else the detected command.

    Raises:
        CommandRejected: The setting uses shell syntax (normally caught at load time).
    """
    if setting is not None and setting.strip():
        argv = parse_command(setting, what="AGENT_LOOP_TEST_COMMAND")
        return TestCommand(argv=argv, source="setting")
    return detect_test_command(files)


_JUNIT_ARG = "--junitxml=$SANDBOX_JUNIT"
_OWN_REPORT = ("--junitxml", "--junit-xml", "--junitprefix")


def runs_pytest(argv: tuple[str, ...]) -> bool:
    """`python -m pytest ...`, `pytest ...`, `uv run pytest ...`, `.venv/bin/pytest ...`."""
    for i, arg in enumerate(argv[:4]):
        if arg == "-m" and i + 1 < len(argv) and argv[i + 1] == "pytest":
            return True
        if arg.rsplit("/", 1)[-1] in ("pytest", "py.test"):
            return True
    return False


def with_junit_report(command: TestCommand) -> TestCommand:
    """`command` with `--junitxml=$SANDBOX_JUNIT` when it runs pytest without a report.

    pytest's printed output names only the failing tests; its JUnit report names every
    test with its outcome, which the verdict needs for fail-to-pass evidence and to
    check the exit status and the printed summary against (`evidence_disagreements`).
    A command that names its own report, or switches the plugin off
    (`-p no:junitxml`), is left as it is.
    """
    argv = command.argv
    if not runs_pytest(argv):
        return command
    if any(arg.startswith(_OWN_REPORT) or "SANDBOX_JUNIT" in arg for arg in argv):
        return command
    if any(a == "no:junitxml" or a == "-pno:junitxml" for a in argv):
        return command
    note = (
        f"added {_JUNIT_ARG} so every test's outcome is known "
        "(AGENT_LOOP_TEST_JUNIT_REPORT=false runs the command as given)"
    )
    return command.model_copy(update={"argv": (*argv, _JUNIT_ARG), "notes": (*command.notes, note)})


def with_pytest_guard(command: TestCommand) -> TestCommand:
    """`command` with `-p $SANDBOX_PYTEST_GUARD` when it runs pytest: the sandbox fills in
    its guard plugin, which pytest loads before anything of the repository's and which
    records code that steers the run's evidence from inside (`_guard`, docs/sandbox.md).
    """
    argv = command.argv
    if not runs_pytest(argv) or GUARD_PLACEHOLDER in argv:
        return command
    note = (
        f"added -p {GUARD_PLACEHOLDER}: the sandbox's pytest guard loads first and records "
        "code that steers the run from inside"
    )
    return command.model_copy(
        update={"argv": (*argv, "-p", GUARD_PLACEHOLDER), "notes": (*command.notes, note)}
    )
