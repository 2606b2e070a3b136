"""Evidence without configuration (issue 22, point 9), end to end through `agent-loop run`.

A plain Python repository (a `pyproject.toml` with a `test` extra, no environment in the
tree) served by the emulator, with no test or setup command set anywhere: the builder's
tests run in the real bubblewrap sandbox on the default setup (a private environment
built in the copy with `python3 -m venv` + pip), its pull request is ready with counts
and says which setup ran, and a later try and tick reuse the built environment.

Hermetic: pip never reaches an index. The test's wheelhouse is built from this
workspace's installed distributions (pytest and its dependencies, zipped as wheels), shown
read-only to the sandbox (`AGENT_LOOP_SANDBOX_READONLY_PATHS`) and named with
`AGENT_LOOP_PIP_OPTIONS=--no-index --find-links <wheelhouse>`; the sample builds with an
in-tree PEP 517 backend, so no build tool is downloaded either.
"""

from __future__ import annotations

import base64
import hashlib
import pathlib
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata

import pytest
from packaging.requirements import Requirement

from agent_loop import cli
from agent_loop_common.records import Role
from agent_loop_common.sandbox import BwrapSandbox, _select
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    CALC,
    CALC_REPO,
    CALC_SUB,
    VERIFIED,
    CliLoop,
    GitHubEmulator,
    ScriptedModel,
    bwrap_e2e_marks,
    serve_for_cli,
    subtract_try,
    turn,
)

pytestmark = [
    *bwrap_e2e_marks(),
    pytest.mark.skipif(
        not pathlib.Path("/usr/bin/python3").exists(), reason="no /usr/bin/python3 here"
    ),
]

# No `[tool.pytest]` `pythonpath`: `src/calc.py` imports only once the project is installed.
PYPROJECT = """[build-system]
requires = []
build-backend = "sample_backend"
backend-path = ["_build"]

[project]
name = "calc"
version = "0.1.0"

[project.optional-dependencies]
test = ["pytest"]
"""
# A minimal in-tree PEP 517/660 backend: an editable wheel is a `.pth` naming `src`.
BACKEND = """import base64, hashlib, os, zipfile

DIST = "calc-0.1.0.dist-info"
METADATA = (
    "Metadata-Version: 2.1\\nName: calc\\nVersion: 0.1.0\\n"
    "Provides-Extra: test\\nRequires-Dist: pytest; extra == \\"test\\"\\n"
)
WHEEL = "Wheel-Version: 1.0\\nGenerator: sample\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"


def _wheel(directory, files):
    name = "calc-0.1.0-py3-none-any.whl"
    files = {**files, DIST + "/METADATA": METADATA, DIST + "/WHEEL": WHEEL}
    record = []
    with zipfile.ZipFile(os.path.join(directory, name), "w") as wheel:
        for path, text in files.items():
            data = text.encode()
            wheel.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{path},sha256={digest.decode()},{len(data)}")
        record.append(DIST + "/RECORD,,")
        wheel.writestr(DIST + "/RECORD", "\\n".join(record) + "\\n")
    return name


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {"calc.pth": os.path.abspath("src") + "\\n"})


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with open(os.path.join("src", "calc.py")) as source:
        return _wheel(wheel_directory, {"calc.py": source.read()})
"""
CALC_WRONG = CALC + "\n\ndef subtract(a, b):\n    return b - a\n"
SETUP_LINE = (
    "- Setup: default Python environment (.sandbox-venv: uv when on the sandbox's PATH, "
    "else python3 -m venv + pip; install -e .[test] --no-index --find-links "
)
_SKIP = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD", "uv_cache.json"}


def _wheel_from_installed(name: str, directory: pathlib.Path) -> None:
    """A wheel of the installed pure-Python distribution `name` (its files, a fresh RECORD)."""
    dist = metadata.distribution(name)
    files = [f for f in dist.files or () if not f.as_posix().startswith("..")]
    info = next(f.as_posix().split("/")[0] for f in files if ".dist-info/" in f.as_posix())
    stem = info.removesuffix(".dist-info")
    record: list[str] = []
    with zipfile.ZipFile(directory / f"{stem}-py3-none-any.whl", "w") as wheel:
        for file in files:
            path = file.as_posix()
            if "__pycache__" in path or (path.startswith(info) and file.name in _SKIP):
                continue
            data = pathlib.Path(str(dist.locate_file(file))).read_bytes()
            wheel.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{path},sha256={digest.decode()},{len(data)}")
        record.append(f"{info}/RECORD,,")
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")


@pytest.fixture(scope="module")
def wheelhouse() -> Iterator[pathlib.Path]:
    # Readable by the sandbox's user (pytest's own temp folders are private to this one).
    directory = pathlib.Path(tempfile.mkdtemp(prefix="agent-loop-wheelhouse-"))
    directory.chmod(0o755)
    # pytest and what it needs on this platform (the sandbox's python3 is this machine's).
    requirements = [Requirement(r) for r in metadata.distribution("pytest").requires or ()]
    needed = {"pytest"} | {
        r.name for r in requirements if r.marker is None or r.marker.evaluate({"extra": ""})
    }
    for name in sorted(needed):
        _wheel_from_installed(name, directory)
    for wheel in directory.iterdir():
        wheel.chmod(0o644)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@dataclass
class Loop(CliLoop):
    """The CLI loop, with what the sandbox executed (each command's argv)."""

    executed: list[tuple[str, ...]] = field(default_factory=list[tuple[str, ...]])

    def setups(self) -> int:
        return sum(1 for argv in self.executed if argv[:2] == ("/bin/sh", "-c"))

    def test_runs(self) -> int:
        return sum(1 for argv in self.executed if argv[0] == ".sandbox-venv/bin/python")


@pytest.fixture
def loop(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: pathlib.Path,
    wheelhouse: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[Loop]:
    _select.clear_probe_cache()
    emulator = GitHubEmulator()
    emulator.seed_files(
        {**CALC_REPO, "pyproject.toml": PYPROJECT, "_build/sample_backend.py": BACKEND}
    )
    executed: list[tuple[str, ...]] = []
    real_execute = BwrapSandbox._execute  # pyright: ignore[reportPrivateUsage]

    async def spy(self: BwrapSandbox, workspace: object, argv: tuple[str, ...], **kw: object):  # type: ignore[no-untyped-def]
        executed.append(argv)
        return await real_execute(self, workspace, argv, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(BwrapSandbox, "_execute", spy)
    with serve_for_cli(
        monkeypatch,
        emulator,
        tmp_path / "home",
        AGENT_LOOP_SANDBOX="bwrap",
        AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS="300",
        AGENT_LOOP_SANDBOX_READONLY_PATHS=str(wheelhouse),
        AGENT_LOOP_PIP_OPTIONS=f"--no-index --find-links {wheelhouse}",
    ):
        yield Loop(emulator, cli.main, capsys, executed=executed)
    _select.clear_probe_cache()


def test_a_python_repository_with_nothing_configured_gets_a_ready_pr_with_counts(
    loop: Loop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LOOP_MAX_TRIES", "2")
    loop.emulator.add_issue("Add subtract()", "We need `subtract(a, b)` in calc, with a test.")
    model = ScriptedModel(
        [*subtract_try(CALC_WRONG), *subtract_try(CALC_SUB)],
        routes={
            VERIFIER_MARKER: [
                turn(VERIFIED, expect_in_messages=["2 passed (base: 1 passed)", "test_subtract"])
            ]
        },
        name="builder",
    )
    built = loop.run(Role.BUILDER, model)

    assert built.outcome == "opened_pr"
    pull = loop.emulator.pull(built.made[0])
    body = pull.body or ""
    assert not pull.draft, body
    assert (
        ".sandbox-venv/bin/python -m pytest -q --junitxml=$SANDBOX_JUNIT` (from pyproject.toml)"
        in body
    )
    assert SETUP_LINE in body
    assert "- Result: 2 passed (base: 1 passed)" in body
    assert "- Fail-to-pass: `tests.test_calc::test_subtract`" in body
    record = loop.record(built.run_id)
    first, accepted = record.attempts
    assert first.tests.startswith("failed: ")
    assert accepted.verified
    assert record.tests is not None
    assert record.tests.setup.startswith("default Python environment")
    # One setup for the baseline; both tries' runs reused the environment it built.
    assert loop.setups() == 1
    assert loop.test_runs() == 3

    # A later tick at the same base commit (a new process's runtime) reuses it too.
    loop.emulator.add_issue("Add subtract() again", "Same, for the second module.")
    second = ScriptedModel(
        subtract_try(CALC_SUB),
        routes={VERIFIER_MARKER: [turn(VERIFIED, expect_in_messages="2 passed (base: 1 passed)")]},
        name="builder",
    )
    again = loop.run(Role.BUILDER, second)
    assert again.outcome == "opened_pr"
    assert not loop.emulator.pull(again.made[0]).draft
    assert loop.setups() == 1
    assert loop.test_runs() == 5
