"""What a tick shows: a small summary dict (task output, CLI) and its Flyte report (pure).

The summary is `dict[str, str]` so it crosses the task boundary as plain JSON-able data
(no pickling). The report is HTML assembled from escaped values only: titles, errors and
trace arguments come from issues and models.
"""

from __future__ import annotations

from html import escape

from agent_loop_common.records import RunRecord

__all__ = ["report_html", "summarize"]


def summarize(record: RunRecord | None) -> dict[str, str]:
    """`{}` for an idle tick; else run id, outcome, target, links, error and request count."""
    if record is None:
        return {}
    target = record.target
    out = {
        "run_id": record.run_id,
        "outcome": record.outcome.value,
        "target": f"{target.kind.value}#{target.number}" if target.number else target.kind.value,
        "github_requests": str(record.github.requests),
    }
    if record.links.pr_url:
        out["pr_url"] = record.links.pr_url
    if record.links.issue_urls:
        out["issue_urls"] = " ".join(record.links.issue_urls)
    if record.error:
        out["error"] = record.error
    return out


def report_html(record: RunRecord | None) -> str:
    """The tick's Flyte report: outcome, target, links, tries, stage times and the trace."""
    if record is None:
        return "<h2>Builder tick</h2><p>Idle: no eligible issue.</p>"
    t = record.target
    parts = [
        "<h2>Builder tick</h2>",
        f"<p>Run <code>{escape(record.run_id)}</code> on {escape(t.kind.value)} "
        f"#{t.number or ''} {escape(t.title)}: <b>{escape(record.outcome.value)}</b></p>",
    ]
    if record.error:
        parts.append(f"<p>{escape(record.error)}</p>")
    links = [record.links.pr_url, *record.links.issue_urls]
    if any(links):
        parts.append(
            "<ul>"
            + "".join(f'<li><a href="{escape(u)}">{escape(u)}</a></li>' for u in links if u)
            + "</ul>"
        )
    if record.attempts:
        rows = "".join(
            f"<tr><td>{a.number}</td><td>{'yes' if a.verified else 'no'}</td>"
            f"<td>{escape(', '.join(a.staged_paths))}</td><td>{escape(a.notes[:500])}</td></tr>"
            for a in record.attempts
        )
        parts.append(
            "<h3>Tries</h3><table><tr><th>#</th><th>verified</th><th>staged</th>"
            f"<th>notes</th></tr>{rows}</table>"
        )
    stages = ", ".join(f"{escape(k)} {v:.2f}s" for k, v in record.stage_seconds.items())
    parts.append(
        f"<p>Stages: {stages}. Model calls {record.usage.llm_calls}, tokens "
        f"{record.usage.tokens}, GitHub requests {record.github.requests}.</p>"
    )
    if record.trace:
        steps = "".join(
            f"<li>{'✅' if s.ok else '❌'} <code>{escape(s.tool)}</code> {escape(s.args)} "
            f"({s.ms} ms){' ' + escape(s.error) if s.error else ''}</li>"
            for s in record.trace
        )
        parts.append(f"<h3>Trace</h3><ol>{steps}</ol>")
    return "\n".join(parts)
