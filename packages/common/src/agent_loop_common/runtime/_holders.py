"""Which process on this machine holds a claim: a note per run under `AGENT_LOOP_HOME`.

A claim marker names its run, not its process. When an operator wants a claim gone
(`agent-loop claims release`), the question is whether its run may still be working:
a process of this machine that is still alive is (stop it first, or force), one that
died without its cleanup (a second Ctrl-C, `kill -9`) is not. So a run notes its pid
beside its run id when it wins its first claim (`<home>/claims/<run id>.json`) and
removes the note once its claims are released. A run elsewhere (a cluster, another
home) leaves no note here: its claim is another process's.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import structlog

__all__ = ["LocalHolder", "drop_holder", "local_holder", "note_holder"]

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class LocalHolder:
    """The process of this machine that ran `run` (from its note)."""

    run: str
    """The run id."""
    pid: int
    """Its process id."""
    host: str
    """The machine it ran on (its host name)."""

    @property
    def here(self) -> bool:
        """Whether the note was written on this machine."""
        return self.host == socket.gethostname()

    @property
    def alive(self) -> bool:
        """Whether that process still runs (on this machine; elsewhere: unknown, so yes)."""
        if not self.here:
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # someone else's process: it exists
            return True
        return True


def _note(home: Path, run: str) -> Path:
    return home / "claims" / f"{run}.json"


def note_holder(home: Path, run: str) -> None:
    """Note that this process runs `run` (it just won a claim). Never fails the run."""
    path = _note(home, run)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        body = {"run": run, "pid": os.getpid(), "host": socket.gethostname()}
        path.write_text(json.dumps(body), encoding="utf-8")
    except OSError as exc:  # a read-only home (a cluster's container): no note, no harm
        _log.debug("claims.holder_not_noted", run=run, error=repr(exc))


def drop_holder(home: Path, run: str) -> None:
    """Remove the note of `run` (its claims are released)."""
    try:
        _note(home, run).unlink(missing_ok=True)
    except OSError as exc:
        _log.debug("claims.holder_not_dropped", run=run, error=repr(exc))


def local_holder(home: Path, run: str) -> LocalHolder | None:
    """The process that noted `run` under `home`, or `None` (no note: not a process of
    this home, or one that released its claims)."""
    try:
        data = json.loads(_note(home, run).read_text(encoding="utf-8"))
        return LocalHolder(run=str(data["run"]), pid=int(data["pid"]), host=str(data["host"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
