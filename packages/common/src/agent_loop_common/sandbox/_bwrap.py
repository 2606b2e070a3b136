"""The bubblewrap backend: Linux namespaces around a private copy of the tree.

What the command gets (built by the pure `bwrap_argv`):

- new user, PID, IPC, UTS and cgroup namespaces, and a new network namespace (only a
  loopback of its own); a run with the network (setup commands) gets a namespace of its
  own too, with user-mode networking that cannot reach the host (`_setup_net`);
- a non-root user (`sandbox`, uid 1000) with every capability dropped, no new user
  namespaces, and `--die-with-parent`;
- read-only: `/usr` and the `/bin`, `/lib*`, `/sbin` links, the few `/etc` files
  toolchains read (dynamic linker cache, certificates, alternatives, time zone), the
  installation of a program named by absolute path outside the repository,
  `AGENT_LOOP_SANDBOX_READONLY_PATHS`; generated `passwd`, `group` and `hosts` files.
  Nothing in the tree chooses a bind (`_paths.plan_binds`);
- writable: only the workspace's copy (`/sandbox/repo`, the working directory), its
  HOME (`/sandbox/home`), `/tmp`, `/dev/shm` and the report folder (`/sandbox/out`), all
  folders of the workspace on disk; the root and `/dev` are remounted read-only, so no
  memory-backed file system is writable (no rlimit counts a tmpfs);
- an environment of `PATH`, `HOME`, `LANG` and `SANDBOX_JUNIT`, nothing else;
- rlimits set by `prlimit` inside the namespaces (address space, CPU seconds, file size,
  process count, no core files), and, where the host allows it, a control group of its
  own that bounds the memory and the process count of the whole sandbox (`_cgroup`).
  Without one the run is refused when the control group is required
  (`AGENT_LOOP_SANDBOX_REQUIRE_CGROUP`), and otherwise its result says the limits were
  per process (`RunResult.per_process_limits` and a note). Every run reads its group's
  OOM kill count: a worker killed for memory makes the run hit the `memory` limit even
  when the command exits 0.

**Why the command never runs as the host's root.** The kernel does not apply
`RLIMIT_NPROC` to processes of host uid 0, even inside a user namespace, so a fork bomb
would not be contained. When this process is root, bubblewrap itself is started as an
unprivileged host uid (65534) through `setpriv`, so the command's processes belong to
that uid and the process limit counts this sandbox's processes only (the count is kept
per user namespace). Running as that uid, bubblewrap cannot read a bind source behind a
folder only root may enter (a virtualenv's interpreter under `/root/.pyenv`): such
sources are first bound into the workspace by an outer bubblewrap that runs as root in
a mount namespace of its own and then drops to that uid.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from agent_loop_common.sandbox._base import Sandbox, result_from
from agent_loop_common.sandbox._bwrap_argv import (
    ETC_FILES,
    GROUP,
    HOSTS,
    JUNIT_PATH,
    PASSWD,
    REPO_DIR,
    SANDBOX_HOST_UID,
    BwrapLayout,
    bwrap_argv,
    outer_argv,
)
from agent_loop_common.sandbox._cgroup import (
    CgroupSupport,
    SandboxCgroup,
    cgroup_support,
    sweep_stale_cgroups,
)
from agent_loop_common.sandbox._command import expand_placeholders
from agent_loop_common.sandbox._limits import SandboxLimits
from agent_loop_common.sandbox._paths import (
    SYSTEM_DIRS,
    ProtectedPaths,
    plan_binds,
)
from agent_loop_common.sandbox._process import run_process
from agent_loop_common.sandbox._result import LimitName, RunResult
from agent_loop_common.sandbox._setup_net import (
    NAMESERVER,
    SetupNetwork,
    host_addresses,
    ipv6_enabled,
    route_batch,
)
from agent_loop_common.sandbox._tree import Workspace

__all__ = ["BWRAP_BACKEND", "BwrapSandbox", "find_program", "locate_program", "missing_program"]

BWRAP_BACKEND = "bwrap"
CGROUP_WRAPPERS = 4
"""Processes of the sandbox's own in its control group, on top of the command's limit."""


@functools.cache
def _cgroup_support() -> CgroupSupport:
    support = cgroup_support()
    sweep_stale_cgroups(support.parents)  # once per process: what a killed agent left
    return support


def find_program(name: str) -> str | None:
    """A host program on `PATH` or in the usual system folders."""
    return shutil.which(name) or shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")


def _reachable(path: Path, uid: int, gid: int) -> bool:
    """Whether `uid` can reach and read `path` by permission bits (no ACLs)."""
    try:
        chain = [*reversed(path.parents), path]
        for index, part in enumerate(chain):
            info = os.stat(part)
            last = index == len(chain) - 1
            need = (stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH)
            if last and not stat.S_ISDIR(info.st_mode):
                need = (stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH)
            if info.st_uid == uid:
                bit = need[0]
            elif info.st_gid == gid:
                bit = need[1]
            else:
                bit = need[2]
            if not info.st_mode & bit:
                return False
    except OSError:
        return False
    return True


def _system_dirs() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for folder in SYSTEM_DIRS:
        if os.path.islink(folder):
            found[folder] = os.readlink(folder)
        elif os.path.isdir(folder):
            found[folder] = None
    return found


def _command_path(argv0: str) -> str:
    extra = [f"{REPO_DIR}/.venv/bin"]
    if argv0.startswith("/"):
        extra.append(os.path.dirname(argv0))
    base = ["/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"]
    return ":".join(dict.fromkeys([*extra, *base]))


def _inside_to_host(folder: str, repo: Path) -> Path:
    if folder == REPO_DIR or folder.startswith(REPO_DIR + "/"):
        return repo / folder[len(REPO_DIR) :].lstrip("/")
    return Path(folder)


def locate_program(argv0: str, path: str, repo: Path) -> Path | None:
    """Where the sandbox will find `argv0`, as a host path (`None`: nowhere)."""
    if "/" in argv0:
        host = Path(argv0) if argv0.startswith("/") else repo / argv0
        return host if os.path.lexists(host) else None
    for folder in path.split(":"):
        candidate = _inside_to_host(folder, repo) / argv0
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def missing_program(argv0: str, path: str, repo: Path, visible: Sequence[Path]) -> str | None:
    """Why `argv0` will not be found inside the sandbox, or `None` when it will be."""
    found = locate_program(argv0, path, repo)
    if found is None:
        if argv0.startswith("/"):
            return f"{argv0} does not exist"
        if "/" in argv0:
            return f"{argv0} does not exist in the repository"
        return f"{argv0!r} is not on the sandbox's PATH ({path})"
    if argv0.startswith("/"):
        text = str(found)
        system = any(text == d or text.startswith(d + "/") for d in SYSTEM_DIRS)
        if not system and not any(found == v or v in found.parents for v in visible):
            return f"{argv0} is not visible in the sandbox (its folder was not bound)"
    return None


class BwrapSandbox(Sandbox):
    """Commands in bubblewrap namespaces (see the module docstring for what they get)."""

    name = BWRAP_BACKEND
    fixed_repo_path = True

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        protected: ProtectedPaths | None = None,
        readonly_paths: Sequence[str | Path] = (),
        work_root: Path | None = None,
        bwrap: str | None = None,
        prlimit: str | None = None,
        setpriv: str | None = None,
        require_cgroup: bool = False,
    ) -> None:
        super().__init__(
            limits, protected=protected, readonly_paths=readonly_paths, work_root=work_root
        )
        self.require_cgroup = require_cgroup
        """Refuse to run a command no control group bounds (`AGENT_LOOP_SANDBOX_REQUIRE_CGROUP`)."""
        self.bwrap = bwrap or find_program("bwrap") or "bwrap"
        self.prlimit = prlimit or find_program("prlimit") or "/usr/bin/prlimit"
        self.setpriv = setpriv or find_program("setpriv") or "/usr/bin/setpriv"
        self.as_root = os.geteuid() == 0

    def workspace_owner(self) -> tuple[int, int] | None:
        """As root, the workspace belongs to the unprivileged uid the command runs as."""
        return (SANDBOX_HOST_UID, SANDBOX_HOST_UID) if self.as_root else None

    def setup_network(self) -> SetupNetwork:
        """How a run with the network (setup) gets a namespace of its own."""
        return SetupNetwork(
            unshare=find_program("unshare") or "/usr/bin/unshare",
            slirp4netns=find_program("slirp4netns") or "/usr/bin/slirp4netns",
            ip=find_program("ip") or "/usr/sbin/ip",
            as_root=self.as_root,
        )

    def _layout(
        self, workspace: Workspace, argv0: str, *, network: bool = False, bind_program: bool = True
    ) -> tuple[BwrapLayout, list[tuple[Path, Path]], list[str], list[Path]]:
        path = _command_path(argv0)
        trees = [workspace.root, *([workspace.source] if workspace.source else [])]
        programs = [argv0] if bind_program else []
        binds, notes = plan_binds(programs, self.readonly_paths, self.protected, trees=trees)
        if not bind_program and argv0.startswith("/"):
            notes.append(
                f"not bound: {argv0} was named by the repository's files, which never choose "
                "a host folder to show; name it in AGENT_LOOP_TEST_COMMAND to use it"
            )
        stages: list[tuple[Path, Path]] = []
        readonly: list[tuple[Path, Path]] = []
        for index, bind in enumerate(binds):
            source = bind
            if self.as_root and not _reachable(bind, SANDBOX_HOST_UID, SANDBOX_HOST_UID):
                stage = workspace.root / "stage" / str(index)
                stage.mkdir(parents=True)
                if not bind.is_dir():
                    stage.rmdir()
                    stage.touch()
                os.lchown(stage.parent, SANDBOX_HOST_UID, SANDBOX_HOST_UID)
                os.lchown(stage, SANDBOX_HOST_UID, SANDBOX_HOST_UID)
                stages.append((bind, stage))
                source = stage
            readonly.append((source, bind))
        generated = {"passwd": PASSWD, "group": GROUP, "hosts": HOSTS}
        if network:
            generated["resolv.conf"] = f"nameserver {NAMESERVER}\n"
        etc = workspace.write_etc(generated)
        if self.as_root:
            for host in etc.values():
                os.lchown(host, SANDBOX_HOST_UID, SANDBOX_HOST_UID)
        layout = BwrapLayout(
            bwrap=self.bwrap,
            prlimit=self.prlimit,
            repo=workspace.repo,
            home=workspace.home,
            tmp=workspace.tmp,
            out=workspace.out,
            shm=workspace.shm,
            etc=etc,
            readonly=readonly,
            system=_system_dirs(),
            etc_passthrough=[e for e in ETC_FILES if os.path.exists(e)],
            limits=self.limits,
            path=path,
            guard=workspace.guard if workspace.guard_module and not network else None,
        )
        return layout, stages, notes, binds

    async def _execute(
        self,
        workspace: Workspace,
        argv: tuple[str, ...],
        *,
        network: bool,
        time_limit: float,
        bind_program: bool = True,
    ) -> RunResult:
        argv = expand_placeholders(argv, junit_path=JUNIT_PATH, guard=workspace.guard_module)
        layout, stages, notes, binds = await asyncio.to_thread(
            functools.partial(
                self._layout, workspace, argv[0], network=network, bind_program=bind_program
            )
        )
        missing = missing_program(argv[0], layout.path, workspace.repo, binds)
        if missing is not None:
            return RunResult(
                backend=self.name,
                argv=argv,
                exit_code=127,
                network=network,
                error=f"command not found in the sandbox: {missing}",
                notes=tuple(notes),
            )
        command = bwrap_argv(layout, argv, network=network)
        if self.as_root:
            prefix = outer_argv(
                self.bwrap, self.setpriv, stages, SANDBOX_HOST_UID, SANDBOX_HOST_UID
            )
            command = [*prefix, *command]
        on_start = stop = None
        if network:
            net = self.setup_network()
            refused = net.missing()
            if refused is not None:
                return RunResult(
                    backend=self.name,
                    argv=argv,
                    exit_code=127,
                    network=network,
                    error=f"cannot give the setup step a network: {refused}",
                    notes=tuple(notes),
                )
            batch = workspace.etc / "routes"
            # The host's addresses now, for this run: one it gained since is dropped too.
            own = await asyncio.to_thread(host_addresses, net.ip)
            batch.write_text(route_batch(own, ipv6=ipv6_enabled()))
            command = [*net.prefix(batch), *command]
            on_start, stop = net.attach()
        group = await asyncio.to_thread(self._new_cgroup)
        per_process = group is None
        if group is not None:
            command = [*group.join_prefix(), *command]
        else:
            why = await asyncio.to_thread(self._no_cgroup_reason)
            if self.require_cgroup:
                return RunResult(
                    backend=self.name,
                    argv=argv,
                    exit_code=127,
                    network=network,
                    error=(
                        f"no control group can bound this sandbox as a whole ({why}), and "
                        "AGENT_LOOP_SANDBOX_REQUIRE_CGROUP is on: nothing ran"
                    ),
                    notes=tuple(notes),
                )
            notes.append(self.limits.per_process_note(why))
        hit: LimitName | None = None
        kills = 0
        try:
            outcome = await run_process(
                command,
                env={"PATH": "/usr/bin:/bin"},
                cwd=workspace.root,
                time_limit=time_limit,
                capture=self.new_capture(),
                on_start=on_start,
                signal_from_status=True,
            )
            if group is not None:
                kills = await asyncio.to_thread(group.oom_kills)
                if outcome.exit_code != 0:
                    hit = await asyncio.to_thread(group.limit_hit)
        finally:
            if stop is not None:
                await stop()
            if group is not None:
                await asyncio.to_thread(group.remove)
        result = result_from(
            outcome,
            backend=self.name,
            argv=argv,
            network=network,
            notes=notes,
        )
        if kills:
            hit = "memory"
        update: dict[str, object] = {"oom_kills": kills, "per_process_limits": per_process}
        if hit is not None and result.limit is None:
            update["limit"] = hit
        return result.model_copy(update=update)

    def cgroups(self) -> CgroupSupport:
        """Whether each command gets control groups of its own here (probed once)."""
        return _cgroup_support()

    def _no_cgroup_reason(self) -> str:
        support = self.cgroups()
        if support.version is None:
            return support.reason
        return f"a control group could not be created under {support.parents[0]}"

    def _new_cgroup(self) -> SandboxCgroup | None:
        # A few processes more than the command's own limit: the sandbox's wrappers
        # (the join script, bubblewrap's init, the outer stager) live in the group too.
        return SandboxCgroup.create(
            self.cgroups(),
            memory_bytes=self.limits.memory_bytes,
            max_processes=self.limits.max_processes + CGROUP_WRAPPERS,
        )

    async def probe(self) -> tuple[bool, str]:
        """Run `true` in this sandbox: whether it works here, and why not."""
        missing = await asyncio.to_thread(self._missing_tool)
        if missing is not None:
            return False, missing
        result, elapsed = await self._run_true(network=False)
        if result.ok:
            return True, f"ran `true` in {elapsed * 1000:.0f} ms"
        return False, f"`true` failed in bubblewrap: {_last_line(result)}"

    async def probe_setup_network(self) -> str | None:
        """Run `true` with the setup step's network: `None` when it works, else why not."""
        result, _ = await self._run_true(network=True)
        return None if result.ok else _last_line(result)

    async def _run_true(self, *, network: bool) -> tuple[RunResult, float]:
        """`true` run on an empty folder in this sandbox, and the seconds it took.

        Whether bubblewrap works is asked apart from whether a control group is required
        (`open_sandbox` checks that with its own message), so the probe runs without it.
        """
        prober = copy.copy(self)
        prober.require_cgroup = False
        empty = Path(await asyncio.to_thread(_empty_dir, self.work_root))
        try:
            started = time.perf_counter()
            result = await prober.run(empty, ["true"], network=network, time_limit=20)
            return result, time.perf_counter() - started
        finally:
            await asyncio.to_thread(shutil.rmtree, empty, True)

    def _missing_tool(self) -> str | None:
        if shutil.which(self.bwrap) is None:
            return "bubblewrap is not installed (apt-get install -y bubblewrap)"
        tools = [(self.prlimit, "prlimit")] + ([(self.setpriv, "setpriv")] if self.as_root else [])
        for tool, what in tools:
            if not os.path.exists(tool):
                return f"{what} (util-linux) is missing at {tool}"
        return None


def _empty_dir(parent: Path | None) -> str:
    return tempfile.mkdtemp(prefix="agent-loop-probe-", dir=parent)


def _last_line(result: RunResult) -> str:
    """The last line of a failed run's error or output (its summary when both are empty)."""
    detail = (result.error or result.output.text).strip().splitlines()
    return detail[-1] if detail else result.summary()
