"""The distiller's report: pure functions from a tick's values to HTML strings.

```python
tabs = render_tabs(data)                  # {"Metrics": html, "Lessons": ..., "Runs": ..., "Memory": ...}
for name, html in tabs.items():
    flyte.report.get_tab(name).log(html)  # inside the task
page = render_document(tabs, title="agent-loop")   # one self-contained page, CSS-only tabs
```

Every value shown is escaped (`esc`), links keep only http(s) URLs, and nothing is
loaded from elsewhere (no external CSS, fonts or scripts; charts are inline SVG).
"""

from __future__ import annotations

from collections.abc import Mapping

from agent_loop_distiller._report._data import MemoryFile, ReportData
from agent_loop_distiller._report._html import STYLE, esc, fmt_time, table
from agent_loop_distiller._report._lessons import render_lessons
from agent_loop_distiller._report._memory import FILE_CHARS, render_memory
from agent_loop_distiller._report._metrics import render_metrics
from agent_loop_distiller._report._runs import render_runs

__all__ = [
    "FILE_CHARS",
    "TAB_NAMES",
    "MemoryFile",
    "ReportData",
    "render_document",
    "render_lessons",
    "render_memory",
    "render_metrics",
    "render_runs",
    "render_summary",
    "render_tabs",
    "styled",
]

TAB_NAMES = ("Metrics", "Lessons", "Runs", "Memory")
"""The report's tabs, in order."""


def styled(body_html: str) -> str:
    """A fragment wrapped with the report's inline style (one per Flyte tab)."""
    return f'<div class="al"><style>{STYLE}</style>{body_html}</div>'


def render_tabs(data: ReportData) -> dict[str, str]:
    """The four tabs' HTML fragments, each self-styled."""
    header = (
        f'<p class="muted">{esc(data.repo)} · {esc(fmt_time(data.generated_at))}'
        f"{' · ' + esc(data.note) if data.note else ''}</p>"
    )
    bodies = {
        "Metrics": render_metrics(data),
        "Lessons": render_lessons(data),
        "Runs": render_runs(data.runs),
        "Memory": render_memory(data.memory),
    }
    return {name: styled(header + bodies[name]) for name in TAB_NAMES}


def render_summary(facts: Mapping[str, object], title: str = "Distiller tick") -> str:
    """A short key/value summary (the report's main tab)."""
    rows = [[esc(k), esc(v)] for k, v in facts.items()]
    return styled(f"<h3>{esc(title)}</h3>" + table(["", ""], rows))


def render_document(tabs: Mapping[str, str], *, title: str = "agent-loop distiller") -> str:
    """One self-contained HTML page showing `tabs` with CSS-only tab switching."""
    names = list(tabs)
    rules = "".join(
        f"#al-t{i}:checked~#al-p{i}{{display:block}}"
        f"#al-t{i}:checked+label{{border-bottom:3px solid #8250df;color:#1f2328}}"
        for i in range(len(names))
    )
    controls = "".join(
        f'<input type="radio" name="al-tab" id="al-t{i}"{" checked" if i == 0 else ""}>'
        f'<label for="al-t{i}">{esc(name)}</label>'
        for i, name in enumerate(names)
    )
    panels = "".join(
        f'<div class="al-panel" id="al-p{i}">{tabs[name]}</div>' for i, name in enumerate(names)
    )
    css = (
        "body{margin:1.5rem}.al-tabs>input{display:none}"
        ".al-tabs>label{display:inline-block;padding:6px 14px;cursor:pointer;color:#656d76;"
        "font:600 14px system-ui,sans-serif}.al-panel{display:none;padding-top:1rem}" + rules
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{STYLE}{css}</style></head>"
        f'<body class="al"><h1>{esc(title)}</h1><div class="al-tabs">{controls}{panels}</div>'
        "</body></html>"
    )
