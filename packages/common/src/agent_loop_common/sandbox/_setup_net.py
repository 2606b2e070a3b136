"""The setup step's network: its own namespace with user-mode networking, not the host's.

A setup command (installing dependencies) needs the internet, but it runs code from the
change under test, so it must not reach what only the host can: services on the host's
loopback, abstract unix sockets, the cloud metadata address, the private network the
host sits in, or the host's own addresses. It therefore runs in a **new network
namespace** whose only way out is `slirp4netns` (user-mode TCP/IP in a separate process,
from Debian's `slirp4netns` package):

- `--disable-host-loopback`: the namespace's gateway does not lead to the host's
  `127.0.0.1`, and the namespace's own loopback is its own;
- a network of its own (`198.18.0.0/24`, a range reserved for benchmarks, so it overlaps
  no real network), DNS through slirp's resolver at `198.18.0.3`, no IPv6 address;
- inside the namespace, before the command starts, routes that drop every private,
  shared, link-local and loopback range (`10/8`, `172.16/12`, `192.168/16`, `100.64/10`
  with Alibaba's `100.100.100.200`, `169.254/16` with the AWS/GCP/Azure metadata address,
  `192.0.0/24` with Oracle's `192.0.0.192`, `127/8`, ...), Azure's platform address
  `168.63.129.16` (a public address, reachable through the host's routes like any other),
  the IPv6 ones where the kernel has IPv6 (`fc00::/7` with `fd00:ec2::254` and
  `fd20:ce::254`, `fe80::/10`, the NAT64 and v4-mapped prefixes that lead back to IPv4),
  and each of the host's own addresses, read afresh for **every** setup run (an address
  the host gains later, an elastic IP, is dropped from the next run on): slirp opens
  outbound connections as host sockets, so without them the namespace could reach what
  the host can;
- a new network namespace has no abstract unix sockets of the host.

How it starts: `unshare --net` runs a fixed `/bin/sh` script (no user text in it) in
the new namespace; `slirp4netns` is attached to that process's namespace from outside;
the script waits for the default route, applies the routes with `ip -batch`, and
`exec`s the sandbox. This module is pure except `host_addresses` and `attach`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BLOCKED_RANGES",
    "BLOCKED_RANGES_V6",
    "NAMESERVER",
    "PLATFORM_ADDRESSES",
    "SETUP_NET_SCRIPT",
    "SetupNetwork",
    "host_addresses",
    "ipv6_enabled",
    "route_batch",
]

CIDR = "198.18.0.0/24"
"""The namespace's network (RFC 2544 benchmarking range: no real network uses it)."""
NAMESERVER = "198.18.0.3"
"""slirp4netns's DNS forwarder in `CIDR` (the namespace's `resolv.conf`)."""
BLOCKED_RANGES = (
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "168.63.129.16/32",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "224.0.0.0/4",
    "240.0.0.0/4",
)
"""IPv4 ranges the setup step may never reach: private, shared (CGNAT, with Alibaba's
metadata address), loopback, link-local (the metadata address 169.254.169.254 of AWS,
GCP, Azure and others), IETF protocol assignments (Oracle's 192.0.0.192), Azure's
platform address, benchmarking (outside the namespace's own /24, whose route is more
specific), multicast and reserved."""
BLOCKED_RANGES_V6 = (
    "::/128",
    "::ffff:0:0/96",
    "64:ff9b::/96",
    "64:ff9b:1::/48",
    "100::/64",
    "fc00::/7",
    "fe80::/10",
    "ff00::/8",
)
"""IPv6 ranges the setup step may never reach (the namespace has no IPv6 address; these
hold even if it ever gets one): unique local addresses (AWS's metadata `fd00:ec2::254`,
GCP's `fd20:ce::254`), link-local, multicast, the unspecified and discard prefixes, and
the IPv4-mapped and NAT64 prefixes that lead back to IPv4 addresses."""
PLATFORM_ADDRESSES = (
    "169.254.169.254",
    "169.254.170.2",
    "168.63.129.16",
    "100.100.100.200",
    "192.0.0.192",
    "fd00:ec2::254",
    "fd20:ce::254",
)
"""Cloud platform endpoints a setup step must never reach (each is inside a blocked range;
a test holds them to it): the metadata address (AWS, GCP, Azure IMDS, OpenStack, ...), the
ECS task metadata address, Azure's wire server, Alibaba's and Oracle's metadata, AWS's and
GCP's IPv6 metadata."""

SETUP_NET_SCRIPT = (
    "i=0\n"
    "while ! grep -q '^[^\t]*\t00000000' /proc/net/route; do\n"
    "  i=$((i+1))\n"
    '  if [ "$i" -gt 500 ]; then echo "agent-loop: the setup network did not come up" >&2;'
    " exit 125; fi\n"
    "  sleep 0.01\n"
    "done\n"
    '"$1" -batch "$2" || { echo "agent-loop: cannot restrict the setup network" >&2; exit 125; }\n'
    "shift 2\n"
    'exec "$@"\n'
)
"""Run in the new namespace as `sh -c SCRIPT sh IP BATCH ARGV...`: wait for slirp's
default route, drop the blocked ranges with `IP -batch BATCH`, then `exec ARGV`. Fixed
text; everything variable is an argument, never part of the script."""


def route_batch(own_addresses: Sequence[str], *, ipv6: bool = True) -> str:
    """`ip -batch` input: a blackhole route for each blocked range and host address (pure).

    Args:
        own_addresses: The host's own addresses (`host_addresses`), IPv4 and IPv6.
        ipv6: The kernel has IPv6 (`ipv6_enabled`); without it an IPv6 route cannot be
            added (and nothing IPv6 can be reached), so none is written.
    """
    lines = [f"route add blackhole {cidr}" for cidr in BLOCKED_RANGES]
    if ipv6:
        lines += [f"route add blackhole {cidr}" for cidr in BLOCKED_RANGES_V6]
    covered = [ipaddress.ip_network(r) for r in (*BLOCKED_RANGES, *BLOCKED_RANGES_V6)]
    for text in own_addresses:
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            continue
        if address.is_loopback or (address.version == 4 and address in ipaddress.ip_network(CIDR)):
            continue  # the namespace's own loopback and network
        if address.version == 6 and not ipv6:
            continue
        if any(address.version == net.version and address in net for net in covered):
            continue
        lines.append(f"route add blackhole {address}/{address.max_prefixlen}")
    return "".join(f"{line}\n" for line in dict.fromkeys(lines))


def ipv6_enabled() -> bool:
    """Whether this kernel has IPv6 (then the namespace has it too)."""
    return Path("/proc/net/if_inet6").exists()


def host_addresses(ip: str = "ip") -> list[str]:
    """This host's own addresses, IPv4 and IPv6 (`ip -o addr show`), read now.

    Read for every setup run, never kept: a host gains addresses while an agent process
    lives (an elastic IP, a new interface), and each must be dropped from the next run.
    """
    try:
        listing = subprocess.run(
            [ip, "-o", "addr", "show"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        listing = ""
    found: list[str] = []
    for line in listing.splitlines():
        parts = line.split()
        found.extend(
            parts[parts.index(family) + 1].split("/")[0]
            for family in ("inet", "inet6")
            if family in parts and parts.index(family) + 1 < len(parts)
        )
    return found


@dataclass(frozen=True)
class SetupNetwork:
    """The programs the setup network needs, and the command-line pieces (pure parts).

    Attributes:
        unshare: `unshare` (util-linux).
        slirp4netns: `slirp4netns`.
        ip: `ip` (iproute2), run inside the namespace.
        as_root: Whether this process is root (else a user namespace is made too).
    """

    unshare: str
    slirp4netns: str
    ip: str
    as_root: bool

    def missing(self) -> str | None:
        """Why the setup network cannot be made here, or `None`."""
        for program, package in (
            (self.slirp4netns, "slirp4netns"),
            (self.unshare, "util-linux"),
            (self.ip, "iproute2"),
        ):
            if not os.path.exists(program):
                return (
                    f"the setup step's network needs {Path(program).name} "
                    f"(apt-get install -y {package})"
                )
        return None

    def prefix(self, batch: Path) -> list[str]:
        """`unshare ... sh -c SCRIPT sh IP BATCH`: what runs before the sandbox's own argv."""
        flags = ["--net"] if self.as_root else ["--user", "--map-root-user", "--net"]
        return [
            self.unshare,
            *flags,
            "--",
            "/bin/sh",
            "-c",
            SETUP_NET_SCRIPT,
            "sh",
            self.ip,
            str(batch),
        ]

    def slirp_argv(self, pid: int, exit_fd: int) -> list[str]:
        """`slirp4netns` attached to `pid`'s network namespace."""
        argv = [
            self.slirp4netns,
            "--configure",
            "--mtu=65520",
            "--disable-host-loopback",
            f"--cidr={CIDR}",
            "--enable-sandbox",
            "--enable-seccomp",
            f"--exit-fd={exit_fd}",
        ]
        if not self.as_root:
            argv.append(f"--userns-path=/proc/{pid}/ns/user")
        return [*argv, str(pid), "tap0"]

    def attach(self) -> tuple[Callable[[int], Awaitable[None]], Callable[[], Awaitable[None]]]:
        """`(on_start, stop)`: start slirp4netns for a started process, and stop it.

        `on_start(pid)` waits (briefly) until `pid` is in a network namespace of its own,
        so slirp4netns can never attach to the host's, then starts it. `stop()` closes
        the exit pipe, which makes slirp4netns quit, and reaps it.
        """
        state: dict[str, object] = {}

        async def on_start(pid: int) -> None:
            own = os.readlink("/proc/self/ns/net")
            for _ in range(500):
                try:
                    if os.readlink(f"/proc/{pid}/ns/net") != own:
                        break
                except OSError:
                    return  # it already ended
                await asyncio.sleep(0.005)
            else:
                return  # never left the host's namespace: the script times out by itself
            read_end, write_end = os.pipe()
            state["write"] = write_end
            try:
                state["proc"] = await asyncio.create_subprocess_exec(
                    *self.slirp_argv(pid, read_end),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.DEVNULL,
                    pass_fds=(read_end,),
                    env={"PATH": "/usr/bin:/bin"},
                )
            finally:
                os.close(read_end)

        async def stop() -> None:
            write_end = state.pop("write", None)
            if isinstance(write_end, int):
                with contextlib.suppress(OSError):
                    os.close(write_end)
            proc = state.pop("proc", None)
            if isinstance(proc, asyncio.subprocess.Process):
                try:
                    await asyncio.wait_for(proc.wait(), 5)
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                    await proc.wait()

        return on_start, stop
