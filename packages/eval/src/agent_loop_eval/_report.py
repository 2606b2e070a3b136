"""A run's report for a person: its figures, then every instance with its diff (pure).

The diffs were written by a model and the reasons quote the model, the verifier and the
tests, so every value is HTML-escaped before it reaches the page; the page loads nothing
(no script, no style sheet, no image) and opens from disk or as the eval task's Flyte
report.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from agent_loop_eval._results import InstanceResult, partial_line, summarize_results

__all__ = ["report_html"]

_STYLE = (
    "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top}"
    "pre{white-space:pre-wrap;max-width:100em}.yes{color:#070}.no{color:#a00}"
)


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def report_html(
    results: Sequence[InstanceResult],
    *,
    title: str,
    model: str,
    lessons: str,
    unfinished: Sequence[str] | None = None,
) -> str:
    """The run's page: resolved rate with its 95% Wilson interval, tokens, cost per
    resolved instance, and a row per instance (outcome, failing tests, figures, diff).
    `lessons` "" (scored predictions, `eval score`) leaves the lessons out; results with a
    gold check (`eval score --gold`) add how many instances are broken, and why. An
    interrupted run (`unfinished`: the instances it did not finish) says so first, and
    names them: its figures are of the finished ones only."""
    s = summarize_results(results)
    figures: list[tuple[str, str]] = []
    if unfinished is not None:
        shown = ", ".join(escape(i) for i in unfinished[:20])
        more = f" and {len(unfinished) - 20} more" if len(unfinished) > 20 else ""
        line = partial_line(len(results), len(results) + len(unfinished))
        figures.append(
            (
                "<span class='no'>Partial</span>",
                f"<b class='no'>{escape(line)}</b>; the figures below are of the finished "
                f"instances only. Not run: {shown}{more}",
            )
        )
    figures += [
        ("Model", escape(model)),
        *([("Lessons", escape(lessons))] if lessons else []),
        ("Instances", str(s.instances)),
        (
            "Resolved",
            f"{s.resolved} of {s.instances}: <b>{s.rate:.1%}</b> "
            f"(95% Wilson interval {s.low:.1%} to {s.high:.1%})",
        ),
        ("Tokens", f"{s.tokens_in:,} in, {s.tokens_out:,} out"),
        ("Cost", f"{_money(s.cost_usd)} in all, {_money(s.cost_per_resolved)} per resolved"),
        ("Errors", str(s.errors)),
    ]
    if s.tampered:
        figures.append(
            (
                "Tampered",
                f"{s.tampered}: the change's code reaches into the test runner, so its "
                "results cannot be trusted (never resolved)",
            )
        )
    checked = [r for r in results if r.gold_check is not None]
    if checked:
        broken = sum(not r.gold_check.valid for r in checked if r.gold_check is not None)
        figures.append(
            (
                "Gold check",
                f"{len(checked) - broken} valid, <b>{broken} broken</b> (the gold patch must "
                "resolve an instance, no change must fail its FAIL_TO_PASS tests)",
            )
        )
    head = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in figures)
    rows = "".join(_row(r) for r in results)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1><table>{head}</table>"
        "<h2>Instances</h2><table><tr><th>Instance</th><th>Resolved</th><th>Outcome</th>"
        "<th>Failing tests</th><th>Tries</th><th>Tokens in / out</th><th>Cost</th>"
        f"<th>Seconds</th><th>Change</th></tr>{rows}</table></body></html>"
    )


def _row(r: InstanceResult) -> str:
    mark = "<span class='yes'>yes</span>" if r.resolved else "<span class='no'>no</span>"
    why = (r.error or r.reason).strip()
    outcome = escape(r.outcome)
    if why:
        # The reason's first line in the table; the rest (a verifier's notes, the tests'
        # output) folded below it, its line breaks kept.
        first, _, rest = why.partition("\n")
        outcome += f"<br><small>{escape(first[:300])}</small>"
        if rest.strip() or len(first) > 300:
            outcome += (
                f"<details><summary>why, in full</summary><pre>{escape(why[:5_000])}</pre>"
                "</details>"
            )
    if r.gold_check is not None and not r.gold_check.valid:
        found = "".join(f"<li>{escape(p[:500])}</li>" for p in r.gold_check.problems)
        outcome += f"<br><b class='no'>broken instance</b><ul>{found}</ul>"
    if r.tampered:
        found = "".join(f"<li>{escape(t[:500])}</li>" for t in r.tampered[:20])
        outcome += (
            f"<details><summary>Tampered ({len(r.tampered)})</summary><ul>{found}</ul></details>"
        )
    failing = "<br>".join(escape(t) for t in r.failing_tests[:50]) or "-"
    if len(r.failing_tests) > 50:
        failing += f"<br>... {len(r.failing_tests) - 50} more"
    diff = (
        f"<details><summary>diff ({r.diff.count(chr(10))} lines)</summary>"
        f"<pre>{escape(r.diff)}</pre></details>"
        if r.diff
        else "-"
    )
    cells = [
        escape(r.instance_id),
        mark,
        outcome,
        failing,
        str(r.tries),
        f"{r.tokens_in:,} / {r.tokens_out:,}",
        _money(r.cost_usd),
        f"{r.seconds:.1f}",
        diff,
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"
