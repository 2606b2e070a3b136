"""A host without a usable cgroup, two ways, for the sandbox's `REQUIRE_CGROUP` tests.

Docker and Kubernetes mount `/sys/fs/cgroup` read-only in a container by default, so no
control group can be made there and the sandbox-wide memory bound is lost (issue 30).

- `read_only_cgroupfs(argv)`: the real thing. `argv` runs in a mount namespace of its own
  (root, `unshare`) where every cgroup mount is remounted read-only, exactly what a
  container sees; the host's mounts are untouched.
- `proc_without_cgroup(folder)`: a simulated `/proc/self` whose cgroup v2 mount is a
  plain folder (a group made there gets no control files), for `cgroup_support(proc=...)`
  in the test's own process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["cgroup_mounts", "proc_without_cgroup", "read_only_cgroupfs", "read_only_cgroupfs_works"]

# Run by /bin/sh in the new mount namespace: remount each cgroup mount read-only, then exec.
_REMOUNT = (
    'while [ "$1" != "--" ]; do\n'
    '  mount -o remount,bind,ro "$1" || exit 125\n'
    "  shift\n"
    "done\n"
    "shift\n"
    'exec "$@"\n'
)


def cgroup_mounts(mountinfo: Path = Path("/proc/self/mountinfo")) -> list[str]:
    """The mount points of every cgroup (v1 and v2) file system of this process."""
    found: list[str] = []
    for line in mountinfo.read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, extra = left.split(), right.split()
        if len(fields) >= 5 and extra and extra[0] in ("cgroup", "cgroup2"):
            found.append(fields[4])
    return found


def read_only_cgroupfs(argv: Sequence[str]) -> list[str]:
    """`argv` run where every cgroup mount is read-only (a mount namespace of its own)."""
    unshare = shutil.which("unshare") or "/usr/bin/unshare"
    return [
        unshare,
        "--mount",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        _REMOUNT,
        "sh",
        *cgroup_mounts(),
        "--",
        *argv,
    ]


def read_only_cgroupfs_works() -> tuple[bool, str]:
    """Whether `read_only_cgroupfs` can run here, and why not."""
    if os.geteuid() != 0:
        return False, "remounting the cgroup file systems needs root"
    if not cgroup_mounts():
        return False, "no cgroup file system is mounted here"
    if shutil.which("unshare") is None:
        return False, "unshare (util-linux) is missing"
    done = subprocess.run(
        read_only_cgroupfs(["cat", "/proc/self/mountinfo"]),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    options = [
        line.split()[5].split(",")
        for line in done.stdout.splitlines()
        if line.partition(" - ")[2].split()[:1] in (["cgroup"], ["cgroup2"])
    ]
    if done.returncode != 0 or not options or not all("ro" in o for o in options):
        return False, f"the cgroup mounts did not become read-only: {done.stderr.strip()[-200:]}"
    return True, "read-only cgroup mounts in a mount namespace of their own"


def proc_without_cgroup(folder: Path) -> Path:
    """A `/proc/self` (its `cgroup` and `mountinfo`) whose cgroup v2 mount is `folder`/fs.

    This process's own group is listed there, but a group created under it gets no
    `memory.max`: like a container's cgroup file system, nothing is delegated or writable.
    """
    proc, mount = folder / "proc-self", folder / "cgroupfs"
    (mount / "agent").mkdir(parents=True)
    proc.mkdir()
    (proc / "cgroup").write_text("0::/agent\n")
    (proc / "mountinfo").write_text(
        f"31 23 0:28 / {mount} ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 ro\n"
    )
    return proc
