"""Attack (issue 30, item 6): the setup step's network open at its edges.

The review reached two things from a setup step (which runs code of the change under
test, with a network of its own): Azure's platform address `168.63.129.16` (not in any
blocked range, reachable through the host's routes like any public address), and a host
address gained after the agent process had read its addresses once (they were cached
per process).

Each is run for real here, in a throwaway network namespace that plays the host (so this
machine's own network is never touched): a second namespace, joined by a veth pair,
holds `168.63.129.16` with a listener, reachable from the "host"; the sandbox's setup
step runs once, the "host" then gains `203.0.113.77` with a listener on every address,
and the next setup step must reach neither. Needs root, `unshare`, `nsenter`, `ip`,
`slirp4netns` and a working bubblewrap; skipped, saying why, elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_loop_common.sandbox._setup_net import (
    BLOCKED_RANGES,
    BLOCKED_RANGES_V6,
    PLATFORM_ADDRESSES,
    route_batch,
)
from agent_loop_testing import bwrap_works


def _can_play_host() -> tuple[bool, str]:
    if os.geteuid() != 0:
        return False, "making network namespaces and veth pairs needs root"
    for tool in ("unshare", "nsenter", "ip", "slirp4netns"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return False, f"{tool} is missing"
    return bwrap_works()


PLAYS_HOST, WHY = _can_play_host()

# Runs as root in a new network namespace (the "host"); prints one JSON object.
HOST = r"""
import asyncio, json, socket, subprocess, sys, time
from pathlib import Path
from agent_loop_common.sandbox import BwrapSandbox, ProtectedPaths, SandboxLimits, write_tree

work = Path(sys.argv[1])
def sh(*argv):
    subprocess.run(argv, check=True, capture_output=True)

sh("ip", "link", "set", "lo", "up")
platform = subprocess.Popen(["unshare", "--net", "sleep", "300"])
time.sleep(0.3)
inside = ["nsenter", "-t", str(platform.pid), "-n"]
sh("ip", "link", "add", "host0", "type", "veth", "peer", "name", "plat0", "netns", str(platform.pid))
sh("ip", "addr", "add", "198.51.100.1/32", "dev", "host0")
sh("ip", "link", "set", "host0", "up")
sh("ip", "route", "add", "168.63.129.16/32", "dev", "host0")
sh(*inside, "ip", "link", "set", "lo", "up")
sh(*inside, "ip", "addr", "add", "168.63.129.16/32", "dev", "plat0")
sh(*inside, "ip", "link", "set", "plat0", "up")
sh(*inside, "ip", "route", "add", "198.51.100.1/32", "dev", "plat0")
LISTEN = (
    "import socket, sys\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(8); print('up', flush=True)\n"
    "while True:\n"
    "    c, _ = s.accept(); c.close()\n"
)
servers = [
    subprocess.Popen([*inside, sys.executable, "-c", LISTEN, "168.63.129.16", "80"], stdout=subprocess.PIPE),
    subprocess.Popen([sys.executable, "-c", LISTEN, "0.0.0.0", "8080"], stdout=subprocess.PIPE),
]
for server in servers:
    server.stdout.readline()

PROBE = (
    "import socket, sys\n"
    "for host, port in (a.split(':') for a in sys.argv[1:]):\n"
    "    try:\n"
    "        socket.create_connection((host, int(port)), timeout=3).close(); print('REACHED', host)\n"
    "    except OSError as e:\n"
    "        print('blocked', host, type(e).__name__)\n"
)

def reach(*targets):
    found = {}
    for target in targets:
        host, port = target.split(":")
        try:
            socket.create_connection((host, int(port)), timeout=3).close(); found[host] = True
        except OSError:
            found[host] = False
    return found

async def setup_step(sandbox, tree, *targets):
    result = await sandbox.run(tree, ["true"], setup=["python3", "-c", PROBE, *targets])
    return (result.setup.output.text + result.setup.error) if result.setup else result.error

async def main():
    sandbox = BwrapSandbox(
        SandboxLimits(wall_seconds=60, memory_mb=1024, max_processes=32, max_file_mb=8),
        protected=ProtectedPaths.current(agent_home=work / "state"),
    )
    tree = write_tree({"README.md": "x"}, work / "repo")
    out = {"host_reaches": reach("168.63.129.16:80")}
    out["first"] = await setup_step(sandbox, tree, "168.63.129.16:80")
    sh("ip", "addr", "add", "203.0.113.77/32", "dev", "lo")  # gained after the first run
    out["host_reaches"].update(reach("203.0.113.77:8080"))
    out["second"] = await setup_step(sandbox, tree, "168.63.129.16:80", "203.0.113.77:8080")
    return out

try:
    print(json.dumps(asyncio.run(main())))
finally:
    for p in (*servers, platform):
        p.kill()
"""


@pytest.mark.skipif(not PLAYS_HOST, reason=f"cannot play a host here: {WHY}")
def test_azure_and_a_host_address_gained_later_are_unreachable_from_setup(
    tmp_path: Path,
) -> None:
    tmp_path.chmod(0o755)
    done = subprocess.run(
        ["unshare", "--net", "--", sys.executable, "-c", HOST, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    # The targets exist: the "host" itself reaches both.
    assert seen["host_reaches"] == {"168.63.129.16": True, "203.0.113.77": True}
    # Azure's platform address: refused from the first setup step on.
    assert "blocked 168.63.129.16" in seen["first"], seen["first"]
    # An address the host gained after the first setup run: refused in the next one.
    assert "blocked 203.0.113.77" in seen["second"], seen["second"]
    assert "REACHED" not in seen["first"] + seen["second"]


def test_every_cloud_platform_address_is_in_a_blocked_range() -> None:
    import ipaddress

    v4 = [ipaddress.ip_network(r) for r in BLOCKED_RANGES]
    v6 = [ipaddress.ip_network(r) for r in BLOCKED_RANGES_V6]
    for text in PLATFORM_ADDRESSES:
        address = ipaddress.ip_address(text)
        ranges = v4 if address.version == 4 else v6
        assert any(address in r for r in ranges), text
    assert {"169.254.169.254", "168.63.129.16", "fd00:ec2::254", "100.100.100.200"} <= set(
        PLATFORM_ADDRESSES
    )


def test_the_route_batch_drops_ipv6_edges_and_the_hosts_own_addresses() -> None:
    batch = route_batch(["192.0.2.2", "2001:db8::5", "fe80::1", "198.18.0.100"], ipv6=True)
    assert "route add blackhole 168.63.129.16/32\n" in batch
    assert "route add blackhole fc00::/7\n" in batch  # AWS fd00:ec2::254, GCP fd20:ce::254
    assert "route add blackhole fe80::/10\n" in batch
    assert "route add blackhole 2001:db8::5/128\n" in batch
    assert "route add blackhole 192.0.2.2/32\n" in batch
    assert "fe80::1/128" not in batch  # inside fe80::/10 already
    assert "198.18.0.100" not in batch  # the namespace's own network
    without = route_batch(["2001:db8::5"], ipv6=False)  # a kernel without IPv6
    assert "::" not in without
