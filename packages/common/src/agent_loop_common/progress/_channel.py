"""Where progress events go: the run they belong to, and whoever watches this process.

```python
with use_progress(printer):                   # the CLI, the demo: a process-wide sink
    run_agent_once("builder", settings)       # Flyte local mode: the task runs here
...
with run_progress(run):                       # run_scoped: events carry the run, and
    emit("try.started", number=1, tries=3)    # are kept on it for the tick's report
```

Sinks are process-wide, not context variables, because a tick in Flyte local mode may
run its task on another thread or event loop than the command that fired it: whatever
the command installed still sees its events. The run an event belongs to is a context
variable (set by `run_scoped`), so the concurrent runs of one tick (several slots)
each tag their own events. A sink that fails (a closed terminal) never fails the run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from agent_loop_common.progress._event import ProgressEvent, ProgressKind

__all__ = [
    "MAX_KEPT_EVENTS",
    "ProgressSink",
    "RunProgress",
    "current_run",
    "emit",
    "run_progress",
    "use_progress",
]

ProgressSink = Callable[[ProgressEvent], None]
"""Called with each event as it happens (on the run's thread: keep it quick)."""

MAX_KEPT_EVENTS = 2_000
"""Events a run keeps for its report; later ones still reach the sinks."""

_sinks: list[ProgressSink] = []
_sinks_lock = threading.Lock()


@dataclass
class RunProgress:
    """The run events are tagged with, and the events it kept (for its report)."""

    role: str = ""
    run_id: str = ""
    target: str = ""
    """Set when the run claims its target (`issue #5`)."""
    started: float = field(default_factory=time.monotonic)
    """When the run started (monotonic seconds): the duration `run.ended` reports."""
    events: list[ProgressEvent] = field(default_factory=list[ProgressEvent])
    """The run's events so far, oldest first, at most `MAX_KEPT_EVENTS`."""
    dropped: int = 0
    """Events not kept because `events` was full."""

    @property
    def seconds(self) -> float:
        """Wall time since the run started."""
        return time.monotonic() - self.started


_current: ContextVar[RunProgress | None] = ContextVar("agent_loop_progress_run", default=None)


@contextmanager
def use_progress(sink: ProgressSink) -> Generator[ProgressSink]:
    """Send every event of this process to `sink` while the block runs."""
    with _sinks_lock:
        _sinks.append(sink)
    try:
        yield sink
    finally:
        with _sinks_lock:
            _sinks.remove(sink)


@contextmanager
def run_progress(run: RunProgress) -> Generator[RunProgress]:
    """Tag the events emitted in this context (and the tasks it starts) with `run`."""
    token = _current.set(run)
    try:
        yield run
    finally:
        _current.reset(token)


def current_run() -> RunProgress | None:
    """The run of this context, if `run_progress` set one."""
    return _current.get()


def emit(kind: ProgressKind, **data: Any) -> ProgressEvent:
    """Record that `kind` happened now: keep it on the current run, hand it to the sinks."""
    run = _current.get()
    if run is None:
        event = ProgressEvent(kind, data=data)
    else:
        event = ProgressEvent(kind, run.role, run.run_id, run.target, data=data)
        if len(run.events) < MAX_KEPT_EVENTS:
            run.events.append(event)
        else:
            run.dropped += 1
    with _sinks_lock:
        sinks = list(_sinks)
    for sink in sinks:
        try:
            sink(event)
        except Exception:  # noqa: S112 (a watcher's failure is never the run's)
            continue
    return event
