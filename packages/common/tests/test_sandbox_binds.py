"""Attack: the repository's content choosing which host folders a sandbox sees (issue 22).

A `pyvenv.cfg` in the copy names a `home =` folder; before, the sandbox bound that
folder read-only (and, as root, staged it from behind a `0700` folder), so a file there
was readable inside and its text could reach a pull request as a "failing test name".
The three ways such a file gets into the copy (committed, written by the setup step,
staged by the model) are each run for real in bubblewrap: the host file must stay
unreadable. Needs bubblewrap; skipped, saying why, where it cannot run.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path

import pytest

from agent_loop_common.sandbox import (
    BwrapSandbox,
    ProtectedPaths,
    RunResult,
    SandboxLimits,
    write_tree,
)
from agent_loop_testing import bwrap_works

LIMITS = SandboxLimits(wall_seconds=30, memory_mb=1024, max_processes=32, max_file_mb=8)


WORKS, WHY = bwrap_works()
pytestmark = pytest.mark.skipif(not WORKS, reason=f"bubblewrap cannot run here: {WHY}")

READ = (
    "import sys\n"
    "try:\n"
    "    print('LEAKED', open(sys.argv[1]).read())\n"
    "except OSError as e:\n"
    "    print('unreadable', type(e).__name__)\n"
)


@pytest.fixture
def canary() -> str:
    return "canary-" + secrets.token_hex(8)


@pytest.fixture
def host_secret(tmp_path: Path, canary: str) -> Path:
    """A host file shaped like an installation (`<dir>/bin`) behind a `0700` folder.

    Like `/root/.pyenv`: as root, the old stager bound it from behind the `0700` folder.
    """
    folder = tmp_path / "locked" / "private"
    (folder / "bin").mkdir(parents=True)
    secret = folder / "token.txt"
    secret.write_text(canary)
    (tmp_path / "locked").chmod(0o700)
    return secret


@pytest.fixture
def sandbox(tmp_path: Path) -> BwrapSandbox:
    return BwrapSandbox(LIMITS, protected=ProtectedPaths.current(agent_home=tmp_path / "state"))


def _venv_files(home: Path) -> dict[str, str]:
    return {".venv/pyvenv.cfg": f"home = {home}\ninclude-system-site-packages = false\n"}


def _committed_venv(tree: Path) -> None:
    """An ordinary-looking `.venv` whose `python` is the system one."""
    (tree / ".venv" / "bin").mkdir(parents=True, exist_ok=True)
    (tree / ".venv" / "bin" / "python").symlink_to("/usr/bin/python3")


def _assert_unreadable(result: RunResult, secret: Path, canary: str) -> None:
    assert result.exit_code == 0, result.output.text + result.error
    assert "unreadable" in result.output.text
    assert canary not in result.model_dump_json()
    assert not any(str(secret.parent) == n for n in result.notes)


async def test_a_committed_pyvenv_cfg_does_not_bind_its_home(
    sandbox: BwrapSandbox, tmp_path: Path, host_secret: Path, canary: str
) -> None:
    tree = write_tree(_venv_files(host_secret.parent / "bin"), tmp_path / "repo")
    _committed_venv(tree)
    result = await sandbox.run(tree, ["python", "-c", READ, str(host_secret)])
    _assert_unreadable(result, host_secret, canary)


async def test_a_pyvenv_cfg_written_by_setup_does_not_bind_its_home(
    sandbox: BwrapSandbox, tmp_path: Path, host_secret: Path, canary: str
) -> None:
    tree = write_tree({"README.md": "hello\n"}, tmp_path / "repo")
    writer = (
        "import os, sys\n"
        "os.makedirs('.venv/bin', exist_ok=True)\n"
        "open('.venv/pyvenv.cfg', 'w').write('home = ' + sys.argv[1] + '\\n')\n"
        "os.symlink('/usr/bin/python3', '.venv/bin/python')\n"
    )
    result = await sandbox.run(
        tree,
        ["python", "-c", READ, str(host_secret)],
        setup=["python3", "-c", writer, str(host_secret.parent / "bin")],
    )
    assert result.setup is not None
    assert result.setup.ok, result.setup
    _assert_unreadable(result, host_secret, canary)


async def test_a_staged_pyvenv_cfg_does_not_bind_its_home(
    sandbox: BwrapSandbox, tmp_path: Path, host_secret: Path, canary: str
) -> None:
    tree = write_tree({"README.md": "hello\n"}, tmp_path / "repo")
    _committed_venv(tree)
    result = await sandbox.run(
        tree,
        ["python", "-c", READ, str(host_secret)],
        changes=_venv_files(host_secret.parent / "bin"),
    )
    _assert_unreadable(result, host_secret, canary)


async def test_a_link_out_of_the_tree_binds_nothing(
    sandbox: BwrapSandbox, tmp_path: Path, host_secret: Path, canary: str
) -> None:
    """A committed `.venv/bin/python` linking to a host installation: not followed."""
    tool = host_secret.parent / "bin" / "python"
    tool.write_text("#!/bin/sh\necho RAN\n")
    tool.chmod(0o755)
    tree = write_tree({"README.md": "x"}, tmp_path / "repo")
    (tree / ".venv" / "bin").mkdir(parents=True)
    (tree / ".venv" / "bin" / "python").symlink_to(tool)
    result = await sandbox.run(tree, ["cat", str(host_secret)])
    assert canary not in result.model_dump_json()
    ran = await sandbox.run(tree, ["python"])
    assert "RAN" not in ran.output.text
    assert ran.exit_code != 0


async def test_a_program_named_inside_the_tree_binds_nothing(
    sandbox: BwrapSandbox, tmp_path: Path, host_secret: Path, canary: str
) -> None:
    """`sandbox run --dir repo -- repo/.venv/bin/python`: the tree's venv says nothing."""
    tree = write_tree(_venv_files(host_secret.parent / "bin"), tmp_path / "repo")
    _committed_venv(tree)
    program = str(tree / ".venv" / "bin" / "python")
    result = await sandbox.run(tree, [program, "-c", READ, str(host_secret)])
    assert canary not in result.model_dump_json()
    assert any("inside the repository" in note for note in result.notes)


async def test_a_system_program_has_no_bind_note(sandbox: BwrapSandbox, tmp_path: Path) -> None:
    """Issue 24: `/bin/true` used to note "not bound: / is a system folder"."""
    tree = write_tree({"README.md": "x"}, tmp_path / "repo")
    result = await sandbox.run(tree, ["/bin/true"])
    assert result.ok, result.error
    assert [n for n in result.notes if not n.startswith("limits per process:")] == []


async def test_an_operator_listed_folder_is_still_bound(
    tmp_path: Path, host_secret: Path, canary: str
) -> None:
    """What the operator lists stays visible, as root too (staged from behind 0700)."""
    sandbox = BwrapSandbox(
        LIMITS,
        protected=ProtectedPaths.current(agent_home=tmp_path / "state"),
        readonly_paths=[str(host_secret.parent)],
    )
    tree = write_tree({"README.md": "x"}, tmp_path / "repo")
    result = await sandbox.run(tree, ["python3", "-c", READ, str(host_secret)])
    assert result.ok, result.output.text + result.error
    assert f"LEAKED {canary}" in result.output.text
    assert os.stat(host_secret.parent.parent).st_mode & 0o777 == 0o700


# ---------------------------------------------------------------- the setup step's network

PROBE = """
import socket, sys
port, abstract = int(sys.argv[1]), sys.argv[2]
targets = [("127.0.0.1", port), ("169.254.169.254", 80), ("10.0.0.1", 80)]
targets += [(address, port) for address in sys.argv[3:]]
for host, p in targets:
    try:
        socket.create_connection((host, p), timeout=2).close()
        print("REACHED", host, p)
    except OSError as e:
        print("blocked", host, p, type(e).__name__)
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\\0" + abstract)
    print("REACHED abstract")
except OSError as e:
    print("blocked abstract", type(e).__name__)
routes = open("/proc/net/route").read().split("\\n")[1:]
print("default route:", any(r.split("\\t")[1:2] == ["00000000"] for r in routes if r))
print(open("/etc/resolv.conf").read().strip())
"""


async def test_setup_cannot_reach_the_hosts_loopback_or_private_addresses(
    sandbox: BwrapSandbox, tmp_path: Path
) -> None:
    """Setup has a network of its own: a way out, but not to the host's services."""
    import socket

    from agent_loop_common.sandbox._setup_net import host_addresses

    connections: list[str] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append("connected")
        writer.close()

    # One listener on every address (loopback included), one abstract unix socket.
    server = await asyncio.start_server(accept, "0.0.0.0", 0)  # noqa: S104 (the target)
    port = server.sockets[0].getsockname()[1]
    abstract = "agent-loop-test-" + secrets.token_hex(4)
    unix = socket.socket(socket.AF_UNIX)
    unix.bind("\0" + abstract)
    unix.listen(1)
    tree = write_tree({"README.md": "x"}, tmp_path / "repo")
    own = host_addresses()
    try:
        async with server:
            result = await sandbox.run(
                tree, ["true"], setup=["python3", "-c", PROBE, str(port), abstract, *own]
            )
    finally:
        unix.close()
    assert result.setup is not None
    text = result.setup.output.text
    assert result.setup.ok, text + result.setup.error
    assert "REACHED" not in text
    assert f"blocked 127.0.0.1 {port}" in text
    assert "blocked 169.254.169.254 80" in text
    assert "blocked abstract" in text
    for address in own:
        assert f"blocked {address} {port}" in text
    assert "default route: True" in text  # a way out exists (not used: tests stay offline)
    assert "nameserver 198.18.0.3" in text
    assert connections == []


# ---------------------------------------------------------------- limits per sandbox

SPREAD = """
import subprocess, sys
hog = "b = bytearray(150 * 1024 * 1024)\\nfor i in range(0, len(b), 4096): b[i] = 1\\nimport time; time.sleep(1.5)"
kids = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(4)]
codes = [k.wait() for k in kids]
print("codes", codes)
if all(c == 0 for c in codes):
    print("ALL ALLOCATED")
sys.exit(0 if all(c == 0 for c in codes) else 1)
"""


async def test_memory_spread_over_processes_is_bounded_for_the_whole_sandbox(
    tmp_path: Path,
) -> None:
    """Each process stays under RLIMIT_AS; together they exceed the sandbox's memory.

    With a control group per sandbox (where the host allows one), the kernel stops them
    at the sandbox's total and the result says `memory`. Where it does not, the test
    shows the bound is per process, as `sandbox check` and the docs say.
    """
    from agent_loop_common.sandbox._cgroup import cgroup_support

    limits = SandboxLimits(wall_seconds=60, memory_mb=256, max_processes=32, max_file_mb=8)
    sandbox = BwrapSandbox(limits, protected=ProtectedPaths.current(agent_home=tmp_path / "s"))
    tree = write_tree({"README.md": "x"}, tmp_path / "repo")
    result = await sandbox.run(tree, ["python3", "-c", SPREAD])
    if cgroup_support().version is None:
        assert "ALL ALLOCATED" in result.output.text  # 600 MB under a 256 MB setting
        return
    assert "ALL ALLOCATED" not in result.output.text, result.output.text
    assert result.exit_code != 0
    assert result.limit == "memory"


async def test_a_fork_bomb_is_stopped_by_the_sandboxs_process_limit(tmp_path: Path) -> None:
    from agent_loop_common.sandbox._cgroup import cgroup_support

    limits = SandboxLimits(wall_seconds=30, memory_mb=512, max_processes=16, max_file_mb=8)
    sandbox = BwrapSandbox(limits, protected=ProtectedPaths.current(agent_home=tmp_path / "s"))
    tree = write_tree({"README.md": "x"}, tmp_path / "repo")
    bomb = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    for _ in range(100):\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(3); os._exit(0)\n"
        "        n += 1\n"
        "except OSError as e:\n"
        "    print('refused after', n, type(e).__name__)\n"
    )
    result = await sandbox.run(tree, ["python3", "-c", bomb])
    assert "refused after" in result.output.text, result.output.text
    made = int(result.output.text.split("refused after")[1].split()[0])
    assert made < 16
    assert cgroup_support().version is None or made <= 16


async def test_a_program_the_repository_names_by_absolute_path_binds_nothing(
    sandbox: BwrapSandbox, tmp_path: Path, host_secret: Path, canary: str
) -> None:
    """`Test command: /host/tool/bin/x` in AGENTS.md: the repository chose it, so its
    installation (here behind a `0700` folder, which root would have staged) stays
    hidden; the same program from the operator's setting is shown."""
    tool = host_secret.parent / "bin" / "leak"
    tool.write_text(f"#!/bin/sh\ncat {host_secret}\n")
    tool.chmod(0o755)
    tree = write_tree({"README.md": "x"}, tmp_path / "repo")
    chosen = await sandbox.run(tree, [str(tool)], operator_command=False)
    assert chosen.exit_code == 127
    assert "not visible in the sandbox" in chosen.error
    assert any("named by the repository's files" in note for note in chosen.notes)
    assert canary not in chosen.model_dump_json()
    configured = await sandbox.run(tree, [str(tool)])
    assert configured.ok, configured.error + configured.output.text
    assert canary in configured.output.text


async def test_without_slirp4netns_setup_fails_closed_and_says_what_to_install(
    sandbox: BwrapSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never the host's network as a fallback: the setup step does not run."""
    from agent_loop_common.sandbox._setup_net import SetupNetwork

    monkeypatch.setattr(
        BwrapSandbox,
        "setup_network",
        lambda self: SetupNetwork("/usr/bin/unshare", "/nonexistent/slirp4netns", "ip", True),
    )
    tree = write_tree({"README.md": "x"}, tmp_path / "repo")
    result = await sandbox.run(tree, ["true"], setup=["true"])
    assert result.setup is not None
    assert not result.setup.ok
    assert "apt-get install -y slirp4netns" in result.setup.error
    assert result.exit_code is None  # the tests did not run either


def test_groups_a_dead_process_left_are_swept() -> None:
    import subprocess

    from agent_loop_common.sandbox._cgroup import cgroup_support, sweep_stale_cgroups

    support = cgroup_support()
    if support.version is None:
        pytest.skip(f"no control groups here: {support.reason}")
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = [parent / f"agent-loop-sandbox-{gone.pid}-abcd1234" for parent in support.parents]
    mine = [parent / f"agent-loop-sandbox-{os.getpid()}-abcd1234" for parent in support.parents]
    for folder in (*stale, *mine):
        folder.mkdir()
    try:
        assert sweep_stale_cgroups(support.parents) == len(stale)
        assert not any(folder.exists() for folder in stale)
        assert all(folder.exists() for folder in mine)
    finally:
        for folder in (*stale, *mine):
            if folder.exists():
                folder.rmdir()
