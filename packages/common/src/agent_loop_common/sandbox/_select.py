"""Choosing the sandbox: `open_sandbox(settings)` and `check_backends(settings)`.

`AGENT_LOOP_SANDBOX` names the backend:

- `auto` (default): `bwrap` when it actually works here (probed once per process by
  running `true` in it), else `docker` when an engine answers, else a refusal that
  names the ways out;
- `bwrap`, `docker`, `flyte`: that backend, or a refusal saying why it cannot run here;
- `off`: nothing runs; results say so, and callers open draft pull requests.

`bwrap` bounds the whole sandbox with a control group where the host allows one. Where it
does not (a container's read-only `/sys/fs/cgroup`), `AGENT_LOOP_SANDBOX_REQUIRE_CGROUP`
decides (`cgroup_required`; unset: on in a deployed agent, off elsewhere): on, `bwrap`
cannot run here and the refusal says why (before any claim, like no sandbox at all);
off, it runs and every result says its limits were per process.

The plain subprocess is never chosen by a setting: a caller that runs its own sample
code (the offline demo) asks for it with `allow_unisolated=True`, and gets it only when
no isolating backend works.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from agent_loop_common.sandbox._base import DisabledSandbox, Sandbox
from agent_loop_common.sandbox._bwrap import BwrapSandbox
from agent_loop_common.sandbox._docker import DockerSandbox
from agent_loop_common.sandbox._errors import SandboxUnavailable
from agent_loop_common.sandbox._flyte import FlyteSandbox, in_flyte_cluster
from agent_loop_common.sandbox._limits import SandboxLimits
from agent_loop_common.sandbox._paths import ProtectedPaths
from agent_loop_common.sandbox._plain import PlainSubprocessSandbox

if TYPE_CHECKING:
    from agent_loop_common.settings import Settings

__all__ = [
    "BackendCheck",
    "SandboxChoice",
    "cgroup_required",
    "check_backends",
    "clear_probe_cache",
    "limits_from_settings",
    "open_sandbox",
    "protected_from_settings",
    "sandbox_facts",
    "selected_backend",
]

SandboxChoice = Literal["auto", "bwrap", "docker", "flyte", "off"]
"""The values of `AGENT_LOOP_SANDBOX`."""

_HOW_TO = (
    "Install bubblewrap (apt-get install -y bubblewrap), or set AGENT_LOOP_SANDBOX=docker "
    "with a Docker engine and AGENT_LOOP_SANDBOX_IMAGE, or set AGENT_LOOP_SANDBOX=off to "
    "open pull requests as drafts without running tests."
)

_CGROUP_HOW_TO = (
    "Give the agent a control group it can create groups in (cgroup v2 with the memory "
    "and pids controllers delegated, e.g. systemd's Delegate=yes, or writable cgroup v1 "
    "memory and pids hierarchies; in a container: its own cgroup namespace with "
    "/sys/fs/cgroup writable), or use AGENT_LOOP_SANDBOX=docker or flyte (the container's "
    "limits bound the tests), or set AGENT_LOOP_SANDBOX_REQUIRE_CGROUP=false to accept "
    "per-process limits (every result and pull request then says so)."
)

_probes: dict[tuple[str, str], tuple[bool, str]] = {}


class BackendCheck(BaseModel):
    """Whether one backend works here, and why (not)."""

    model_config = ConfigDict(frozen=True)

    backend: str
    """The backend's name."""
    works: bool
    """Whether it can run commands here."""
    reason: str
    """Why it works or not, for people."""
    isolated: bool = True
    """False for the plain subprocess and `off`."""
    remedy: str = ""
    """What to do when it does not work here, when that is specific to why."""


def limits_from_settings(settings: Settings) -> SandboxLimits:
    """The limits configured by `AGENT_LOOP_SANDBOX_*`."""
    return SandboxLimits(
        wall_seconds=settings.sandbox_timeout_seconds,
        memory_mb=settings.sandbox_memory_mb,
        max_processes=settings.sandbox_max_processes,
        max_file_mb=settings.sandbox_max_file_mb,
    )


def protected_from_settings(settings: Settings) -> ProtectedPaths:
    """The homes of this machine, `AGENT_LOOP_HOME` and the App's key file."""
    keys: list[Path] = []
    if settings.github_app_private_key_path is not None:
        keys.append(settings.github_app_private_key_path)
    return ProtectedPaths.current(agent_home=settings.home, key_files=keys)


def clear_probe_cache() -> None:
    """Forget the cached probes (a test installed or removed a tool)."""
    _probes.clear()


async def _cached(
    key: tuple[str, str], probe: Callable[[], Awaitable[tuple[bool, str]]]
) -> tuple[bool, str]:
    if key not in _probes:
        _probes[key] = await probe()
    return _probes[key]


def cgroup_required(setting: bool | None, *, deployed: bool) -> bool:
    """Whether `bwrap` must bound the whole sandbox with a control group (pure).

    Args:
        setting: `AGENT_LOOP_SANDBOX_REQUIRE_CGROUP` (`None` when unset).
        deployed: This process is a deployed agent (a Flyte task on a cluster).
    """
    return deployed if setting is None else setting


async def _requires_cgroup(settings: Settings) -> bool:
    setting = settings.sandbox_require_cgroup
    # Where this process runs is asked only when the setting leaves it to that.
    deployed = setting is None and await asyncio.to_thread(in_flyte_cluster)
    return cgroup_required(setting, deployed=deployed)


def _bwrap(
    settings: Settings,
    limits: SandboxLimits,
    protected: ProtectedPaths,
    *,
    require_cgroup: bool = False,
) -> BwrapSandbox:
    return BwrapSandbox(
        limits,
        protected=protected,
        readonly_paths=tuple(settings.sandbox_readonly_paths),
        require_cgroup=require_cgroup,
    )


async def _cgroup_refusal(bwrap: BwrapSandbox, settings: Settings) -> str | None:
    """Why `bwrap` may not run here although it works: no control group, and one is
    required (`None`: it may run)."""
    if not bwrap.require_cgroup:
        return None
    support = await asyncio.to_thread(bwrap.cgroups)
    if support.version is not None:
        return None
    default = (
        " (the default in a deployed agent)" if settings.sandbox_require_cgroup is None else ""
    )
    return (
        f"{support.reason}, and AGENT_LOOP_SANDBOX_REQUIRE_CGROUP is on{default}: without a "
        f"control group the sandbox's memory and process limits hold per process only (up "
        f"to {bwrap.limits.total_memory_mb:,} MB in total)"
    )


def _docker(settings: Settings, limits: SandboxLimits, protected: ProtectedPaths) -> DockerSandbox:
    return DockerSandbox(limits, image=settings.sandbox_image, protected=protected)


async def _probe_bwrap(sandbox: BwrapSandbox, refresh: bool) -> tuple[bool, str]:
    key = ("bwrap", sandbox.bwrap)
    if refresh:
        _probes.pop(key, None)
    return await _cached(key, sandbox.probe)


async def _probe_docker(sandbox: DockerSandbox, refresh: bool) -> tuple[bool, str]:
    key = ("docker", sandbox.docker)
    if refresh:
        _probes.pop(key, None)
    return await _cached(key, sandbox.probe)


async def open_sandbox(
    settings: Settings,
    *,
    flyte_task: Any = None,
    allow_unisolated: bool = False,
) -> Sandbox:
    """The sandbox `AGENT_LOOP_SANDBOX` asks for, checked to work here.

    Args:
        settings: The configuration (backend, image, limits, read-only paths).
        flyte_task: The tests' task for the `flyte` backend (see `build_container_task`).
        allow_unisolated: When no isolating backend works, return the plain subprocess
            instead of refusing (only for code the caller wrote itself, like the demo's).

    Raises:
        SandboxUnavailable: The chosen backend (or, for `auto`, every one) cannot run
            here; the message says why and what to do (show it and exit 2).
    """
    choice: SandboxChoice = settings.sandbox
    limits = limits_from_settings(settings)
    protected = protected_from_settings(settings)
    if choice == "off":
        return DisabledSandbox(limits, protected=protected)
    if choice == "flyte":
        if not await asyncio.to_thread(in_flyte_cluster):
            raise SandboxUnavailable(
                "AGENT_LOOP_SANDBOX=flyte runs tests in a Flyte task and works only inside a "
                "deployed agent on a cluster. Locally: " + _HOW_TO
            )
        return FlyteSandbox(limits, task=flyte_task, protected=protected)
    reasons: list[str] = []
    how_to = _HOW_TO
    if choice in ("auto", "bwrap"):
        bwrap = _bwrap(settings, limits, protected, require_cgroup=await _requires_cgroup(settings))
        works, why = await _probe_bwrap(bwrap, refresh=False)
        if works:
            refused = await _cgroup_refusal(bwrap, settings)
            if refused is None:
                return bwrap
            why, how_to = refused, _CGROUP_HOW_TO
        reasons.append(f"bwrap: {why}")
        if choice == "bwrap":
            raise SandboxUnavailable(f"AGENT_LOOP_SANDBOX=bwrap cannot run here: {why}. {how_to}")
    docker = _docker(settings, limits, protected)
    works, why = await _probe_docker(docker, refresh=False)
    if works:
        return docker
    reasons.append(f"docker: {why}")
    if choice == "docker":
        raise SandboxUnavailable(f"AGENT_LOOP_SANDBOX=docker cannot run here: {why}. {_HOW_TO}")
    if allow_unisolated:
        return PlainSubprocessSandbox(limits, protected=protected)
    raise SandboxUnavailable(
        "no sandbox can run the repository's tests here (" + "; ".join(reasons) + "). " + how_to
    )


async def check_backends(settings: Settings, *, refresh: bool = True) -> list[BackendCheck]:
    """Every backend, whether it works here and why (for `agent-loop sandbox check`)."""
    limits = limits_from_settings(settings)
    protected = protected_from_settings(settings)
    checks: list[BackendCheck] = []
    bwrap = _bwrap(settings, limits, protected, require_cgroup=await _requires_cgroup(settings))
    works, why = await _probe_bwrap(bwrap, refresh)
    remedy = ""
    if works and (refused := await _cgroup_refusal(bwrap, settings)) is not None:
        works, why, remedy = False, refused, _CGROUP_HOW_TO
    checks.append(BackendCheck(backend="bwrap", works=works, reason=why, remedy=remedy))
    works, why = await _probe_docker(_docker(settings, limits, protected), refresh)
    checks.append(BackendCheck(backend="docker", works=works, reason=why))
    on_cluster = await asyncio.to_thread(in_flyte_cluster)
    checks.append(
        BackendCheck(
            backend="flyte",
            works=on_cluster,
            reason="inside a Flyte task on a cluster"
            if on_cluster
            else "only inside a deployed agent on a Flyte cluster",
        )
    )
    checks.append(
        BackendCheck(
            backend=PlainSubprocessSandbox.name,
            works=True,
            reason="never chosen by AGENT_LOOP_SANDBOX: no namespaces, only for the demo's "
            "own sample code",
            isolated=False,
        )
    )
    checks.append(
        BackendCheck(
            backend="off",
            works=True,
            reason="runs nothing; pull requests open as drafts saying no tests ran",
            isolated=False,
        )
    )
    return checks


async def sandbox_facts(settings: Settings) -> list[str]:
    """What bounds one sandbox, and what a setup step can reach, per backend (for people).

    The setup network is tried for real (`true` with the network) when bubblewrap works.
    """
    limits = limits_from_settings(settings)
    bwrap = _bwrap(settings, limits, protected_from_settings(settings))
    refused = bwrap.setup_network().missing()
    if refused is None and (await _probe_bwrap(bwrap, refresh=False))[0]:
        refused = await bwrap.probe_setup_network()
    network = (
        "bwrap setup steps: cannot run here, " + refused
        if refused is not None
        else "bwrap setup steps: a network namespace of their own (slirp4netns): the "
        "internet, but not the host's loopback, abstract sockets, private, shared or "
        "link-local ranges, the cloud platform addresses (169.254.169.254, 168.63.129.16, "
        "fd00:ec2::254, ...), nor the host's own addresses (read again for every run)"
    )
    groups = await asyncio.to_thread(bwrap.cgroups)
    cgroup = f"cgroup v{groups.version}" if groups.version is not None else None
    return [
        limits.bounds("bwrap", cgroup=cgroup),
        *(limits.bounds(name) for name in ("docker", "flyte")),
        network,
        "docker setup steps: the engine's default bridge (the host's network rules apply)",
        "flyte setup steps: the cluster's network policy",
    ]


def selected_backend(checks: Sequence[BackendCheck], choice: SandboxChoice) -> str | None:
    """The backend `open_sandbox` would pick from these checks, or `None`."""
    works = {c.backend: c.works for c in checks}
    if choice == "auto":
        for name in ("bwrap", "docker"):
            if works.get(name):
                return name
        return None
    return choice if works.get(choice) else None
