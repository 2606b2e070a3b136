"""Problems a run met in memory and worked around, collected for its record.

A corrupt document (one bad `lessons.json`, one bad per-PR mark) used to turn every
run that read it into an error, forever. Now a reader treats it as absent and reports
it here; the run's record, `agent-loop status` and the report name it; and the
document's owner sets the bad bytes aside under `quarantine/` (never deleted) before
it writes a fresh one.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar

import structlog

__all__ = ["collecting_problems", "report_problem"]

_log = structlog.get_logger(__name__)

_collected: ContextVar[list[str] | None] = ContextVar("agent_loop_memory_problems", default=None)


@contextmanager
def collecting_problems() -> Generator[list[str]]:
    """Collect the problems reported while the block runs (in this task and its awaits)."""
    found: list[str] = []
    token = _collected.set(found)
    try:
        yield found
    finally:
        _collected.reset(token)


def report_problem(text: str) -> None:
    """Log a problem that was worked around, and collect it if someone is collecting."""
    _log.warning("memory.problem", problem=text)
    found = _collected.get()
    if found is not None and text not in found:
        found.append(text)
