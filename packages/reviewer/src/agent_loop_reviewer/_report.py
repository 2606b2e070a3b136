"""What a tick hands back: a small JSON-able summary and a short HTML report (pure).

Titles, errors, notes and trace arguments come from GitHub or a model, so every value
is HTML-escaped before it reaches the Flyte report.
"""

from __future__ import annotations

from html import escape

from agent_loop_common.records import RunRecord

__all__ = ["report_html", "summary"]

_TRACE_ROWS = 60


def summary(record: RunRecord | None) -> dict[str, str]:
    """The task's output: `{}` for an idle tick; else run id, outcome, target, links, error,
    tries, model calls and GitHub requests (strings only: a flat, portable task output,
    the same shape as the builder's)."""
    if record is None:
        return {}
    t = record.target
    out = {
        "run_id": record.run_id,
        "outcome": record.outcome.value,
        "target": f"{t.kind.value}#{t.number}" if t.number is not None else t.kind.value,
        "tries": str(len(record.attempts)),
        "llm_calls": str(record.usage.llm_calls),
        "github_requests": str(record.github.requests),
    }
    if record.links.pr_url:
        out["pr_url"] = record.links.pr_url
    if record.error:
        out["error"] = record.error
    return out


def report_html(record: RunRecord | None) -> str:
    """A short HTML account of the tick for `flyte.report`."""
    if record is None:
        return "<h2>Reviewer</h2><p>No agent pull request needed a pass: nothing claimed, no model call.</p>"
    t = record.target
    link = f'<a href="{escape(t.url)}">PR #{t.number}</a>' if t.url else f"PR #{t.number}"
    rows = [
        ("Outcome", escape(record.outcome.value)),
        ("Pull request", f"{link} {escape(t.title)}"),
        ("Run", escape(record.run_id)),
        ("Model calls", str(record.usage.llm_calls)),
        ("Tokens", str(record.usage.tokens)),
        (
            "GitHub requests",
            f"{record.github.requests} ({record.github.not_modified} not modified)",
        ),
        (
            "Stages",
            escape(", ".join(f"{k} {v:.2f}s" for k, v in record.stage_seconds.items())),
        ),
    ]
    if record.error:
        rows.append(("Error", escape(record.error)))
    parts = ["<h2>Reviewer</h2>", "<table>"]
    parts += [f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in rows]
    parts.append("</table>")
    if record.attempts:
        parts.append("<h3>Tries</h3><ol>")
        parts += [
            f"<li>{'verified' if a.verified else 'rejected'}: {escape(a.notes[:500])}</li>"
            for a in record.attempts
        ]
        parts.append("</ol>")
    if record.trace:
        parts.append("<h3>Trace</h3><ol>")
        parts += [
            f"<li>{'✓' if s.ok else '✗'} {escape(s.tool)} {escape(s.args)} ({s.ms} ms)</li>"
            for s in record.trace[:_TRACE_ROWS]
        ]
        parts.append("</ol>")
    return "\n".join(parts)
