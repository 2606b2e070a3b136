"""Rendering one run record as the tick's report (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from agent_loop_common.progress import ProgressEvent, event_line
from agent_loop_common.records import RunRecord

__all__ = ["TRACE_ROWS", "progress_html", "run_report_html"]

TRACE_ROWS = 200
"""Most trace steps shown (a long run's trace stays readable; the record keeps them all)."""


def _isolation(backend: str, *, isolated: bool) -> str:
    """` (not isolated)` when the tests ran without isolation and the name does not say so."""
    if isolated or backend in ("", "off") or "not isolated" in backend:
        return ""
    return " (not isolated)"


def _tests_html(record: RunRecord) -> str:
    """The run's test evidence: command and source, backend, base and after, flags."""
    t = record.tests
    if t is None:
        return ""
    rows = [
        ("Status", f"<b>{escape(t.status)}</b>: {escape(t.summary)}"),
        ("Command", f"<code>{escape(t.command or '(none)')}</code> from {escape(t.source or '-')}"),
        ("Sandbox", escape(t.backend) + _isolation(t.backend, isolated=t.isolated)),
        ("Base", escape(t.base or "-")),
        ("After", escape(t.after or "-")),
        ("Runs", str(t.runs)),
    ]
    if t.setup:
        rows.insert(2, ("Setup", f"<code>{escape(t.setup)}</code>"))
    if t.fail_to_pass:
        rows.append(("Fail-to-pass", escape(", ".join(t.fail_to_pass))))
    if t.regressions:
        rows.append(("Regressions", escape(", ".join(t.regressions))))
    if t.tamper_flags:
        rows.append(("Tampering flags", escape("; ".join(t.tamper_flags))))
    body = "".join(f"<tr><th>{label}</th><td>{value}</td></tr>" for label, value in rows)
    return f"<h3>Tests</h3><table>{body}</table>"


def progress_html(events: Sequence[ProgressEvent]) -> str:
    """The run's progress, line for line as `agent-loop run` printed it live."""
    lines = [line for line in map(event_line, events) if line is not None]
    if not lines:
        return ""
    body = escape("\n".join(lines))
    return f"<h3>Progress</h3><pre>{body}</pre>"


def run_report_html(
    record: RunRecord | None,
    *,
    heading: str,
    idle: str,
    events: Sequence[ProgressEvent] = (),
) -> str:
    """The tick's report: outcome, target, links, figures, tests, tries, progress, trace.

    Args:
        record: The run's record; `None` for an idle tick.
        heading: The report's title, e.g. `Builder tick`.
        idle: What an idle tick's report says.
        events: The run's progress events (`Runtime.progress`), shown as the lines
            `agent-loop run` prints live.
    """
    if record is None:
        return f"<h2>{escape(heading)}</h2><p>{escape(idle)}</p>"
    t = record.target
    name = f"{t.kind.value} #{t.number}" if t.number is not None else t.kind.value
    where = f'<a href="{escape(t.url)}">{escape(name)}</a>' if t.url else escape(name)
    rows = [
        ("Outcome", f"<b>{escape(record.outcome.value)}</b>"),
        ("Target", f"{where} {escape(t.title)}"),
        ("Run", f"<code>{escape(record.run_id)}</code>"),
        ("Model", escape(record.model)),
        ("Model calls", str(record.usage.llm_calls)),
        ("Tokens", escape(_tokens(record))),
        (
            "GitHub requests",
            f"{record.github.requests} ({record.github.not_modified} not modified)",
        ),
        ("Stages", escape(", ".join(f"{k} {v:.2f}s" for k, v in record.stage_seconds.items()))),
    ]
    if record.error:
        rows.append(("Error", escape(record.error)))
    parts = [f"<h2>{escape(heading)}</h2>", "<table>"]
    parts += [f"<tr><th>{label}</th><td>{value}</td></tr>" for label, value in rows]
    parts.append("</table>")
    links = [u for u in (record.links.pr_url, *record.links.issue_urls) if u]
    if links:
        items = "".join(f'<li><a href="{escape(u)}">{escape(u)}</a></li>' for u in links)
        parts.append(f"<h3>Links</h3><ul>{items}</ul>")
    if record.tests is not None:
        parts.append(_tests_html(record))
    if record.attempts:
        tries = "".join(
            f"<tr><td>{a.number}</td><td>{'yes' if a.verified else 'no'}</td>"
            f"<td>{escape(', '.join(a.staged_paths))}</td><td>{a.tokens}</td>"
            f"<td>{escape(a.tests)}</td><td>{escape(a.notes[:500])}</td></tr>"
            for a in record.attempts
        )
        parts.append(
            "<h3>Tries</h3><table><tr><th>#</th><th>verified</th><th>staged</th>"
            f"<th>tokens</th><th>tests</th><th>notes</th></tr>{tries}</table>"
        )
    parts.append(progress_html(events))
    if record.trace:
        steps = "".join(
            f"<li>{'✅' if s.ok else '❌'} {escape(s.agent)} <code>{escape(s.tool)}</code> "
            f"{escape(s.args)} "
            f"({s.ms} ms){' ' + escape(s.error) if s.error else ''}</li>"
            for s in record.trace[:TRACE_ROWS]
        )
        more = len(record.trace) - TRACE_ROWS
        tail = f"<p>… {more} more step(s) in the run record.</p>" if more > 0 else ""
        parts.append(f"<h3>Trace</h3><ol>{steps}</ol>{tail}")
    return "\n".join(parts)


def _tokens(record: RunRecord) -> str:
    """`12,400 (11,900 in, 81% of it read from the cache; 500 out), $0.0123`."""
    u = record.usage
    share = u.cached_share
    cached = f", {share:.0%} of it read from the cache" if share else ""
    cost = f", ${u.cost_usd:.4f} estimated" if u.cost_usd else ""
    return f"{u.tokens:,} ({u.tokens_in:,} in{cached}; {u.tokens_out:,} out){cost}"
