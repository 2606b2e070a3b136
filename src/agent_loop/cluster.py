"""Is the Flyte cluster there? Asked before a deploy or a trigger change, and said plainly.

A deploy to a devbox that was not running validated for half a minute and then said
"InitializationError: Service is unavailable." (no endpoint, no hint that the devbox is
started with `flyte start devbox`), and `infra/flyte/trigger` showed the flyte CLI's
boxed error with its spinner. One TCP connect to the config's endpoint answers first:

    agent-loop deploy builder --config infra/flyte/devbox.yaml
    agent-loop deploy builder: the Flyte cluster at dns:///localhost:30080 (config
    .../infra/flyte/devbox.yaml) does not answer (connection refused); nothing was
    deployed. A devbox is started with `uv run flyte start devbox` (it needs Docker);
    another cluster: check admin.endpoint in that config, and the network or VPN to it.

`python -m agent_loop.cluster check|explain` is the same for the shell scripts under
`infra/flyte/`: `check WHAT [--config FILE]` exits 1 with that message when the cluster
does not answer, `explain WHAT` turns a flyte CLI error read on stdin into one line.
"""

from __future__ import annotations

import re
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlparse

__all__ = ["cluster_problem", "endpoint_address", "flyte_error_text", "main"]

_CONNECT_SECONDS = 3.0
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_BOX = re.compile(r"[╭╮╰╯│─]")
_SPINNER = re.compile(r"[⠀-⣿]")


def endpoint_address(endpoint: str) -> tuple[str, int] | None:
    """`(host, port)` of a Flyte `admin.endpoint` (`dns:///localhost:30080`,
    `https://x.example.com`, `x.example.com:443`); `None` when it names none."""
    text = endpoint.strip()
    if text.startswith("dns:///"):
        text = "//" + text.removeprefix("dns:///")
    elif "://" not in text:
        text = "//" + text
    parsed = urlparse(text)
    if not parsed.hostname:
        return None
    try:
        port = parsed.port
    except ValueError:
        return None
    return parsed.hostname, port or (80 if parsed.scheme == "http" else 443)


def cluster_problem(endpoint: str, config: Path, *, purpose: str) -> str | None:
    """Why the cluster cannot be reached (one line naming it and what to do), or `None`
    when its endpoint accepts a connection."""
    address = endpoint_address(endpoint)
    if address is None:
        return None  # flyte will say what it makes of it
    try:
        with socket.create_connection(address, timeout=_CONNECT_SECONDS):
            return None
    except OSError as exc:
        reason = _reason(exc)
    return unavailable(endpoint, config, purpose=purpose, reason=reason)


def unavailable(endpoint: str, config: Path | str, *, purpose: str, reason: str) -> str:
    """The message for a cluster that does not answer."""
    devbox = endpoint_address(endpoint) in (("localhost", 30080), ("127.0.0.1", 30080))
    start = (
        "start the devbox first: `uv run flyte start devbox` (it needs Docker and network; "
        "docs/deploy.md)"
        if devbox
        else "check admin.endpoint in that config and the network or VPN to it; a local "
        "devbox is started with `uv run flyte start devbox`"
    )
    return (
        f"{purpose}: the Flyte cluster at {endpoint} (config {config}) does not answer "
        f"({reason}); nothing was changed. {start[0].upper()}{start[1:]}."
    )


def _reason(exc: OSError) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return f"no answer within {_CONNECT_SECONDS:.0f} s"
    if isinstance(exc, socket.gaierror):
        return "its host name does not resolve"
    return (exc.strerror or str(exc) or type(exc).__name__).lower()


def flyte_error_text(output: str) -> str:
    """A flyte CLI failure as one line: its boxed error without the box, the spinner
    and the terminal escapes (or its last line when there is no box)."""
    clean = _SPINNER.sub("", _ANSI.sub("", output))
    if "╭" in clean:
        box = clean[clean.index("╭") :]
        box = box[: box.index("╯")] if "╯" in box else box
        text = " ".join(_BOX.sub(" ", box).split())
        return text.removeprefix("Error ").strip()
    lines = [line.strip() for line in clean.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def main(argv: Sequence[str] | None = None) -> int:
    """`check WHAT [--config FILE]` or `explain WHAT` (flyte's output on stdin)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2 or args[0] not in ("check", "explain"):
        print(
            "usage: python -m agent_loop.cluster check|explain WHAT [--config FILE]",
            file=sys.stderr,
        )
        return 2
    action, purpose, rest = args[0], args[1], args[2:]
    config = Path(rest[1]) if rest[:1] == ["--config"] and len(rest) == 2 else None
    from agent_loop_common.runtime import remote_flyte_config
    from agent_loop_common.settings import ConfigError

    try:
        remote = remote_flyte_config(config, purpose=purpose)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if action == "check":
        problem = cluster_problem(remote.endpoint, remote.path, purpose=purpose)
        if problem is not None:
            print(problem, file=sys.stderr)
            return 1
        return 0
    said = flyte_error_text(sys.stdin.read())
    if "unavailable" in said.lower() or "connection refused" in said.lower():
        print(
            unavailable(remote.endpoint, remote.path, purpose=purpose, reason=said), file=sys.stderr
        )
    else:
        print(f"{purpose}: flyte failed on {remote.describe()}: {said}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
