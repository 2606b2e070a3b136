"""Inline SVG charts: no script, no external library, every label escaped.

Small on purpose: bars (stacked or side by side) and lines over a list of labels, with
a `<title>` tooltip per mark. Values of `None` (a rate with an empty denominator) are
gaps, never zeros.

Every mark also carries what it was computed from (`data-series`, `data-num`, and for
a ratio `data-den`; a gap keeps an empty `<g>` with its counts), so a card that sums or
divides a chart's series can be checked against the chart itself (`_figures`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent_loop_distiller._report._html import esc

__all__ = ["Series", "bar_chart", "line_chart"]

_W, _H = 680, 220
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 12, 12, 40


@dataclass(frozen=True, slots=True)
class Series:
    """One named row of values, one per label.

    `key` names the series in the marks' data (default: `name`); `num` and `den` are
    the counts a ratio's values were computed from (`den` `None`: a count, `num` the
    values themselves).
    """

    name: str
    values: Sequence[float | None]
    color: str
    key: str = ""
    num: Sequence[float] | None = None
    den: Sequence[float] | None = None

    def data(self, i: int) -> str:
        """The data attributes of the mark at label `i`."""
        key = self.key or self.name
        num = self.num[i] if self.num is not None else (self.values[i] or 0.0)
        den = f' data-den="{self.den[i]:.12g}"' if self.den is not None else ""
        return f' data-series="{esc(key)}" data-num="{num:.12g}"{den}'


def _legend(series: Sequence[Series]) -> str:
    items: list[str] = []
    x = _LEFT
    for s in series:
        items.append(
            f'<rect x="{x}" y="{_H - 14}" width="10" height="10" fill="{esc(s.color)}"/>'
            f'<text x="{x + 14}" y="{_H - 5}" font-size="11">{esc(s.name)}</text>'
        )
        x += 24 + 7 * len(s.name)
    return "".join(items)


def _frame(
    labels: Sequence[str], top: float, fmt: Callable[[float], str]
) -> tuple[str, float, float]:
    plot_w = _W - _LEFT - _RIGHT
    plot_h = _H - _TOP - _BOTTOM
    parts = [
        f'<line x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_W - _RIGHT}" y2="{_TOP + plot_h}" stroke="#8c959f"/>',
        f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_TOP + plot_h}" stroke="#8c959f"/>',
    ]
    for frac in (0.0, 0.5, 1.0):
        y = _TOP + plot_h * (1 - frac)
        parts.append(
            f'<text x="{_LEFT - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">'
            f"{esc(fmt(top * frac))}</text>"
        )
    step = max(1, len(labels) // 6)
    slot = plot_w / max(len(labels), 1)
    for i, label in enumerate(labels):
        if i % step == 0 or i == len(labels) - 1:
            x = _LEFT + slot * (i + 0.5)
            parts.append(
                f'<text x="{x:.1f}" y="{_TOP + plot_h + 14}" font-size="10" '
                f'text-anchor="middle">{esc(label)}</text>'
            )
    return "".join(parts), slot, plot_h


def _open(title: str, chart: str) -> str:
    named = f' data-chart="{esc(chart)}"' if chart else ""
    return f"<figure{named}><figcaption>{esc(title)}</figcaption>"


def _close(note: str) -> str:
    """The chart's definition, stated under it."""
    return (f'<p class="muted definition">{esc(note)}</p>' if note else "") + "</figure>"


def _figure(title: str, svg_body: str, chart: str = "", note: str = "") -> str:
    return (
        _open(title, chart)
        + f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" width="100%" '
        f'role="img" aria-label="{esc(title)}">{svg_body}</svg>' + _close(note)
    )


def _empty(title: str, chart: str = "", note: str = "") -> str:
    return _open(title, chart) + '<p class="muted">No data yet.</p>' + _close(note)


def bar_chart(
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    stacked: bool = True,
    fmt: Callable[[float], str] = lambda v: f"{v:g}",
    chart: str = "",
    note: str = "",
) -> str:
    """Bars per label: stacked (totals) or side by side; `chart` names it in the page's
    data, `note` is stated under it."""
    rows = [[v or 0.0 for v in s.values] for s in series]
    if not labels or not any(any(r) for r in rows):
        return _empty(title, chart, note)
    if stacked:
        top = max(sum(r[i] for r in rows) for i in range(len(labels)))
    else:
        top = max(max(r) for r in rows)
    top = top or 1.0
    axes, slot, plot_h = _frame(labels, top, fmt)
    marks: list[str] = []
    width = slot * 0.7 / (1 if stacked else len(series))
    for i, label in enumerate(labels):
        base = 0.0
        for k, s in enumerate(series):
            value = rows[k][i]
            if value <= 0:
                continue
            h = plot_h * value / top
            x = _LEFT + slot * i + slot * 0.15 + (0 if stacked else k * width)
            y = _TOP + plot_h - h - (plot_h * base / top if stacked else 0)
            marks.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{h:.1f}" '
                f'fill="{esc(s.color)}"{s.data(i)}>'
                f"<title>{esc(f'{label} {s.name}: {fmt(value)}')}</title></rect>"
            )
            if stacked:
                base += value
    return _figure(title, axes + "".join(marks) + _legend(series), chart, note)


def line_chart(
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    top: float = 1.0,
    fmt: Callable[[float], str] = lambda v: f"{v * 100:.0f}%",
    chart: str = "",
    note: str = "",
) -> str:
    """Lines (with dots) per series; `None` values break the line (`chart`, `note`: as
    `bar_chart`'s)."""
    if not labels or all(v is None for s in series for v in s.values):
        return _empty(title, chart, note)
    axes, slot, plot_h = _frame(labels, top, fmt)
    marks: list[str] = []
    for s in series:
        segment: list[str] = []
        for i, value in enumerate(s.values):
            if value is None:
                if len(segment) > 1:
                    marks.append(_polyline(segment, s.color))
                segment = []
                if s.num is not None:  # a gap still carries its counts (e.g. cost, no PR)
                    marks.append(f"<g{s.data(i)}></g>")
                continue
            x = _LEFT + slot * (i + 0.5)
            y = _TOP + plot_h * (1 - min(value, top) / top)
            segment.append(f"{x:.1f},{y:.1f}")
            marks.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{esc(s.color)}"{s.data(i)}>'
                f"<title>{esc(f'{labels[i]} {s.name}: {fmt(value)}')}</title></circle>"
            )
        if len(segment) > 1:
            marks.append(_polyline(segment, s.color))
    return _figure(title, axes + "".join(marks) + _legend(series), chart, note)


def _polyline(points: list[str], color: str) -> str:
    return (
        f'<polyline points="{" ".join(points)}" fill="none" stroke="{esc(color)}" '
        'stroke-width="2"/>'
    )
