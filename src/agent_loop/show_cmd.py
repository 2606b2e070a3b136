"""`agent-loop show RUN_ID`: one finished run from memory, in full.

```text
agent-loop show RUN_ID [--home DIR] [--json] [--diff-lines N]   a local run
agent-loop show RUN_ID --remote [--config FILE]                  a deployment's run
```

`agent-loop run` prints a run as it happens; `status` lists runs in a line each. `show`
prints everything the run's record holds, for the run whose pull request you are
about to review or whose failure you want to understand: what it worked on and how it
ended, its tries with each verdict and test line, the test evidence (command, sandbox,
base and after, fail-to-pass, tampering flags), the trace of every model turn and tool
call, the diff it proposed against its base (committed or not), and its tokens, cost
and GitHub requests. The memory is read like `status` reads it: the local runs'
(`AGENT_LOOP_HOME`), or a deployment's (`--remote`, `AGENT_LOOP_MEMORY_ROOT`). A run id
may be shortened to any unique prefix. Titles, notes, errors, trace arguments and the
diff come from GitHub and models: every line is made terminal-safe.

Exit codes: 0 shown, 1 no such run (or the memory cannot be read), 2 bad usage.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # imported when the command runs: `agent-loop --help` stays fast
    from agent_loop_common.memory import MemoryLocation
    from agent_loop_common.records import RunRecord, Usage

__all__ = ["add_parser", "main", "render_run"]

EXIT_NOT_FOUND = 1

DIFF_LINES = 400
"""Diff lines printed by default (`--diff-lines`); the record keeps up to `DIFF_CHARS`."""


def add_parser(commands: Any) -> None:
    """Add `show RUN_ID` to the CLI's subcommands."""
    show = cast(
        argparse.ArgumentParser,
        commands.add_parser(
            "show",
            help="one finished run from memory: its trace, proposed diff, tests, tokens, cost",
            description=(
                "Print one recorded run in full: outcome, tries and verdicts, the test "
                "evidence, the trace of model turns and tool calls, the diff it proposed "
                "against its base, tokens, cost and GitHub requests. Reads the memory of "
                "local runs (AGENT_LOOP_HOME), or with --remote a deployment's "
                "(AGENT_LOOP_MEMORY_ROOT), as `agent-loop status` does."
            ),
        ),
    )
    show.add_argument("run_id", metavar="RUN_ID", help="the run's id, or a unique prefix of it")
    show.add_argument(
        "--home", type=Path, help="local state folder (default: AGENT_LOOP_HOME or .agent-loop)"
    )
    show.add_argument(
        "--remote",
        action="store_true",
        help="read a deployment's memory from its storage (AGENT_LOOP_MEMORY_ROOT) instead",
    )
    show.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="Flyte config of --remote, for the storage's credentials",
    )
    show.add_argument(
        "--diff-lines",
        type=int,
        default=DIFF_LINES,
        metavar="N",
        help=f"diff lines to print (default {DIFF_LINES}; 0: none)",
    )
    show.add_argument("--json", action="store_true", help="print the run's record as JSON")


def main(args: argparse.Namespace, location: Callable[[], MemoryLocation | int]) -> int:
    """Run `show` with the memory `location` gives (the CLI's, shared with `status`; an
    int is its exit code for bad usage)."""
    import asyncio
    import sys

    from agent_loop.status import StatusError, read_snapshot

    where = location()
    if isinstance(where, int):
        return where
    try:
        snapshot = asyncio.run(read_snapshot(where))
    except StatusError as exc:
        print(f"agent-loop show: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    wanted = cast(str, args.run_id).strip()
    found = find_run(snapshot.records, wanted)
    if isinstance(found, str):
        print(f"agent-loop show: {found}", file=sys.stderr)
        return EXIT_NOT_FOUND
    if args.json:
        print(found.model_dump_json(indent=2))
        return 0
    print(render_run(found, diff_lines=max(cast(int, args.diff_lines), 0)))
    return 0


def find_run(records: Sequence[RunRecord], wanted: str) -> RunRecord | str:
    """The record whose id is `wanted`, or the only one starting with it; else why not."""
    exact = [r for r in records if r.run_id == wanted]
    if exact:
        return exact[0]
    starting = [r for r in records if wanted and r.run_id.startswith(wanted)]
    if len(starting) == 1:
        return starting[0]
    if starting:
        ids = ", ".join(r.run_id for r in starting[:5])
        return f"{wanted!r} is the start of {len(starting)} run ids ({ids}); give more of it."
    return (
        f"no run {wanted!r} in this memory ({len(records)} run(s) recorded; "
        "`agent-loop status` lists the recent ones)."
    )


def _section(title: str, lines: Sequence[str]) -> list[str]:
    return ["", title, *lines] if lines else []


def _head(record: RunRecord) -> list[str]:
    from agent_loop._table import fmt_duration, fmt_money, fmt_time, terminal_safe

    t = record.target
    what = (
        t.kind.value
        if t.number is None
        else f"{'PR' if t.kind.value == 'pr' else 'issue'} #{t.number}"
    )
    u, gh = record.usage, record.github
    lines = [
        f"run {record.run_id} · {record.role.value} · {record.outcome.value} on {what}"
        + (f" {terminal_safe(t.title)}" if t.title else ""),
        f"  repository  {terminal_safe(record.repo) or '-'}",
        f"  finished    {fmt_time(record.finished_at)} UTC, took "
        f"{fmt_duration(record.duration_seconds)}",
        f"  model       {terminal_safe(record.model) or '-'}",
        f"  tokens      {_tokens(u)} in {u.llm_calls} model call(s)",
        f"  cost        {fmt_money(u.cost_usd)} (estimated)",
        f"  github      {gh.requests} request(s), {gh.not_modified} not modified",
    ]
    links = [u for u in (record.links.pr_url, *record.links.issue_urls) if u]
    if links:
        lines.append(f"  links       {terminal_safe(', '.join(links))}")
    if record.stage_seconds:
        stages = ", ".join(f"{k} {fmt_duration(v)}" for k, v in record.stage_seconds.items())
        lines.append(f"  stages      {stages}")
    if record.error:
        lines.append(f"  error       {terminal_safe(record.error)}")
    if record.backoff_until is not None:
        lines.append(f"  resting     until {fmt_time(record.backoff_until)} UTC")
    return lines


def _tokens(u: Usage) -> str:
    """`69,682 (69,411 in, 68% of it read from the cache; 271 out)`: the words of the run
    report, and the share `agent-loop status` shows as `(68% cached)`. A run that read
    nothing from a provider's cache keeps the short form, `960 (800 in, 160 out)`."""
    share = u.cached_share
    if not share:
        return f"{u.tokens:,} ({u.tokens_in:,} in, {u.tokens_out:,} out)"
    return f"{u.tokens:,} ({u.tokens_in:,} in, {share:.0%} of it read from the cache; {u.tokens_out:,} out)"


def _tries(record: RunRecord) -> list[str]:
    from agent_loop._table import terminal_safe

    lines: list[str] = []
    for a in record.attempts:
        verdict = "verified" if a.verified else "not verified"
        staged = ", ".join(a.staged_paths) or "nothing staged"
        lines.append(f"  {a.number}. {verdict} · {a.tokens:,} tokens · {terminal_safe(staged)}")
        if a.tests:
            lines.append(f"     tests: {terminal_safe(a.tests)}")
        if a.notes:
            lines.append(f"     notes: {terminal_safe(' '.join(a.notes.split()))}")
    return lines


def _evidence(record: RunRecord) -> list[str]:
    from agent_loop._table import terminal_safe

    t = record.tests
    if t is None:
        return []
    rows = [
        ("status", f"{t.status}: {t.summary}"),
        ("command", f"{t.command} (from {t.source})" if t.command else "(none)"),
        ("setup", t.setup),
        (
            "sandbox",
            t.backend + ("" if t.isolated or t.backend in ("", "off") else " (not isolated)"),
        ),
        ("base", t.base),
        ("after", t.after),
        ("fail to pass", ", ".join(t.fail_to_pass)),
        ("regressions", ", ".join(t.regressions)),
        ("failing", ", ".join(t.failing)),
        ("flags", "; ".join(t.tamper_flags)),
        ("inconsistent", "; ".join(t.inconsistent)),
        ("runs", str(t.runs)),
    ]
    return [f"  {label:<13} {terminal_safe(value)}" for label, value in rows if value]


def _trace(record: RunRecord) -> list[str]:
    from agent_loop._table import clip, fmt_duration, terminal_safe

    lines: list[str] = []
    width = len(str(len(record.trace)))
    for number, step in enumerate(record.trace, start=1):
        mark = "ok  " if step.ok else "FAIL"
        took = fmt_duration(step.ms / 1000)
        who = f"{step.agent:<9} " if step.agent else ""
        line = f"  {number:>{width}} {mark} {took:>6}  {who}{step.tool}  {clip(step.args, 60)}"
        if step.error:
            line += f"  ({clip(step.error, 120)})"
        lines.append(terminal_safe(line.rstrip()))
    return lines


def _diff(record: RunRecord, limit: int) -> list[str]:
    from agent_loop._table import terminal_safe

    if not record.diff:
        return []
    lines = record.diff.splitlines()
    shown = [f"  {terminal_safe(line)}" for line in lines[:limit]]
    if len(lines) > limit:
        shown.append(f"  … {len(lines) - limit} more line(s) (--diff-lines N, or --json)")
    return shown


def render_run(record: RunRecord, *, diff_lines: int = DIFF_LINES) -> str:
    """The run as `agent-loop show` prints it (see the module docstring)."""
    out = _head(record)
    out += _section(f"Tries ({len(record.attempts)})", _tries(record))
    out += _section("Tests (the evidence)", _evidence(record))
    out += _section(f"Trace ({len(record.trace)} steps)", _trace(record))
    if diff_lines:
        out += _section("Diff (proposed, against its base)", _diff(record, diff_lines))
    if record.problems:
        from agent_loop._table import terminal_safe

        problems = [f"  {terminal_safe(p)}" for p in record.problems]
        out += _section("Problems worked around", problems)
    return "\n".join(out)
