"""The Runs tab: one row per run, its step-by-step trace folded underneath."""

from __future__ import annotations

from agent_loop_common.records import RunRecord
from agent_loop_distiller._report._html import (
    details,
    esc,
    fmt_cost,
    fmt_int,
    fmt_seconds,
    fmt_time,
    link,
    table,
)

__all__ = ["render_runs"]

_MAX_STEPS = 200


def _target(record: RunRecord) -> str:
    t = record.target
    name = (
        "repository"
        if t.number is None
        else f"{'PR' if t.kind.value == 'pr' else 'issue'} #{t.number}"
    )
    title = f" {esc(t.title)}" if t.title else ""
    return f"{link(t.url, name)}{title}"


def _links(record: RunRecord) -> str:
    out: list[str] = []
    if record.links.pr_url:
        out.append(link(record.links.pr_url, "pull request"))
    out += [link(u, f"sub-issue {i + 1}") for i, u in enumerate(record.links.issue_urls)]
    if record.deployment.startswith(("http://", "https://")):
        out.append(link(record.deployment, "run"))
    return ", ".join(out) or "–"


def _trace(record: RunRecord) -> str:
    rows = [
        [
            str(i + 1),
            esc(step.tool),
            f"<code>{esc(step.args)}</code>",
            '<span class="ok">ok</span>' if step.ok else '<span class="bad">failed</span>',
            fmt_int(step.ms),
            esc(step.error),
        ]
        for i, step in enumerate(record.trace[:_MAX_STEPS])
    ]
    attempts = [
        [
            str(a.number),
            '<span class="ok">verified</span>'
            if a.verified
            else '<span class="bad">rejected</span>',
            esc(a.notes),
            esc(a.tests) or "–",
            fmt_int(a.tokens),
        ]
        for a in record.attempts
    ]
    body = ""
    if record.tests is not None:
        t = record.tests
        flags = f" · ⚠️ {esc('; '.join(t.tamper_flags))}" if t.tamper_flags else ""
        body += (
            f"<p>Tests: <code>{esc(t.command or '(none)')}</code> ({esc(t.source or '-')}, "
            f"{esc(t.backend)}): <b>{esc(t.status)}</b>, {esc(t.summary)}{flags}</p>"
        )
    if attempts:
        body += table(
            ["Try", "Verdict", "Verifier notes", "Tests", "Tokens"], attempts, numeric=[4]
        )
    if rows:
        body += table(["#", "Step", "Arguments", "Result", "ms", "Error"], rows, numeric=[0, 4])
        if len(record.trace) > _MAX_STEPS:
            body += f'<p class="muted">{len(record.trace) - _MAX_STEPS} more steps not shown.</p>'
    if record.error:
        body += f"<pre>{esc(record.error)}</pre>"
    if not body:
        return '<span class="muted">no steps</span>'
    return details(f"{len(record.trace)} steps, {len(record.attempts)} tries", body)


def render_runs(runs: list[RunRecord]) -> str:
    """The Runs tab's HTML (runs in the order given)."""
    if not runs:
        return '<p class="muted">No runs in this tick.</p>'
    headers = [
        "Finished", "Role", "Target", "Outcome", "Tokens", "Cost", "GitHub requests",
        "Duration", "Links", "Trace",
    ]  # fmt: skip
    rows = [
        [
            esc(fmt_time(r.finished_at)),
            esc(r.role.value),
            _target(r),
            esc(r.outcome.value),
            fmt_int(r.usage.tokens),
            esc(fmt_cost(r.usage.cost_usd)),
            f"{fmt_int(r.github.requests)} ({fmt_int(r.github.not_modified)} free)",
            esc(fmt_seconds(r.duration_seconds)),
            _links(r),
            _trace(r),
        ]
        for r in runs
    ]
    return table(headers, rows, numeric=[4, 5, 6, 7])
