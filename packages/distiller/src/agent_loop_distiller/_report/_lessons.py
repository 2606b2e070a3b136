"""The Lessons tab: each lesson with its provenance, and what this tick changed."""

from __future__ import annotations

from agent_loop_distiller._report._data import ReportData
from agent_loop_distiller._report._html import esc, fmt_int, fmt_time, link, section, table
from agent_loop_distiller._report._ledger import render_ledger
from agent_loop_distiller._upkeep import hits_of, rank_lessons

__all__ = ["known_urls", "render_lessons"]


def known_urls(data: ReportData) -> dict[str, str]:
    """`issue-12` / `pr-15` -> URL, from the grades and records at hand."""
    urls: dict[str, str] = {}
    for grade in data.grades:
        if grade.target.url:
            urls[grade.target.ref] = grade.target.url
    for record in data.runs:
        if record.target.url:
            urls.setdefault(record.target.ref, record.target.url)
    return urls


def _ref(ref: str, urls: dict[str, str]) -> str:
    kind, _, number = ref.partition("-")
    text = f"{'PR' if kind == 'pr' else kind} #{number}" if number else ref
    return link(urls.get(ref, ""), text)


def render_lessons(data: ReportData) -> str:
    """The Lessons tab's HTML."""
    urls = known_urls(data)
    rows = [
        [
            f"<code>{esc(lesson.id)}</code>",
            esc(lesson.text),
            esc(", ".join(r.value for r in lesson.roles) or "all"),
            fmt_int(hits_of(lesson)),
            esc(fmt_time(lesson.last_seen_at or lesson.updated_at)),
            ", ".join(_ref(r, urls) for r in lesson.source_refs) or "–",
            ", ".join(f"<code>{esc(run)}</code>" for run in lesson.source_run_ids) or "–",
            esc(fmt_time(lesson.created_at)),
        ]
        for lesson in rank_lessons(data.book.lessons)
    ]
    headers = ["Id", "Lesson", "For", "Hits", "Last seen", "Issues/PRs", "Source runs", "Created"]
    body = (
        table(headers, rows, numeric=[3])
        if rows
        else '<p class="muted">No lessons yet: the distiller adds them as runs are graded.</p>'
    )
    edits = [[esc(e.op), f"<code>{esc(e.lesson_id)}</code>", esc(e.detail)] for e in data.edits]
    out = section(f"Lessons ({len(rows)})", body)
    out += render_ledger(data, urls)
    out += section(
        "Edits this tick",
        table(["Edit", "Lesson", "Detail"], edits) if edits else '<p class="muted">None.</p>',
    )
    if data.expired:
        expired = [
            [
                f"<code>{esc(x.id)}</code>",
                esc(x.text),
                esc(fmt_time(x.last_seen_at or x.updated_at)),
            ]
            for x in data.expired
        ]
        out += section("Expired as stale", table(["Lesson", "Text", "Last seen"], expired))
    return out
