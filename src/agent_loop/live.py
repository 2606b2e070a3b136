"""What `agent-loop run` prints while a tick runs, and when it ends.

A tick's runs emit progress events (`agent_loop_common.progress`: the claim, each try,
every tool call, what was staged, each test run with its counts, the verifier's
verdict, the end). In Flyte local mode the task runs in this process, so a sink
installed here (`watching`) sees every event the moment it happens, whichever thread
the task runs on. Three ways to print them:

- `text` (the default): one line per event, the lines the demo prints, then the
  tick's summary and a last line with its duration, tokens and cost;
- `quiet` (`--quiet`): nothing while it runs, one line at the end;
- `json` (`--json`): one JSON object per event as it happens (structlog's JSON
  renderer: `event`, `timestamp`, `role`, `run_id`, `target` and the event's fields),
  then the tick's summary (`TickSummary`, `"event": "tick.summary"`) as the last line.

A remote tick (`--remote`) runs on the cluster: its events stay there, in its Flyte
report; here only its summary is printed when it ends. Every line is made
terminal-safe: titles, tool arguments and notes come from GitHub and models.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Literal, TextIO

if TYPE_CHECKING:
    from agent_loop_common.progress import ProgressEvent
    from agent_loop_common.runtime import TickSummary

__all__ = [
    "LiveMode",
    "LivePrinter",
    "ended_on",
    "one_line",
    "print_end",
    "totals_line",
    "watching",
]

LiveMode = Literal["text", "quiet", "json"]
"""How a tick is printed: line by line, one line at the end, or JSON lines."""

INDENT = "  "
"""Progress lines sit under the command's header, indented like the summary's fields."""


class LivePrinter:
    """A progress sink that prints each event as it happens (see the module docstring).

    Args:
        out: Where to print (stdout).
        mode: `text` or `json` (`quiet` prints nothing while the tick runs).
    """

    def __init__(self, out: TextIO, mode: LiveMode) -> None:
        self.out = out
        self.mode = mode
        self.printed = 0
        """Lines printed so far."""
        self._lock = threading.Lock()
        self._runs: list[str] = []

    def __call__(self, event: ProgressEvent) -> None:
        line = self._render(event)
        if line is None:
            return
        with self._lock:
            print(line, file=self.out, flush=True)
            self.printed += 1

    def _render(self, event: ProgressEvent) -> str | None:
        if self.mode == "quiet":
            return None
        if self.mode == "json":
            import structlog

            rendered = structlog.processors.JSONRenderer()(None, "", event.as_dict())
            return rendered if isinstance(rendered, str) else rendered.decode()
        if event.kind == "run.ended":  # the summary's last line says it (see `print_end`)
            return None
        from agent_loop._table import terminal_safe
        from agent_loop_common.progress import event_line

        line = event_line(event)
        if line is None:
            return None
        if event.run_id and event.run_id not in self._runs:
            self._runs.append(event.run_id)
        # Several runs of one tick (several slots) print side by side: name each line's.
        whose = f"[{event.target or event.run_id}] " if len(self._runs) > 1 else ""
        return terminal_safe(f"{INDENT}{whose}{line}")


@contextmanager
def watching(mode: LiveMode, *, remote: bool, out: TextIO | None = None) -> Generator[None]:
    """Print the events of the ticks this process runs while the block runs.

    A remote tick's events are on the cluster (its Flyte report): say so, once, on
    stderr, unless the output is one line or JSON.
    """
    if remote:
        if mode == "text":
            print(
                "agent-loop: the tick runs on the cluster; its progress (tool calls, tests, "
                "the verdict) is in its Flyte report in the Flyte UI. Here: its summary "
                "when it ends.",
                file=sys.stderr,
                flush=True,
            )
        yield
        return
    from agent_loop_common.progress import use_progress

    with use_progress(LivePrinter(out or sys.stdout, mode)):
        yield


def totals_line(summary: TickSummary, seconds: float) -> str:
    """`took 23.4s · 1,234 tokens (900 cached) · $0.0123 (4 model calls)`: the tick's
    cost in one line (the cached ones: input read from the provider's prompt cache)."""
    from agent_loop_common.progress import fmt_duration, fmt_money

    calls = f" ({summary.llm_calls} model call{'s' if summary.llm_calls != 1 else ''})"
    cached = ""
    if summary.tokens_cache_read:
        cached = f" ({summary.tokens_cache_read:,} cached)"
    return (
        f"took {fmt_duration(seconds)} · {summary.tokens:,} tokens{cached} · "
        f"{fmt_money(summary.cost_usd)}{calls if summary.llm_calls else ''}"
    )


def ended_on(summary: TickSummary) -> str:
    """How the run ended and on what: `opened_pr on issue #4`. A tick stopped (Ctrl-C,
    SIGTERM) before it claimed anything has no target: it says so, never `on ?`; a
    builder or reviewer that never reached one (a wrong repository, an unreachable
    model) says that, not `on repo`."""
    from agent_loop_common.records import Role

    if summary.target == "repo" and summary.preflight_failed and summary.role != Role.DISTILLER:
        # recorded against the repository only because it never reached an issue or PR
        return f"{summary.outcome} before it reached a target"
    if summary.target_label:
        return f"{summary.outcome} on {summary.target_label}"
    if summary.interrupted:
        return "interrupted before it claimed anything"
    return str(summary.outcome)


def one_line(agent: str, summary: TickSummary, seconds: float) -> str:
    """The whole tick in one line (`--quiet`): outcome, target, links, tries, cost, time."""
    from agent_loop._table import terminal_safe
    from agent_loop_common.progress import clip, fmt_duration, fmt_money

    if summary.idle or summary.paused:
        what = "paused" if summary.paused else "idle"
        note = f" ({summary.note})" if summary.note else ""
        return terminal_safe(f"{agent}: {what}{note} · {fmt_duration(seconds)}")
    made = f" -> {', '.join(summary.links)}" if summary.links else ""
    error = f" ({clip(summary.error, 120)})" if summary.error else ""
    parts = [
        f"{agent}: {ended_on(summary)}{made}{error}",
        f"{summary.tries} tr{'y' if summary.tries == 1 else 'ies'}",
        f"{summary.tokens:,} tokens",
        fmt_money(summary.cost_usd),
        fmt_duration(seconds),
    ]
    return terminal_safe(" · ".join(parts))


def print_end(
    agent: str,
    summary: TickSummary,
    mode: LiveMode,
    seconds: float,
    *,
    full: Callable[[str, TickSummary, TextIO], None],
    out: TextIO | None = None,
) -> None:
    """Print the tick's end: its summary as JSON (the last line), one line, or in full
    (`full`: the CLI's summary printer) followed by `totals_line`."""
    stream = out or sys.stdout
    if mode == "json":  # rendered as the events are: `{"event": "tick.summary", ...}`
        import json

        print(json.dumps(summary.model_dump(mode="json")), file=stream, flush=True)
    elif mode == "quiet":
        print(one_line(agent, summary, seconds), file=stream, flush=True)
    else:
        full(agent, summary, stream)
        print(f"{INDENT}{totals_line(summary, seconds)}", file=stream, flush=True)
