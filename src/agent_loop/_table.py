"""Plain-text tables and small formatters for terminal output.

The CLI prints to terminals, CI logs and the README alike, so tables are plain text
(no colour codes, no box-drawing that breaks in narrow logs) and every cell is cut to a
width so one long issue title cannot push the rest of a row off screen.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

# One definition each, shared with the progress lines `agent-loop run` prints and the
# tick's report (agent_loop_common.progress: a light module, no Flyte, no pydantic).
from agent_loop_common.progress import clip, fmt_duration, fmt_money

__all__ = [
    "clip",
    "fmt_duration",
    "fmt_money",
    "fmt_rate",
    "fmt_time",
    "render_table",
    "terminal_safe",
]


def render_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    max_cell: int = 48,
    indent: str = "  ",
) -> str:
    """Render rows under headers with aligned columns; numbers are right-aligned."""
    cells = [[clip(str(v), max_cell) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, value in enumerate(row):
            widths[i] = max(widths[i], len(value))
    numeric = [
        all(_is_number(row[i]) for row in cells) and bool(cells) for i in range(len(headers))
    ]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(widths[i]) if numeric[i] else v.ljust(widths[i]) for i, v in enumerate(values)
        ]
        return (indent + "  ".join(parts)).rstrip()

    out = [line(list(headers)), line(["-" * w for w in widths])]
    out.extend(line(row) for row in cells)
    return "\n".join(out)


def _is_number(text: str) -> bool:
    stripped = text.replace(",", "").replace("$", "").replace("%", "").replace("s", "")
    try:
        float(stripped)
    except ValueError:
        return text in ("", "-")
    return True


def fmt_rate(value: float | None) -> str:
    """A rate in [0, 1] as a percentage; `-` when unknown (empty denominator)."""
    return "-" if value is None else f"{value * 100:.0f}%"


def fmt_time(moment: datetime) -> str:
    """A UTC timestamp to the second, as `2026-01-01 10:00:03`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


_ESCAPE = re.compile(
    # CSI (7-bit `ESC [` or 8-bit 0x9b): parameters, intermediates, a final byte
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    # OSC, DCS, SOS, PM, APC: a payload up to BEL or ST (or the end of the line)
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    # any other escape sequence (character sets, reset, keypad modes...)
    r"|\x1b[ -/]*[0-~]?"
)
_BLANK = re.compile("[\t\r]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """`text` with nothing a terminal would act on: escape sequences, controls, bidi marks.

    Removes ANSI escape sequences whole (CSI, and OSC/DCS/APC/PM/SOS with their payload,
    so a hyperlink's hidden target or a window title goes too), the C0 and C1 control
    characters and DEL, and bidirectional embeddings, overrides, isolates and marks.
    Tab and carriage return become spaces; newlines stay.
    """
    clean = _ESCAPE.sub("", text)
    clean = _BLANK.sub(" ", clean)
    return _BIDI.sub("", _CONTROL.sub("", clean))
