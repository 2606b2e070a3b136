"""The bubblewrap sandbox, run for real: what code inside it cannot do.

Each test plants something the sandboxed code must not reach (a secret in this
process's environment, a key file, a file in the home folder, a port on loopback, the
original tree) or makes it misbehave (hang, fork bomb, memory bomb, megabytes of
output, a full disk), then checks the result and the host. They need bubblewrap
(`apt-get install -y bubblewrap`; `.ci/run` installs it) and are skipped, saying so,
where it cannot run.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_loop_common.sandbox import (
    BaselineCache,
    BwrapSandbox,
    ProtectedPaths,
    RunResult,
    SandboxLimits,
    baseline_key,
    compare,
    write_tree,
)
from agent_loop_testing import bwrap_works

LIMITS = SandboxLimits(wall_seconds=30, memory_mb=1024, max_processes=32, max_file_mb=8)


WORKS, WHY = bwrap_works()
pytestmark = pytest.mark.skipif(not WORKS, reason=f"bubblewrap cannot run here: {WHY}")


@pytest.fixture
def canary() -> str:
    return "canary-" + secrets.token_hex(8)


@pytest.fixture
def key_file(tmp_path: Path, canary: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    key = tmp_path / "keys" / "app.pem"
    key.parent.mkdir()
    key.write_text(f"-----BEGIN RSA PRIVATE KEY-----\n{canary}\n-----END RSA PRIVATE KEY-----\n")
    monkeypatch.setenv("GITHUB_APP_PRIVATE_KEY_PATH", str(key))
    return key


@pytest.fixture
def home_file(canary: str) -> Iterator[Path]:
    with tempfile.NamedTemporaryFile(
        "w", dir=Path.home(), prefix=".agent-loop-sandbox-test-", delete=False
    ) as handle:
        handle.write(canary)
    path = Path(handle.name)
    yield path
    path.unlink(missing_ok=True)


@pytest.fixture
def sandbox(tmp_path: Path, key_file: Path) -> BwrapSandbox:
    protected = ProtectedPaths.current(agent_home=tmp_path / "state", key_files=[key_file])
    return BwrapSandbox(LIMITS, protected=protected)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree({"app.py": "VALUE = 1\n", "data/notes.txt": "keep me\n"}, tmp_path / "tree")


def _digest(root: Path) -> str:
    sha = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        sha.update(str(path.relative_to(root)).encode())
        if path.is_file():
            sha.update(path.read_bytes())
    return sha.hexdigest()


def _processes_with(marker: str) -> list[int]:
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry))
    return found


async def _until_gone(marker: str, seconds: float = 5.0) -> list[int]:
    left = _processes_with(marker)
    for _ in range(int(seconds / 0.05)):
        if not left:
            break
        await asyncio.sleep(0.05)
        left = _processes_with(marker)
    return left


# ---------------------------------------------------------------- secrets


async def test_a_secret_in_the_parents_environment_is_not_visible(
    sandbox: BwrapSandbox, tree: Path, canary: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", canary)
    monkeypatch.setenv("ANTHROPIC_API_KEY", canary)
    assert os.environ["GITHUB_TOKEN"] == canary
    script = (
        "import os, glob\n"
        "print(sorted(os.environ))\n"
        "for path in glob.glob('/proc/*/environ'):\n"
        "    try: print(path, open(path, 'rb').read())\n"
        "    except OSError as e: print(path, e)\n"
    )
    result = await sandbox.run(tree, ["python3", "-c", script])
    assert result.ok, result.output.text
    assert "['HOME', 'LANG', 'PATH', 'PWD', 'SANDBOX_JUNIT']" in result.output.text
    assert "/proc/1/environ" in result.output.text  # the sandbox's own init was read too
    assert canary not in result.model_dump_json()


async def test_key_files_and_the_home_folder_are_not_visible(
    sandbox: BwrapSandbox, tree: Path, canary: str, key_file: Path, home_file: Path
) -> None:
    script = (
        "import sys\n"
        "for path in sys.argv[1:]:\n"
        "    try: print(path, open(path).read())\n"
        "    except OSError as e: print(path, type(e).__name__)\n"
    )
    result = await sandbox.run(tree, ["python3", "-c", script, str(key_file), str(home_file)])
    assert result.ok, result.output.text
    assert f"{key_file} FileNotFoundError" in result.output.text
    assert f"{home_file} FileNotFoundError" in result.output.text
    assert canary not in result.output.text


async def test_configured_binds_of_a_home_or_a_key_are_refused(
    tmp_path: Path, tree: Path, canary: str, key_file: Path, home_file: Path
) -> None:
    (tmp_path / "state").mkdir()
    protected = ProtectedPaths.current(agent_home=tmp_path / "state", key_files=[key_file])
    sandbox = BwrapSandbox(
        LIMITS,
        protected=protected,
        readonly_paths=[str(Path.home()), str(key_file.parent), str(tmp_path / "state")],
    )
    result = await sandbox.run(tree, ["cat", str(key_file), str(home_file)])
    assert result.exit_code != 0
    assert canary not in result.output.text
    assert any("home folder" in note for note in result.notes)
    assert any("key file" in note for note in result.notes)
    assert any("state folder" in note for note in result.notes)


async def test_the_state_folder_in_the_tree_is_not_copied(
    tmp_path: Path, key_file: Path, canary: str
) -> None:
    tree = write_tree({"app.py": "x", "state/memory.json": canary}, tmp_path / "repo")
    protected = ProtectedPaths.current(agent_home=tree / "state", key_files=[key_file])
    sandbox = BwrapSandbox(LIMITS, protected=protected)
    result = await sandbox.run(tree, ["ls", "-a"])
    assert result.ok
    assert "app.py" in result.output.text
    assert "state" not in result.output.text.split()


# ---------------------------------------------------------------- network and writes


async def test_a_port_on_the_hosts_loopback_cannot_be_reached(
    sandbox: BwrapSandbox, tree: Path
) -> None:
    connections: list[str] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append("connected")
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    script = (
        "import socket, sys\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3)\n"
        "    print('CONNECTED')\n"
        "except OSError as e:\n"
        "    print('refused', e)\n"
        "try:\n"
        "    socket.getaddrinfo('github.com', 443)\n"
        "    print('RESOLVED')\n"
        "except OSError as e:\n"
        "    print('no dns', e)\n"
    )
    async with server:
        result = await sandbox.run(tree, ["python3", "-c", script, str(port)])
    assert result.ok, result.output.text
    assert "refused" in result.output.text
    assert "no dns" in result.output.text
    assert connections == []


async def test_writes_stay_in_the_private_copy(
    sandbox: BwrapSandbox, tree: Path, tmp_path: Path
) -> None:
    before = _digest(tree)
    outside = tmp_path / "outside.txt"
    script = (
        "import sys\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        open(path, 'w').write('x'); print('WROTE', path)\n"
        "    except OSError as e:\n"
        "        print('refused', path, type(e).__name__)\n"
        "open('app.py', 'w').write('VALUE = 2\\n')\n"
        "import os, shutil; shutil.rmtree('data')\n"
        "print('copy changed')\n"
    )
    refused_targets = [
        str(outside),
        str(tree / "app.py"),
        "/usr/evil",
        "/etc/passwd",
        "/evil",  # the root is a tmpfs (memory): read-only once set up
        "/sandbox/evil",
        "/dev/evil",
    ]
    targets = [*refused_targets, "/tmp/ok", "/sandbox/home/ok", "/dev/shm/ok", "/dev/null"]
    result = await sandbox.run(tree, ["python3", "-c", script, *targets])
    assert result.ok, result.output.text
    text = result.output.text
    assert "WROTE /dev/shm/ok" in text
    assert "WROTE /dev/null" in text
    for refused in refused_targets:
        assert f"refused {refused}" in text, refused
    assert "WROTE /tmp/ok" in text
    assert "WROTE /sandbox/home/ok" in text
    assert "copy changed" in text
    assert not outside.exists()
    assert _digest(tree) == before


# ---------------------------------------------------------------- limits


async def test_a_hanging_command_is_killed_with_its_whole_group(
    sandbox: BwrapSandbox, tree: Path
) -> None:
    marker = "hang-" + secrets.token_hex(6)
    script = (
        "import os, subprocess, time\n"
        "subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
        "os.fork(); os.fork()\n"
        "print('started', flush=True)\n"
        "time.sleep(300)\n"
    )
    result = await sandbox.run(tree, ["python3", "-c", script, marker], time_limit=1.5)
    assert result.timed_out
    assert result.limit == "time"
    assert result.duration_seconds < 10
    assert "started" in result.output.text
    assert await _until_gone(marker) == []


async def test_a_fork_bomb_is_contained(sandbox: BwrapSandbox, tree: Path) -> None:
    marker = "bomb-" + secrets.token_hex(6)
    bomb = (
        "import os, time\n"
        "born = 0\n"
        "while True:\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            print('child', flush=True)\n"
        "    except OSError:\n"
        "        time.sleep(0.02)\n"
    )
    result = await sandbox.run(tree, ["python3", "-c", bomb, marker], time_limit=2)
    assert result.timed_out
    children = result.output.text.count("child")
    assert 0 < children < LIMITS.max_processes  # stopped at the process limit
    assert await _until_gone(marker) == []
    after = await sandbox.run(tree, ["true"])  # the host (and the sandbox) still work
    assert after.ok


async def test_a_memory_bomb_is_contained(sandbox: BwrapSandbox, tree: Path) -> None:
    script = "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 * 1024))\n"
    result = await sandbox.run(tree, ["python3", "-c", script])
    assert result.exit_code == 1
    assert result.limit == "memory"
    assert "MemoryError" in result.output.text
    assert not result.timed_out


async def test_megabytes_of_output_are_bounded(sandbox: BwrapSandbox, tree: Path) -> None:
    script = (
        "import sys\n"
        "line = 'x' * 99 + '\\n'\n"
        "for i in range(100_000):\n"
        "    sys.stdout.write(line)\n"
        "    if i == 50_000: sys.stdout.write('FAILED tests/test_mid.py::test_lost - boom\\n')\n"
        "print('1 failed, 41 passed in 0.50s')\n"
    )
    result = await sandbox.run(tree, ["python3", "-c", script])
    assert result.ok
    output = result.output
    assert output.total_bytes > 10_000_000
    assert len(output.head.encode()) == 8 * 1024
    assert len(output.tail.encode()) == 24 * 1024
    assert output.omitted_bytes == output.total_bytes - 32 * 1024
    assert result.tests is not None
    assert result.tests.failing == ("tests/test_mid.py::test_lost",)
    assert (result.tests.failed, result.tests.passed) == (1, 41)


async def test_a_full_disk_is_contained(sandbox: BwrapSandbox, tree: Path) -> None:
    python = await sandbox.run(
        tree, ["python3", "-c", "open('big', 'wb').write(b'x' * (64 * 1024 * 1024))"]
    )
    assert python.exit_code == 1
    assert python.limit == "file_size"
    assert "File too large" in python.output.text
    coreutils = await sandbox.run(tree, ["dd", "if=/dev/zero", "of=big", "bs=1M", "count=64"])
    assert coreutils.signal == 25  # SIGXFSZ
    assert coreutils.limit == "file_size"


async def test_a_missing_command_is_a_result(sandbox: BwrapSandbox, tree: Path) -> None:
    for argv, expected in [
        (["no-such-program", "-x"], "'no-such-program' is not on the sandbox's PATH"),
        (["./missing.sh"], "./missing.sh does not exist in the repository"),
        (["/opt/nowhere/bin/tool"], "/opt/nowhere/bin/tool does not exist"),
    ]:
        result = await sandbox.run(tree, argv)
        assert result.exit_code == 127
        assert expected in result.error
        assert not result.ok


async def test_a_program_that_is_not_bound_is_reported(tmp_path: Path, tree: Path) -> None:
    tool = tmp_path / "state" / "bin" / "tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho hi\n")
    tool.chmod(0o755)
    sandbox = BwrapSandbox(LIMITS, protected=ProtectedPaths(agent_home=tmp_path / "state"))
    result = await sandbox.run(tree, [str(tool)])
    assert result.exit_code == 127
    assert "not visible in the sandbox" in result.error
    assert any("state folder" in note for note in result.notes)


# ---------------------------------------------------------------- real test runs


SAMPLE = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": (
        "import pytest\n"
        "from calc import add\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n"
        "@pytest.mark.skip(reason='later')\n"
        "def test_later():\n    pass\n\n"
        "@pytest.mark.parametrize('n', [1, 2])\n"
        "def test_same(n):\n    assert add(n, 0) == n\n"
    ),
    "pyproject.toml": "[tool.pytest.ini_options]\npythonpath = ['.']\n",
}
PYTEST = [
    sys.executable,  # the workspace's venv python, bound with its installation
    "-m",
    "pytest",
    "-q",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:agent_loop_hermetic",  # this workspace's own plugin is not installed in there
]


async def test_pytest_runs_inside_with_counts_and_failing_names(
    sandbox: BwrapSandbox, tmp_path: Path
) -> None:
    tree = write_tree(SAMPLE, tmp_path / "sample")
    printed = await sandbox.run(tree, PYTEST)
    assert printed.exit_code == 1, printed.output.text
    assert printed.tests is not None
    assert printed.tests.source == "pytest"
    assert (printed.tests.passed, printed.tests.failed, printed.tests.skipped) == (3, 1, 1)
    assert printed.tests.failing == ("tests/test_calc.py::test_add",)

    junit = await sandbox.run(tree, [*PYTEST, "--junitxml=$SANDBOX_JUNIT"])
    assert junit.tests is not None
    assert junit.tests.source == "junit"
    assert junit.tests.failing == ("tests.test_calc::test_add",)
    assert junit.tests.outcomes is not None
    assert junit.tests.outcomes["tests.test_calc::test_same[2]"] == "passed"
    assert "--junitxml=/sandbox/out/junit.xml" in junit.argv


async def test_a_fix_against_its_baseline(sandbox: BwrapSandbox, tmp_path: Path) -> None:
    """The integrator's flow: baseline once per base, then each change on a fresh copy."""
    tree = write_tree(SAMPLE, tmp_path / "sample")
    argv = [*PYTEST, "--junitxml=$SANDBOX_JUNIT"]
    cache = BaselineCache()
    key = baseline_key("base-sha", argv)

    async def run_base() -> RunResult:
        return await sandbox.run(tree, argv)

    base = await cache.get_or_run(key, run_base)
    fix = {
        "calc.py": "def add(a, b):\n    return a + b\n",
        "tests/test_more.py": "from calc import add\n\ndef test_neg():\n    assert add(-1, 1) == 0\n",
    }
    after = await sandbox.run(tree, argv, changes=fix)
    verdict = compare(await cache.get_or_run(key, run_base), after)  # the second attempt
    assert cache.runs == 1
    assert verdict.passed, verdict.feedback()
    assert verdict.fail_to_pass == ("tests.test_calc::test_add", "tests.test_more::test_neg")
    assert verdict.summary == "5 passed, 1 skipped (base: 1 failed, 3 passed, 1 skipped)"

    breaking = {"calc.py": "def add(a, b):\n    return 0\n"}
    broken = compare(base, await sandbox.run(tree, argv, changes=breaking))
    assert broken.status == "failed"
    assert broken.regressions == (
        "tests.test_calc::test_same[1]",
        "tests.test_calc::test_same[2]",
    )
    assert (tree / "calc.py").read_text() == SAMPLE["calc.py"]  # never modified


async def test_setup_runs_first_on_the_same_copy(sandbox: BwrapSandbox, tree: Path) -> None:
    setup = ["python3", "-c", "open('generated.py', 'w').write('READY = True\\n')"]
    result = await sandbox.run(
        tree, ["python3", "-c", "import generated; print(generated.READY)"], setup=setup
    )
    assert result.ok, result.output.text
    assert "True" in result.output.text
    assert result.setup is not None
    assert result.setup.network
    assert not result.network

    failed = await sandbox.run(tree, ["true"], setup=["python3", "-c", "raise SystemExit(3)"])
    assert not failed.ran
    assert failed.setup is not None
    assert failed.setup.exit_code == 3
    assert "setup command failed" in failed.error


async def test_sandboxes_run_side_by_side(sandbox: BwrapSandbox, tree: Path) -> None:
    results = await asyncio.gather(
        *(sandbox.run(tree, ["python3", "-c", f"print({i})"]) for i in range(3))
    )
    assert [r.output.text.strip() for r in results] == ["0", "1", "2"]


async def test_a_venv_made_by_setup_finds_its_interpreter(
    sandbox: BwrapSandbox, tmp_path: Path
) -> None:
    """What a setup step leaves: `.venv/bin/python` linking to an interpreter it could see.

    Nothing in the tree adds a bind (`test_sandbox_binds.py`), so a virtualenv made inside
    the sandbox works because the interpreter it links to was already visible.
    """
    tree = write_tree({"check.py": "import sys; print(sys.prefix)\n"}, tmp_path / "repo")
    result = await sandbox.run(
        tree,
        ["python", "check.py"],
        setup=["/usr/bin/python3", "-m", "venv", "--without-pip", ".venv"],
    )
    assert result.ok, result.output.text + result.error
    assert result.output.text.strip() == "/sandbox/repo/.venv"
