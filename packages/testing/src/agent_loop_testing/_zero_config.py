"""A zero-configuration Python project and a wheelhouse, for the default setup's tests.

The calc sample as a plain Python repository: a `pyproject.toml` with a `test` extra and
no `[tool.pytest]` `pythonpath` (`src/calc.py` imports only once the project is
installed), no environment, nothing configured. The sandbox's default setup builds its
environment (`.sandbox-venv`) and the detected pytest command runs in it, for a tick and
for `agent-loop sandbox run --dir` alike.

Hermetic: pip never reaches an index. `wheelhouse()` zips this environment's installed
pytest and its dependencies as wheels, to be named with `AGENT_LOOP_PIP_OPTIONS=--no-index
--find-links <wheelhouse>` (and shown with `AGENT_LOOP_SANDBOX_READONLY_PATHS`); the
sample builds with an in-tree PEP 517 backend, so no build tool is downloaded either.
"""

from __future__ import annotations

import base64
import hashlib
import pathlib
import shutil
import tempfile
import zipfile
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from importlib import metadata

from agent_loop_testing._e2e import CALC_REPO

__all__ = ["SAMPLE_BACKEND", "ZERO_CONFIG_CALC", "ZERO_CONFIG_PYPROJECT", "wheelhouse"]

ZERO_CONFIG_PYPROJECT = """[build-system]
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
SAMPLE_BACKEND = """import base64, hashlib, os, zipfile

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

ZERO_CONFIG_CALC: Mapping[str, str] = {
    **CALC_REPO,
    "pyproject.toml": ZERO_CONFIG_PYPROJECT,
    "_build/sample_backend.py": SAMPLE_BACKEND,
}
"""The calc sample with nothing configured (its tests: `test_add`), to `seed_files` or
`write_tree`."""

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


@contextmanager
def wheelhouse() -> Generator[pathlib.Path]:
    """A folder of wheels of pytest and what it needs here, readable by the sandbox's user.

    Only where pytest is installed (it is the sandbox's python3's, this machine's).
    """
    from packaging.requirements import Requirement  # pytest's own dependency

    directory = pathlib.Path(tempfile.mkdtemp(prefix="agent-loop-wheelhouse-"))
    directory.chmod(0o755)  # pytest's temp folders are private to this user
    try:
        requirements = [Requirement(r) for r in metadata.distribution("pytest").requires or ()]
        needed = {"pytest"} | {
            r.name for r in requirements if r.marker is None or r.marker.evaluate({"extra": ""})
        }
        for name in sorted(needed):
            _wheel_from_installed(name, directory)
        for wheel in directory.iterdir():
            wheel.chmod(0o644)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
