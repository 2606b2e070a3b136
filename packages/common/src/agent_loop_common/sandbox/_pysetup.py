"""The default setup of a Python repository that configures none, and its cache.

A plain Python repository (a `pyproject.toml` with a test extra, no environment in the
tree) has no `python` with its dependencies in the sandbox: its tests cannot even start.
When neither the settings nor `AGENTS.md` name a setup or test command, the sandbox
builds a private environment in the copy (`.sandbox-venv`: `uv` when it is on the
sandbox's `PATH`, else `python3 -m venv` and pip), installs the project with its test
extra (`.[test]`, `.[tests]` or `.[dev]`) or its requirements files, and the detected
pytest command runs with that environment's python.

Building it takes seconds to minutes, so the built folder is kept on the host per base
commit, setup and dependency files (`EnvReuse`): later tries and ticks copy it in instead
of installing again. Only a run on the base commit itself (no staged change) fills the
cache, and a run reuses it only when its dependency files are byte-identical to the
base's, so a change can neither write into the environment others reuse nor get one
built for other dependencies.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import cast

from pydantic import BaseModel, ConfigDict

from agent_loop_common.sandbox._detect import TestCommand
from agent_loop_common.sandbox._tamper import PYTEST_CONFIG_FILES

__all__ = [
    "DEPENDENCY_FILES",
    "ENVS_FOLDER",
    "VENV_DIR",
    "DefaultSetup",
    "EnvReuse",
    "agents_md_setup_command",
    "default_python_setup",
    "dependency_digest",
    "env_reuse",
    "folder_dependency_digest",
]

VENV_DIR = ".sandbox-venv"
"""The environment's folder, relative to the copy's root."""
ENVS_FOLDER = "sandbox-envs"
"""Where built environments are kept, under `AGENT_LOOP_HOME`."""

DEPENDENCY_FILES = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-test.txt",
)
"""The root files an environment depends on (their contents key the cache)."""

_EXTRAS = ("test", "tests", "dev")
_REQUIREMENTS = ("requirements-dev.txt", "requirements-test.txt", "requirements.txt")
_PYTHON_SOURCES = ("pyproject.toml", *PYTEST_CONFIG_FILES, "setup.cfg", "tox.ini", "conftest.py")

# Run by /bin/sh inside the sandbox: the arguments after the script are pip's.
_SCRIPT = f"""set -e
if command -v uv >/dev/null 2>&1; then
  echo "setup: uv venv {VENV_DIR} + uv pip install $*"
  uv venv -q {VENV_DIR}
  uv pip install -q --python {VENV_DIR}/bin/python "$@"
else
  echo "setup: python3 -m venv {VENV_DIR} + pip install $*"
  python3 -m venv {VENV_DIR}
  {VENV_DIR}/bin/python -m pip install -q --disable-pip-version-check "$@"
fi
"""


class DefaultSetup(BaseModel):
    """The setup and test command a Python repository gets when it configures neither."""

    model_config = ConfigDict(frozen=True)

    setup: tuple[str, ...]
    """The setup command (a fixed `sh` script; the install arguments follow it)."""
    install: tuple[str, ...]
    """What pip installs, e.g. `-e .[test]`."""
    command: TestCommand
    """The test command, with the environment's python."""

    def label(self) -> str:
        """What the pull request says ran, e.g. `default Python environment (...)`."""
        return (
            f"default Python environment ({VENV_DIR}: uv when on the sandbox's PATH, "
            f"else python3 -m venv + pip; install {' '.join(self.install)})"
        )


class EnvReuse(BaseModel):
    """Where a built environment is kept and when a run may reuse it."""

    model_config = ConfigDict(frozen=True)

    store: Path
    """The host folder holding the environment built for this key (absent until built)."""
    folder: str = VENV_DIR
    """The environment's folder in the copy."""
    digest: str
    """`dependency_digest` of the base commit's dependency files."""


FileReader = Callable[[str], str | None]

_SETUP_LINE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?setup[ -]command(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*(.+?)\s*$",
    re.IGNORECASE,
)


def agents_md_setup_command(text: str) -> str | None:
    """The command of the first `Setup command: <command>` line of `AGENTS.md`, if any.

    Same form as its `Test command:` line (any case, backticks, list and bold markers).
    """
    for line in text.splitlines():
        match = _SETUP_LINE.match(line)
        if match:
            command = match.group(1).rstrip("*_ ").strip()
            if len(command) >= 2 and command[0] == command[-1] == "`":
                command = command.strip("`").strip()
            return command or None
    return None


def _extra(pyproject: str) -> str | None:
    try:
        data = tomllib.loads(pyproject)
    except tomllib.TOMLDecodeError:
        return None
    project = data.get("project")
    if not isinstance(project, dict):
        return None
    extras = cast("dict[str, object]", project).get("optional-dependencies")
    if not isinstance(extras, dict):
        return None
    names = cast("dict[str, object]", extras)
    return next((name for name in _EXTRAS if name in names), None)


def default_python_setup(
    files: Mapping[str, str] | FileReader,
    command: TestCommand | None,
    pip_options: Sequence[str] = (),
) -> DefaultSetup | None:
    """The default setup for `command`, or `None` when it does not apply.

    It applies when `command` was detected from a Python file (not set, not from
    `AGENTS.md`) and runs `python`, and the repository has something to install: a
    test extra, requirements files, or a `[project]`/`setup.py` to install with pytest.

    Args:
        files: The base commit's root files (`path -> text`, or a reader).
        command: The detected test command.
        pip_options: Extra arguments for `pip install` (`AGENT_LOOP_PIP_OPTIONS`).
    """
    if command is None or command.source not in _PYTHON_SOURCES or command.argv[0] != "python":
        return None
    read = files if callable(files) else files.get
    pyproject = read("pyproject.toml")
    extra = _extra(pyproject) if pyproject is not None else None
    install: list[str]
    if extra is not None:
        install = ["-e", f".[{extra}]"]
    else:
        requirements = [name for name in _REQUIREMENTS if read(name) is not None]
        if requirements:
            install = [arg for name in requirements for arg in ("-r", name)]
        elif (pyproject is not None and re.search(r"^\[project\]", pyproject, re.M)) or (
            read("setup.py") is not None
        ):
            install = ["-e", ".", "pytest"]
        else:
            install = ["pytest"]
    install += list(pip_options)
    test = command.model_copy(
        update={
            "argv": (f"{VENV_DIR}/bin/python", *command.argv[1:]),
            "notes": (*command.notes, f"runs with the default environment's python ({VENV_DIR})"),
        }
    )
    return DefaultSetup(
        setup=("/bin/sh", "-c", _SCRIPT, "sh", *install), install=tuple(install), command=test
    )


def dependency_digest(read: Callable[[str], bytes | None]) -> str:
    """A hash of the dependency files' contents (a missing file counts as missing)."""
    digest = hashlib.sha256()
    for name in DEPENDENCY_FILES:
        data = read(name)
        digest.update(
            name.encode() + (b"\0-" if data is None else b"\0+" + hashlib.sha256(data).digest())
        )
    return digest.hexdigest()


def folder_dependency_digest(root: Path) -> str:
    """`dependency_digest` of the dependency files at the top of the folder `root` (a
    symbolic link counts as missing: it could name any host file)."""

    def read(name: str) -> bytes | None:
        path = root / name
        return path.read_bytes() if path.is_file() and not path.is_symlink() else None

    return dependency_digest(read)


def env_reuse(store_root: Path, identity: str, tree: Path, setup: Sequence[str]) -> EnvReuse:
    """Where the environment `setup` builds for `tree` is kept, and when it may be reused.

    Args:
        store_root: The folder of kept environments (`AGENT_LOOP_HOME/sandbox-envs`).
        identity: What the tree is: a tick's base commit SHA, or `sandbox run --dir`'s
            folder (so a folder's environment is never a commit's, nor the reverse).
        tree: The tree (its dependency files key the environment too).
        setup: The setup command that builds it.
    """
    digest = folder_dependency_digest(tree)
    key = hashlib.sha256("\0".join((identity, digest, *setup)).encode()).hexdigest()
    return EnvReuse(store=store_root / key[:32], digest=digest)
