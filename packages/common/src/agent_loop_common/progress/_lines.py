"""Progress events as lines for people: one renderer for the CLI, the demo and the report,
and the small formatters (`clip`, `fmt_duration`, `fmt_money`) every terminal table uses.

```text
claimed   issue #5 Add subtract()
try       1 of 3
builder   read_file  src/calc.py
builder   stage_file  src/calc.py
staged    2 files: src/calc.py (+4 -0), tests/test_calc.py (+4 -1)
tests     passed: 2 passed (base: 1 passed)
verifier  verified: Checked the code and the tests.
done      opened_pr · 4 model call(s) · 1,234 tokens · $0.0123 · 23.4s
```

A line is a short "who" column (the agent, `tests`, `try`, ...) and what happened.
Model turns and tool calls that finished well (`agent.step` with `ok`) have no line:
the tool's start already said what it does, and the JSON events keep their timings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from agent_loop_common.progress._event import ProgressEvent

__all__ = ["WHO_WIDTH", "clip", "event_line", "fmt_duration", "fmt_money", "subject_of"]

WHO_WIDTH = 9
"""Width of the "who" column."""

_SUBJECT_KEYS = (
    "path",
    "title",
    "key",
    "text",
    "lesson_id",
    "run_id",
    "directory",
    "reason",
    "summary",
    "pattern",
    "query",
)
"""Tool arguments a person recognises a call by, most telling first."""


def clip(text: str, width: int) -> str:
    """`text` on one line, cut to `width` characters with an ellipsis when longer."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: max(0, width - 1)] + "…"


def fmt_duration(seconds: float | None) -> str:
    """A duration as `1.2s`, `3m04s` or `2h05m`; `-` when unknown."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def fmt_money(value: float | None) -> str:
    """US dollars with cents (four decimals below one cent); `-` when unknown."""
    if value is None:
        return "-"
    return f"${value:.4f}" if 0 < value < 0.01 else f"${value:.2f}"


def subject_of(arguments: Mapping[str, Any]) -> str:
    """The argument a tool call is recognised by (a path, a title), shortened."""
    for key in _SUBJECT_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return clip(value, 70)
    extra = arguments.get("args")
    if isinstance(extra, list):
        return clip(" ".join(str(a) for a in cast("list[object]", extra)), 70)
    return ""


def _strings(value: object) -> list[str]:
    return [str(v) for v in cast("Sequence[object]", value)] if isinstance(value, list) else []


def _proposed(data: Mapping[str, Any]) -> str:
    issues = _strings(data.get("issues"))
    if issues:
        return f"{len(issues)} sub-issue(s): {clip('; '.join(issues), 90)}"
    files = _strings(data.get("files"))
    return f"{len(files)} file(s): {clip(', '.join(files), 100)}"


def _tests(data: Mapping[str, Any]) -> str:
    summary = clip(str(data.get("summary", "")), 90)
    if data.get("by") == "run_tests":
        return f"run_tests: {summary}"
    if data.get("rejects"):
        failing = ", ".join(_strings(data.get("failing"))[:3])
        why = f" ({clip(failing, 60)})" if failing else ""
        return f"REJECTED: {clip(str(data.get('summary', '')), 60)}{why}"
    return f"{data.get('status', '?')}: {summary}"


def _ended_try(data: Mapping[str, Any]) -> str | None:
    result = data.get("result")
    notes = clip(str(data.get("notes", "")), 90)
    if result == "not_submitted":
        return f"{data.get('number', '?')} ended without a submission: {notes}"
    if result == "declined":
        return f"{data.get('number', '?')} declined: {notes}"
    return None  # a verdict or a test rejection already said how it ended


def _ended_run(data: Mapping[str, Any]) -> str:
    parts = [str(data.get("outcome", "?"))]
    calls = int(data.get("llm_calls", 0) or 0)
    if calls:
        parts.append(f"{calls} model call(s)")
    parts.append(f"{int(data.get('tokens', 0) or 0):,} tokens")
    parts.append(fmt_money(float(data.get("cost_usd", 0.0) or 0.0)))
    parts.append(fmt_duration(float(data.get("seconds", 0.0) or 0.0)))
    return " · ".join(parts)


def event_line(event: ProgressEvent) -> str | None:
    """The event as one line (`who` column, then what happened), or `None`: not shown."""
    d = event.data
    who, text = "", ""
    match event.kind:
        case "run.claimed":
            title = clip(str(d.get("title", "")), 80)
            who, text = "claimed", f"{event.target or d.get('target', '')} {title}".rstrip()
        case "try.started":
            who, text = "try", f"{d.get('number', '?')} of {d.get('tries', '?')}"
        case "agent.tool":
            subject = str(d.get("subject", ""))
            who, text = str(d.get("agent", "")), f"{d.get('tool', '?')}  {subject}".rstrip()
        case "agent.step":
            if d.get("ok", True):
                return None
            what = "model call failed" if d.get("tool") == "llm" else f"{d.get('tool')} failed"
            who, text = str(d.get("agent", "")), f"{what}: {clip(str(d.get('error', '')), 90)}"
        case "change.proposed":
            who, text = "staged", _proposed(d)
        case "tests.ran":
            who, text = "tests", _tests(d)
        case "verifier.verdict":
            mark = "verified" if d.get("verified") else "REJECTED"
            who, text = "verifier", f"{mark}: {clip(str(d.get('notes', '')), 90)}"
        case "try.ended":
            ended = _ended_try(d)
            if ended is None:
                return None
            who, text = "try", ended
        case "run.ended":
            who, text = "done", _ended_run(d)
    return f"{who:<{WHO_WIDTH}} {text}".rstrip()
