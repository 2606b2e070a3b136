"""A run's progress as it happens: events, where they go, and how they read.

```python
with use_progress(lambda event: print(event_line(event))):   # whoever watches
    ...                                    # runs emit: run.claimed, try.started,
                                           # agent.tool, tests.ran, verifier.verdict, ...
```

The runs emit (`emit`) from the places that know: `run_scoped` (claim, end), the attempt
loop (tries, proposals, verdicts), `run_agent` (every tool call of every agent), the
checks (each test run with its counts). `agent-loop run` prints them live (or as JSON
lines), the demo narrates them, and the tick's report lists them, each through
`event_line`, so all three show the same events.
"""

from agent_loop_common.progress._channel import (
    MAX_KEPT_EVENTS,
    ProgressSink,
    RunProgress,
    current_run,
    emit,
    run_progress,
    use_progress,
)
from agent_loop_common.progress._event import NOTE_CHARS, ProgressEvent, ProgressKind
from agent_loop_common.progress._lines import (
    WHO_WIDTH,
    clip,
    event_line,
    fmt_duration,
    fmt_money,
    subject_of,
)

__all__ = [
    "MAX_KEPT_EVENTS",
    "NOTE_CHARS",
    "WHO_WIDTH",
    "ProgressEvent",
    "ProgressKind",
    "ProgressSink",
    "RunProgress",
    "clip",
    "current_run",
    "emit",
    "event_line",
    "fmt_duration",
    "fmt_money",
    "run_progress",
    "subject_of",
    "use_progress",
]
