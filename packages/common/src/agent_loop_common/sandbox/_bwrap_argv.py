"""The bubblewrap command line, as a pure function of a layout (tested without bubblewrap).

`bwrap_argv` is everything the sandbox promises, in one place: which namespaces, which
user, which folders read-only and writable, which environment, which limits. The
backend in `_bwrap` only gathers the host paths for a `BwrapLayout`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent_loop_common.sandbox._guard import GUARD_DIR
from agent_loop_common.sandbox._limits import SandboxLimits

__all__ = [
    "ETC_FILES",
    "GROUP",
    "HOSTS",
    "JUNIT_PATH",
    "NETWORK_ETC_FILES",
    "PASSWD",
    "REPO_DIR",
    "SANDBOX_HOST_UID",
    "SANDBOX_UID",
    "BwrapLayout",
    "bwrap_argv",
    "outer_argv",
    "sandbox_env",
]

SANDBOX_HOST_UID = 65534
"""Host uid (and gid) of the command when this process is root: `nobody`."""
SANDBOX_UID = 1000
"""The command's uid and gid inside the sandbox."""

REPO_DIR = "/sandbox/repo"
HOME_DIR = "/sandbox/home"
OUT_DIR = "/sandbox/out"
JUNIT_PATH = f"{OUT_DIR}/junit.xml"

ETC_FILES = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki",
    "/etc/crypto-policies",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/nsswitch.conf",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/lsb-release",
    "/etc/mime.types",
    "/etc/protocols",
    "/etc/services",
)
"""Host `/etc` entries shown read-only when they exist: what toolchains read, no secrets."""
NETWORK_ETC_FILES = ("/etc/gai.conf", "/etc/host.conf")
"""Added for runs with the network (setup): name resolution settings. `resolv.conf` is
generated (the setup network's own resolver, `_setup_net.NAMESERVER`), never the host's."""

PASSWD = (
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:{HOME_DIR}:/bin/sh\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
)
GROUP = f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\nnogroup:x:65534:\n"
HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"


@dataclass(frozen=True)
class BwrapLayout:
    """Everything `bwrap_argv` needs; host paths are absolute.

    Attributes:
        bwrap: The bubblewrap program.
        prlimit: The `prlimit` program, inside `/usr` so the sandbox sees it too.
        repo: The workspace's copy (bound writable at `/sandbox/repo`).
        home: The command's HOME (at `/sandbox/home`).
        tmp: The command's `/tmp`.
        out: The report folder (at `/sandbox/out`).
        shm: The command's `/dev/shm` (a workspace folder, so it counts as disk).
        etc: Generated `/etc` files, name -> host path.
        readonly: Read-only binds as `(host source, path inside)`.
        system: System folders: path -> `None` to bind it, or a link target.
        etc_passthrough: Host `/etc` entries to bind read-only.
        limits: The limits, applied by `prlimit` inside.
        path: `PATH` inside.
        guard: The pytest guard's folder, shown read-only at `/sandbox/guard` and put
            on `PYTHONPATH` (a guarded pytest run only).
    """

    bwrap: str
    prlimit: str
    repo: Path
    home: Path
    tmp: Path
    out: Path
    shm: Path
    etc: Mapping[str, Path]
    readonly: Sequence[tuple[Path, Path]] = ()
    system: Mapping[str, str | None] = field(default_factory=dict[str, str | None])
    etc_passthrough: Sequence[str] = ()
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    path: str = "/usr/local/bin:/usr/bin:/bin"
    guard: Path | None = None


def sandbox_env(path: str, *, guard: bool = False) -> dict[str, str]:
    """The command's whole environment (`PYTHONPATH` only for the pytest guard)."""
    env = {"PATH": path, "HOME": HOME_DIR, "LANG": "C.UTF-8", "SANDBOX_JUNIT": JUNIT_PATH}
    if guard:
        env["PYTHONPATH"] = GUARD_DIR
    return env


def bwrap_argv(layout: BwrapLayout, argv: Sequence[str], *, network: bool) -> list[str]:
    """The bubblewrap command line that runs `argv` in the sandbox (pure)."""
    cmd = [
        layout.bwrap,
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]
    if not network:
        cmd.append("--unshare-net")
    cmd += [
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
        "--clearenv",
    ]
    for key, value in sandbox_env(layout.path, guard=layout.guard is not None).items():
        cmd += ["--setenv", key, value]
    for folder, target in layout.system.items():
        cmd += (
            ["--symlink", target, folder] if target is not None else ["--ro-bind", folder, folder]
        )
    for entry in layout.etc_passthrough:
        cmd += ["--ro-bind-try", entry, entry]
    if network:
        cmd += [arg for f in NETWORK_ETC_FILES for arg in ("--ro-bind-try", f, f)]
    for name, host in layout.etc.items():
        cmd += ["--ro-bind", str(host), f"/etc/{name}"]
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    cmd += [
        "--bind",
        str(layout.tmp),
        "/tmp",  # noqa: S108 (the sandbox's own /tmp, a workspace folder)
        "--bind",
        str(layout.repo),
        REPO_DIR,
        "--bind",
        str(layout.home),
        HOME_DIR,
        "--bind",
        str(layout.out),
        OUT_DIR,
        # /dev/shm on disk in the workspace; then nothing else in memory is writable:
        # a tmpfs is RAM that no rlimit counts.
        "--bind",
        str(layout.shm),
        "/dev/shm",  # noqa: S108 (the sandbox's own /dev/shm, a workspace folder)
    ]
    # After the workspace's /tmp: a toolchain installed under /tmp (a checkout there, its
    # virtual environment) stays visible instead of being hidden by the sandbox's /tmp.
    for source, inside in layout.readonly:
        cmd += ["--ro-bind", str(source), str(inside)]
    if layout.guard is not None:
        cmd += ["--ro-bind", str(layout.guard), GUARD_DIR]
    cmd += [
        "--remount-ro",
        "/dev",
        "--remount-ro",
        "/",
        "--chdir",
        REPO_DIR,
        "--",
        *layout.limits.prlimit_argv(layout.prlimit),
        *argv,
    ]
    return cmd


def outer_argv(
    bwrap: str, setpriv: str, stages: Sequence[tuple[Path, Path]], uid: int, gid: int
) -> list[str]:
    """The prefix that starts the sandbox as `uid` from root (pure).

    With `stages` (`(source, stage folder)` pairs), an outer bubblewrap first binds each
    source the unprivileged uid could not reach onto its stage folder, in a mount
    namespace of its own that keeps the host's whole tree otherwise.
    """
    drop = [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]
    if not stages:
        return drop
    outer = [bwrap, "--dev-bind", "/", "/", "--die-with-parent"]
    for source, stage in stages:
        outer += ["--ro-bind", str(source), str(stage)]
    return [*outer, "--", *drop]
