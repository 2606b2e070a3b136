"""Each agent's image installs its own dependency set, exported from the root `uv.lock`.

`uv export --package agent-loop-<agent> --no-emit-workspace --no-dev` pins exactly the
third-party packages the agent needs at runtime, `common`'s included (only the workspace
code itself is left out: it travels in the code bundle). `--no-dev` keeps the dev group,
and with it `agent-loop-testing` (the GitHub emulator's dulwich, starlette, uvicorn), out of
every image. The exports are committed; CI regenerates them and fails on any drift, since
an image built from a stale export runs with other versions than the tests did.
"""

from __future__ import annotations

import difflib
import pathlib
import shutil
import subprocess
import tempfile

from agent_loop._deploy_spec import Workspace

__all__ = [
    "EXPORT_FLAGS",
    "LockError",
    "export_command",
    "export_lock",
    "lock_drift",
    "write_locks",
]

EXPORT_FLAGS = (
    "--frozen",
    "--no-emit-workspace",
    "--no-hashes",
    "--no-header",
    "--no-dev",
    "--quiet",
)
"""`uv export` flags of every agent's lock (the same in CI, `lock` and the docs)."""


class LockError(RuntimeError):
    """`uv` is missing or could not export a lock."""


def export_command(ws: Workspace, agent: str, output: pathlib.Path) -> list[str]:
    uv = shutil.which("uv")
    if uv is None:
        raise LockError(
            "uv is not on PATH: it exports the agents' locks (https://docs.astral.sh/uv/)"
        )
    return [uv, "export", "--package", ws.distribution(agent), *EXPORT_FLAGS, "-o", str(output)]


def export_lock(ws: Workspace, agent: str, output: pathlib.Path) -> None:
    """Write `agent`'s exported lock to `output`, from the root lock as it is (`--frozen`)."""
    proc = subprocess.run(
        export_command(ws, agent, output), cwd=ws.root, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise LockError(f"uv export for {agent} failed: {proc.stderr.strip()}")


def lock_drift(ws: Workspace, agent: str) -> str:
    """Unified diff from the committed export to a fresh one; empty when current."""
    committed = ws.lock_path(agent)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = pathlib.Path(tmp) / committed.name
        export_lock(ws, agent, fresh)
        expected = fresh.read_text(encoding="utf-8").splitlines(keepends=True)
    actual = (
        committed.read_text(encoding="utf-8").splitlines(keepends=True)
        if committed.exists()
        else []
    )
    rel = committed.relative_to(ws.root).as_posix()
    return "".join(
        difflib.unified_diff(actual, expected, f"{rel} (committed)", f"{rel} (from uv.lock)")
    )


def write_locks(ws: Workspace, agents: tuple[str, ...] | None = None) -> list[pathlib.Path]:
    """Regenerate the committed exports (run after `uv lock`)."""
    written: list[pathlib.Path] = []
    for agent in agents or ws.agents:
        export_lock(ws, agent, ws.lock_path(agent))
        written.append(ws.lock_path(agent))
    return written
