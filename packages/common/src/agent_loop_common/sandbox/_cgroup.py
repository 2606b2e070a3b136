"""A control group per sandbox: memory and process count bound the sandbox as a whole.

`RLIMIT_AS` bounds one process, so a sandbox of `max_processes` processes could hold
`memory_mb x max_processes` (measured: 1.6 GB resident under a 256 MB setting). Where
the host lets this process create control groups, each sandboxed command gets one of its
own with the memory limit and the process limit of the whole sandbox:

- cgroup v2 (`memory.max`, `memory.swap.max = 0`, `pids.max`) when this process's cgroup
  delegates the `memory` and `pids` controllers to its children;
- else cgroup v1 (`memory.limit_in_bytes`, `memory.memsw.limit_in_bytes` when swap is
  accounted, `pids.max`) when the `memory` and `pids` hierarchies are writable;
- else none (a container's read-only `/sys/fs/cgroup`, the default in Docker and
  Kubernetes): the sandbox then refuses when `AGENT_LOOP_SANDBOX_REQUIRE_CGROUP` is on,
  and otherwise every result says its limits were per process (`_select`, `_bwrap`).

The command joins its group before it starts anything: a fixed `/bin/sh` script writes
its own pid into each group's `cgroup.procs` and then `exec`s the command, so every
process it forks is counted. After every run, before the group is removed, its OOM kill
count is read (`memory.events` on v2, `memory.oom_control` on v1): the kernel may kill a
worker while the command itself exits 0, and such a run hit the memory limit.

Where the groups live is found from `/proc/self/cgroup` and `/proc/self/mountinfo`; both
are read from a `proc` folder that tests point at a simulated cgroup file system.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent_loop_common.sandbox._tree import pid_alive

__all__ = [
    "JOIN_SCRIPT",
    "PROC_SELF",
    "CgroupSupport",
    "SandboxCgroup",
    "cgroup_support",
    "sweep_stale_cgroups",
]

JOIN_SCRIPT = (
    'while [ "$1" != "--" ]; do\n'
    '  echo $$ > "$1/cgroup.procs" || { echo "agent-loop: cannot join $1" >&2; exit 125; }\n'
    "  shift\n"
    "done\n"
    "shift\n"
    'exec "$@"\n'
)
"""`sh -c JOIN_SCRIPT sh DIR... -- ARGV...`: join each group, then run `ARGV`. Fixed
text; the folders and the command are arguments, never part of the script."""


@dataclass(frozen=True)
class CgroupSupport:
    """Where this process may create per-sandbox groups.

    Attributes:
        version: 2, 1, or `None` when neither works here.
        parents: The folders to create groups in (one for v2; memory and pids for v1).
        reason: Why, for people.
    """

    version: Literal[1, 2] | None
    parents: tuple[Path, ...]
    reason: str


PROC_SELF = Path("/proc/self")
"""Where this process's cgroup paths and mounts are read from."""


def _own_paths(proc: Path) -> dict[str, str]:
    """This process's cgroup path per controller (`""` for the v2 hierarchy)."""
    found: dict[str, str] = {}
    try:
        lines = (proc / "cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            found[controller] = parts[2]
    return found


def _mounts(proc: Path) -> dict[str, Path]:
    """Mount points: `"cgroup2"` for the v2 hierarchy, each v1 controller by name."""
    found: dict[str, Path] = {}
    try:
        lines = (proc / "mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, extra = left.split(), right.split()
        if len(fields) < 5 or len(extra) < 3:
            continue
        point = Path(fields[4])
        if extra[0] == "cgroup2":
            found.setdefault("cgroup2", point)
        elif extra[0] == "cgroup":
            for option in extra[2].split(","):
                found.setdefault(option, point)
    return found


def _probe_child(parent: Path, files: tuple[str, ...]) -> bool:
    probe = parent / f"agent-loop-probe-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        return all((probe / name).exists() for name in files)
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


_GROUP = re.compile(r"agent-loop-sandbox-(?P<pid>\d+)-[0-9a-f]+$")


def sweep_stale_cgroups(parents: tuple[Path, ...]) -> int:
    """Remove the empty groups a dead agent process left (killed mid-run); returns how many.

    A group's name carries the pid of the process that made it; one whose process is
    gone is removed when the kernel lets it (only an empty group can be).
    """
    removed = 0
    for parent in parents:
        try:
            entries = list(os.scandir(parent))
        except OSError:
            continue
        for entry in entries:
            match = _GROUP.match(entry.name)
            if match is None or int(match.group("pid")) == os.getpid():
                continue
            if pid_alive(int(match.group("pid"))):
                continue
            with contextlib.suppress(OSError):
                os.rmdir(entry.path)
                removed += 1
    return removed


def cgroup_support(proc: Path = PROC_SELF) -> CgroupSupport:
    """Whether (and which) per-sandbox control groups can be made here (checks by trying).

    Args:
        proc: The `/proc/self` to read this process's cgroup paths and mounts from.
    """
    paths, mounts = _own_paths(proc), _mounts(proc)
    if "cgroup2" in mounts and "" in paths:
        parent = mounts["cgroup2"] / paths[""].lstrip("/")
        if _probe_child(parent, ("memory.max", "pids.max", "cgroup.procs")):
            return CgroupSupport(2, (parent,), f"cgroup v2 under {parent}")
    if "memory" in mounts and "pids" in mounts and "memory" in paths and "pids" in paths:
        memory = mounts["memory"] / paths["memory"].lstrip("/")
        pids = mounts["pids"] / paths["pids"].lstrip("/")
        if _probe_child(memory, ("memory.limit_in_bytes",)) and _probe_child(pids, ("pids.max",)):
            return CgroupSupport(1, (memory, pids), f"cgroup v1 under {memory} and {pids}")
    return CgroupSupport(
        None,
        (),
        "no control group can be created here (no delegated cgroup v2 memory and pids "
        "controllers, no writable cgroup v1 memory and pids hierarchies; a container's "
        "/sys/fs/cgroup is read-only by default)",
    )


@dataclass(frozen=True)
class SandboxCgroup:
    """One sandbox's groups (one folder for v2, two for v1)."""

    version: Literal[1, 2]
    folders: tuple[Path, ...]

    @classmethod
    def create(
        cls, support: CgroupSupport, *, memory_bytes: int, max_processes: int
    ) -> SandboxCgroup | None:
        """New groups with these limits, or `None` when the host does not allow them."""
        if support.version is None:
            return None
        name = f"agent-loop-sandbox-{os.getpid()}-{secrets.token_hex(4)}"
        folders = tuple(parent / name for parent in support.parents)
        made: list[Path] = []
        try:
            for folder in folders:
                folder.mkdir()
                made.append(folder)
            if support.version == 2:
                (folders[0] / "memory.max").write_text(str(memory_bytes))
                with contextlib.suppress(OSError):  # no swap accounting: nothing to bound
                    (folders[0] / "memory.swap.max").write_text("0")
                (folders[0] / "pids.max").write_text(str(max_processes))
            else:
                (folders[0] / "memory.limit_in_bytes").write_text(str(memory_bytes))
                with contextlib.suppress(OSError):
                    (folders[0] / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
                (folders[1] / "pids.max").write_text(str(max_processes))
        except OSError:
            for folder in made:
                with contextlib.suppress(OSError):
                    folder.rmdir()
            return None
        return cls(support.version, folders)

    def join_prefix(self) -> list[str]:
        """`/bin/sh -c JOIN_SCRIPT sh DIR... --`: what runs before the command."""
        return ["/bin/sh", "-c", JOIN_SCRIPT, "sh", *(str(f) for f in self.folders), "--"]

    def limit_hit(self) -> Literal["memory", "processes"] | None:
        """The group's limit the command ran into, read before `remove`."""
        if self.ran_out_of_memory():
            return "memory"
        if self.hit_process_limit():
            return "processes"
        return None

    def ran_out_of_memory(self) -> bool:
        """Whether the kernel killed (or refused) memory in this group."""
        folder = self.folders[0]
        try:
            if self.version == 2:
                events = (folder / "memory.events").read_text().split()
                counts = dict(zip(events[::2], events[1::2], strict=False))
                return int(counts.get("oom_kill", "0")) > 0 or int(counts.get("max", "0")) > 0
            control = (folder / "memory.oom_control").read_text().split()
            counts = dict(zip(control[::2], control[1::2], strict=False))
            if int(counts.get("oom_kill", "0")) > 0:
                return True
            return any(
                int((folder / name).read_text().strip() or 0) > 0
                for name in ("memory.failcnt", "memory.memsw.failcnt")
                if (folder / name).exists()
            )
        except (OSError, ValueError):
            return False

    def oom_kills(self) -> int:
        """Processes the kernel's OOM killer killed in this group (read before `remove`).

        cgroup v2: `oom_kill` of `memory.events`; v1: `oom_kill` of `memory.oom_control`
        (kernels since 4.13). 0 when the count cannot be read.
        """
        folder = self.folders[0]
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            fields = (folder / name).read_text().split()
            counts = dict(zip(fields[::2], fields[1::2], strict=False))
            return max(0, int(counts.get("oom_kill", "0")))
        except (OSError, ValueError):
            return 0

    def hit_process_limit(self) -> bool:
        """Whether a fork was refused by this group's process limit."""
        folder = self.folders[-1]
        try:
            events = (folder / "pids.events").read_text().split()
        except OSError:
            return False
        counts = dict(zip(events[::2], events[1::2], strict=False))
        return int(counts.get("max", "0") or 0) > 0

    def remove(self) -> None:
        """Delete the groups (once their processes are gone; retried briefly)."""
        for folder in self.folders:
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
