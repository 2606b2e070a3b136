"""HTML building blocks: everything shown is escaped here, in one place.

Issue titles, lesson texts, verifier notes and trace arguments come from people and
models. Every value goes through `esc` (text and attribute contexts alike, quotes
included), and links only keep `http(s)` URLs, so a hostile title can neither inject
markup nor a `javascript:` link. No external CSS, fonts or scripts: the report is one
self-contained document.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from urllib.parse import urlsplit

__all__ = [
    "STYLE",
    "details",
    "esc",
    "fmt_cost",
    "fmt_int",
    "fmt_rate",
    "fmt_seconds",
    "fmt_time",
    "link",
    "section",
    "table",
]

STYLE = """
.al{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;color:#1f2328}
.al table{border-collapse:collapse;margin:.5rem 0 1rem;width:100%}
.al th,.al td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
.al th{background:#f6f8fa}
.al td.n{text-align:right;font-variant-numeric:tabular-nums}
.al pre{background:#f6f8fa;padding:8px;overflow:auto;max-height:28rem;white-space:pre-wrap}
.al .ok{color:#1a7f37}.al .bad{color:#cf222e}.al .muted{color:#656d76}
.al figure{margin:0 0 1.25rem}.al figcaption{font-weight:600;margin-bottom:.25rem}
.al .cards{display:flex;flex-wrap:wrap;gap:.5rem;margin-bottom:1rem}
.al .card{border:1px solid #d0d7de;border-radius:6px;padding:.4rem .8rem;min-width:9rem}
.al .card b{display:block;font-size:1.3rem}
"""
"""The report's only stylesheet (inline)."""


def esc(value: object) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape(str(value), quote=True)


def link(url: str, text: str) -> str:
    """An `<a>` for an http(s) URL; anything else is shown as plain escaped text."""
    scheme = urlsplit(url.strip()).scheme.lower() if url else ""
    if scheme not in ("http", "https"):
        return esc(text)
    return f'<a href="{esc(url.strip())}" rel="noopener noreferrer">{esc(text)}</a>'


def table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Iterable[int] = ()
) -> str:
    """A table; `rows` hold already-rendered cell HTML, `numeric` columns align right."""
    right = set(numeric)
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{cell}</td>' if i in right else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def details(summary: str, body_html: str) -> str:
    """A collapsible block (`summary` is text, escaped here)."""
    return f"<details><summary>{esc(summary)}</summary>{body_html}</details>"


def section(title: str, body_html: str) -> str:
    """A headed section."""
    return f"<h3>{esc(title)}</h3>{body_html}"


def fmt_int(n: int) -> str:
    """`12,345`."""
    return f"{n:,}"


def fmt_cost(usd: float | None) -> str:
    """`$0.1234`, or an en dash when unknown."""
    return "–" if usd is None else f"${usd:,.4f}"


def fmt_rate(rate: float | None) -> str:
    """`87.5%`, or an en dash when the denominator was 0."""
    return "–" if rate is None else f"{rate * 100:.1f}%"


def fmt_seconds(seconds: float | None) -> str:
    """`2.5 s`, `3.1 min`, `1.2 h`."""
    if seconds is None:
        return "–"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7_200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3_600:.1f} h"


def fmt_time(moment: datetime | None) -> str:
    """`2026-03-01 12:00 UTC`."""
    return "–" if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
