"""`agent-loop status`: recent runs, metrics and lessons, read from local memory.

Local runs keep their memory under `AGENT_LOOP_HOME/flyte-data` (see
`agent_loop_common.runtime.local_memory`). MemoryStore has no key listing, but a local
root is a folder, so the keys are found by listing it; everything inside a key is read
through the public memory helpers, with the records' versioning rule (a record of an
unknown major version is counted, never misread).

A deployed loop keeps its memory in the cluster's storage (`--remote`): the same
documents under `AGENT_LOOP_MEMORY_ROOT` (the storage root its tasks write to, e.g.
`s3://bucket/prefix`), at `<root>/agents/memory-store/v0/<org>/<project>/<domain>/<key>`
like a local root. There the keys are listed through Flyte's storage layer (fsspec, with
the Flyte config's credentials), and read through the same helpers, so the page and
`--json` are the same as for local runs.

Much of what the memory holds was written by others: issue titles by whoever opened the
issue, errors quoting GitHub and model output, lessons by a model. A terminal acts on
escape sequences and control characters in what it prints (clear the screen, move the
cursor over earlier lines, set the title, plant a hyperlink), and bidi overrides make
text read differently from what it is, so every such text passes `terminal_safe`
before it is printed, and the whole page once more.
"""

from __future__ import annotations

import pathlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, cast

from agent_loop._table import (
    clip,
    fmt_duration,
    fmt_money,
    fmt_rate,
    fmt_time,
    render_table,
    terminal_safe,
)
from agent_loop_common.memory import (
    DIGEST_PATH,
    AgentMemoryError,
    ContextView,
    IdleCount,
    MemoryLocation,
    collecting_problems,
    open_store,
    read_context,
    read_grades,
    read_idle_count,
)
from agent_loop_common.metrics import Metrics, compute_metrics
from agent_loop_common.records import (
    CitationStatus,
    Grade,
    Lesson,
    LessonBook,
    Outcome,
    ParsedRecord,
    Role,
    RunRecord,
    TargetKind,
    parse_record,
)

__all__ = [
    "MemorySnapshot",
    "StatusError",
    "evidence_table",
    "lesson_counts",
    "lessons_table",
    "metrics_table",
    "read_snapshot",
    "render_status",
    "runs_by_repo",
    "runs_table",
    "snapshot_json",
    "terminal_safe",
]


class StatusError(RuntimeError):
    """The memory cannot be read from here (not a local folder)."""


@dataclass(frozen=True)
class MemorySnapshot:
    """What the local memory holds, as read at one moment."""

    location: MemoryLocation
    records: list[RunRecord] = field(default_factory=list[RunRecord])
    """Every readable run record, newest first."""
    unreadable: int = 0
    """Record files that are invalid or of an unknown major version (kept, not shown)."""
    grades: list[Grade] = field(default_factory=list[Grade])
    """The distiller's grades of agent PRs."""
    lessons: LessonBook = field(default_factory=LessonBook)
    """Current lessons (the distiller's)."""
    digest: str = ""
    """The context digest the builder and reviewer read."""
    idle: list[IdleCount] = field(default_factory=list[IdleCount])
    """Idle-run counters (runs that found nothing to claim, ticks paused by the rate-limit
    reserve), newest day first."""
    problems: list[str] = field(default_factory=list[str])
    """Memory documents that could not be read (named, kept, ignored)."""
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    """When the snapshot was read (what "still resting" is measured against)."""

    @property
    def resting(self) -> list[RunRecord]:
        """The latest run of each issue or PR, where it left the target in back-off that
        has not run out yet, soonest first."""
        latest: dict[tuple[str, str, int | None], RunRecord] = {}
        for record in self.records:  # newest first
            latest.setdefault(
                (record.role.value, record.target.kind.value, record.target.number), record
            )
        found = [
            r for r in latest.values() if r.backoff_until is not None and r.backoff_until > self.now
        ]
        return sorted(found, key=lambda r: r.backoff_until or self.now)

    @property
    def runs(self) -> list[RunRecord]:
        """The records of runs that reached their target, newest first."""
        return [r for r in self.records if r.outcome is not Outcome.PREFLIGHT_FAILED]

    @property
    def preflight_failures(self) -> list[RunRecord]:
        """The records of runs that never reached their target (a wrong repository, a
        refused token, a missing issue, an unreachable model), newest first: shown
        apart, counted in no rate."""
        return [r for r in self.records if r.outcome is Outcome.PREFLIGHT_FAILED]

    @property
    def metrics(self) -> Metrics:
        """Headline metrics over every record and grade in the snapshot."""
        return compute_metrics(self.records, self.grades)

    @property
    def empty(self) -> bool:
        """Whether the memory holds nothing at all yet."""
        return not (self.records or self.unreadable or self.lessons.lessons or self.idle)


def _keys_folder(location: MemoryLocation) -> str:
    """Where the location's keys live: a local folder, or a URL of the deployment's storage."""
    if location.root is None:
        raise StatusError(
            "status needs the memory's storage root: AGENT_LOOP_HOME for local runs, "
            "AGENT_LOOP_MEMORY_ROOT for a deployment (status --remote)"
        )
    return location.remote_path(location.keys.context).rsplit("/", 1)[0]


def _suffixes(folder: str, prefix: str) -> list[str]:
    return sorted(
        name.removeprefix(prefix) for name in _children(folder) if name.startswith(prefix)
    )


async def _read_records(
    location: MemoryLocation, buckets: Sequence[str]
) -> tuple[list[RunRecord], int]:
    records: list[RunRecord] = []
    unreadable = 0
    for bucket in buckets:
        store = await open_store(location, location.keys.runs(bucket))
        for path in store.list_paths("runs"):
            parsed = parse_record(await store.read_text.aio(path))
            if isinstance(parsed, ParsedRecord):
                records.append(parsed.record)
            else:
                unreadable += 1
    records.sort(key=lambda r: r.finished_at, reverse=True)
    return records, unreadable


async def _read_idle(location: MemoryLocation, names: Sequence[str]) -> list[IdleCount]:
    out: list[IdleCount] = []
    for name in names:
        role_name, _, day_text = name.rpartition("-")
        try:
            role = Role(role_name)
            day = datetime.strptime(day_text, "%Y%m%d").replace(tzinfo=UTC).date()
        except ValueError:
            continue
        count = await read_idle_count(location, role, day)
        if count.count or count.paused:
            out.append(count)
    out.sort(key=lambda c: (c.day, c.role.value), reverse=True)
    return out


async def read_snapshot(location: MemoryLocation) -> MemorySnapshot:
    """Read every record, grade, lesson, the digest and idle counters of a local memory.

    With `AGENT_LOOP_REPOS` each repository has its own namespace under the prefix
    (`repo_prefix`); a local folder can be listed, so every namespace found there is
    read and merged (records newest first, whatever their repository).
    A document that cannot be read is named in `problems` and left out, never fatal.

    Raises:
        StatusError: The location is not a local folder.
    """
    with collecting_problems() as problems:
        parts = [
            await _read_snapshot(replace(location, prefix=prefix))
            for prefix in _namespaces(location)
        ]
    first = parts[0]
    records = sorted(
        (r for part in parts for r in part.records), key=lambda r: r.finished_at, reverse=True
    )
    idle = sorted(
        (c for part in parts for c in part.idle), key=lambda c: (c.day, c.role.value), reverse=True
    )
    return replace(
        first,
        records=records,
        unreadable=sum(part.unreadable for part in parts),
        grades=[g for part in parts for g in part.grades],
        lessons=LessonBook(lessons=[lesson for part in parts for lesson in part.lessons.lessons]),
        digest=next((part.digest for part in parts if part.digest.strip()), ""),
        idle=idle,
        problems=[*problems, *(p for part in parts for p in part.problems)],
    )


def _namespaces(location: MemoryLocation) -> list[str]:
    """The bare prefix, then every repository namespace (`repo_prefix`) in the folder."""
    folder = _keys_folder(location)
    found = re.compile(
        rf"^({re.escape(location.prefix)}-[a-z0-9-]+-[0-9a-f]{{8}})-(?:runs|idle|grades|context)"
    )
    names = {m.group(1) for p in _children(folder) if (m := found.match(p))}
    return [location.prefix, *sorted(names)]


def _children(folder: str) -> list[str]:
    """Names in `folder` (MemoryStore lists no keys): a local folder directly, a remote
    one (`s3://...`, `file://...`) through Flyte's storage layer."""
    if "://" not in folder:
        path = pathlib.Path(folder)
        return [p.name for p in path.iterdir()] if path.is_dir() else []
    import flyte.storage

    fs: Any = flyte.storage.get_underlying_filesystem(path=folder)  # pyright: ignore[reportUnknownMemberType]
    try:
        listed = cast(list[str], fs.ls(folder, detail=False))
    except FileNotFoundError:
        return []
    return sorted({str(p).rstrip("/").rsplit("/", 1)[-1] for p in listed})


async def _read_snapshot(location: MemoryLocation) -> MemorySnapshot:
    folder = _keys_folder(location)
    prefix = location.prefix
    buckets = [b for b in _suffixes(folder, f"{prefix}-runs-") if b.isdigit() and len(b) == 10]
    records, unreadable = await _read_records(location, buckets)
    grades: list[Grade] = []
    problems: list[str] = []
    for month in _suffixes(folder, f"{prefix}-grades-"):
        if month.isdigit():
            try:
                grades.extend(await read_grades(location, month))
            except AgentMemoryError as exc:
                problems.append(f"grades of {month}: {exc}")
    try:
        context = await read_context(location)
    except AgentMemoryError as exc:
        problems.append(f"lessons and digest: {exc}")
        context = ContextView(digest="", lessons=LessonBook())
    idle = await _read_idle(location, _suffixes(folder, f"{prefix}-idle-"))
    return MemorySnapshot(
        location=location,
        records=records,
        unreadable=unreadable,
        grades=grades,
        lessons=context.lessons,
        digest=context.digest,
        idle=idle,
        problems=problems,
    )


def _target(record: RunRecord) -> str:
    t = record.target
    if t.number is None:
        label = t.kind.value
    else:
        label = f"{'PR' if t.kind is TargetKind.PR else 'issue'} #{t.number}"
    return f"{label} {terminal_safe(t.title)}".strip()


def _tries(record: RunRecord) -> str:
    return "".join("✓" if a.verified else "✗" for a in record.attempts) or "-"


def _link(record: RunRecord) -> str:
    if record.links.pr_url:
        return terminal_safe(record.links.pr_url)
    if record.links.issue_urls:
        return f"{len(record.links.issue_urls)} issue(s)"
    return clip(terminal_safe(record.error), 40) if record.error else ""


def runs_by_repo(records: Sequence[RunRecord], limit: int = 15) -> str:
    """The most recent runs, grouped by repository when more than one appears."""
    repos = list(dict.fromkeys(r.repo for r in records))
    if len(repos) <= 1:
        return runs_table(records, limit)
    out: list[str] = []
    for repo in repos:
        mine = [r for r in records if r.repo == repo]
        out.append(
            f"  {terminal_safe(repo) or '(repository not recorded)'} ({len(mine)} run{'' if len(mine) == 1 else 's'})"
        )
        out.append(runs_table(mine, limit))
    return "\n".join(out)


def runs_table(records: Sequence[RunRecord], limit: int = 15) -> str:
    """The most recent runs, one row each."""
    rows = [
        [
            fmt_time(r.finished_at),
            r.role.value,
            clip(_target(r), 40),
            r.outcome.value,
            _tries(r),
            _tokens(r),
            str(r.github.requests),
            fmt_duration(r.duration_seconds),
            _link(r),
        ]
        for r in records[:limit]
    ]
    headers = [
        "finished (UTC)",
        "role",
        "target",
        "outcome",
        "tries",
        "tokens",
        "gh req",
        "took",
        "result",
    ]
    return render_table(headers, rows, max_cell=60)


def _tokens(record: RunRecord) -> str:
    """A run's tokens, with the share of its input read from the provider's cache."""
    share = record.usage.cached_share
    cached = f" ({share:.0%} cached)" if share else ""
    return f"{record.usage.tokens:,}{cached}"


def evidence_table(records: Sequence[RunRecord], limit: int = 15) -> str:
    """The test evidence of the recent runs that checked a change, one row each."""
    rows = [
        [
            fmt_time(r.finished_at),
            clip(_target(r), 30),
            r.tests.status,
            clip(terminal_safe(r.tests.summary), 50),
            clip(terminal_safe(f"{r.tests.command} ({r.tests.source})"), 40)
            if r.tests.command
            else "-",
            r.tests.backend,
            clip(terminal_safe("; ".join(r.tests.tamper_flags)), 40) or "-",
        ]
        for r in records[:limit]
        if r.tests is not None
    ]
    headers = ["finished (UTC)", "target", "tests", "result", "command", "sandbox", "flags"]
    return render_table(headers, rows, max_cell=60) if rows else ""


def metrics_table(metrics: Metrics) -> str:
    """Headline metrics, each with what it is computed over."""
    m = metrics
    rows = [
        [
            "runs recorded",
            str(m.runs),
            "runs that reached their target (claimed or refused it)",
        ],
        ["interrupted", str(m.interrupted), "runs stopped by the operator: in no rate"],
        [
            "preflight failures",
            str(m.preflight_failures),
            "never reached a target (not runs): in no rate",
        ],
        ["PRs opened", str(m.opened_prs), "builder runs that opened a PR"],
        ["success rate", fmt_rate(m.success_rate), "delivered / runs that did the work"],
        [
            "verified",
            fmt_rate(m.verification_rate),
            "some try passed / builder and reviewer runs with tries",
        ],
        [
            "verified first try",
            fmt_rate(m.first_try_verification_rate),
            "try 1 passed / builder and reviewer runs with tries",
        ],
        ["error rate", fmt_rate(m.error_rate), "errors / runs not interrupted"],
        ["tokens", f"{m.tokens:,}", "all roles, prompt + completion"],
        [
            "cached input",
            fmt_rate(m.cached_input_rate),
            "prompt tokens read from the provider's cache / prompt tokens",
        ],
        ["cost", fmt_money(m.cost_usd), "estimated, all roles"],
        ["cost per PR", fmt_money(m.cost_per_opened_pr), "all roles / PRs opened"],
        [
            "issue to PR",
            fmt_duration(m.mean_issue_to_pr_seconds),
            "mean, issue created -> PR opened",
        ],
        ["graded PRs", str(m.graded_prs), f"{m.open_prs} still open"],
        ["merged", fmt_rate(m.merged_rate), "merged / decided (merged + closed)"],
        [
            "merged unless excused",
            fmt_rate(m.merged_unless_excused_rate),
            "merged / decided, a maintainer's duplicate or superseded close left out",
        ],
        ["threads left open", fmt_rate(m.unresolved_threads_rate), "decided PRs"],
        ["first CI green", fmt_rate(m.first_ci_green_rate), "PRs with a CI result"],
        ["reverted in 30 days", fmt_rate(m.revert_rate), "merges decided"],
        [
            "review rounds per PR",
            "-" if m.review_rounds_per_pr is None else f"{m.review_rounds_per_pr:.1f}",
            "graded PRs",
        ],
    ]
    return render_table(["metric", "value", "over"], rows, max_cell=60)


def lesson_counts(lessons: Sequence[Lesson]) -> str:
    """`3 proving, 1 proven; 1 stale; 1 pinned; flagged for you: 1 reword (...)`: the book
    summed up by state, and the diagnoses' actions the distiller left to people."""
    states = Counter(x.state.value for x in lessons)
    parts = [", ".join(f"{n} {s}" for s, n in sorted(states.items()))]
    broken = sum(1 for x in lessons if x.citation_status is CitationStatus.BROKEN)
    if broken:
        parts.append(f"{broken} stale (a cited path, symbol or command is gone)")
    pinned = sum(1 for x in lessons if x.pinned)
    if pinned:
        parts.append(f"{pinned} pinned")
    flagged = Counter(
        x.diagnosis.action
        for x in lessons
        if x.diagnosis is not None and x.diagnosis.action != "keep" and not x.diagnosis.done
    )
    if flagged:
        what = ", ".join(f"{n} {action}" for action, n in sorted(flagged.items()))
        parts.append(f"flagged for you: {what} (agent-loop lessons list)")
    return "; ".join(parts)


def lessons_table(lessons: Sequence[Lesson], *, width: int = 70) -> str:
    """Lessons with their audience and provenance."""
    rows = [
        [
            terminal_safe(lesson.id),
            ",".join(r.value for r in lesson.roles) or "all",
            terminal_safe(lesson.text),
            f"{len(lesson.source_run_ids)} run(s)",
        ]
        for lesson in lessons
    ]
    return render_table(["id", "for", "lesson", "learned from"], rows, max_cell=width)


def _paused_lines(snapshot: MemorySnapshot) -> list[str]:
    """Ticks the GitHub rate-limit reserve held back, per role and day, with the last reason."""
    lines: list[str] = []
    for c in (c for c in snapshot.idle if c.paused):
        until = c.paused_until.strftime("%Y-%m-%d %H:%M UTC") if c.paused_until else "?"
        state = "" if c.paused_until and c.paused_until <= snapshot.now else " (still paused)"
        lines.append(
            f"  Paused {c.role.value} ticks on {c.day.isoformat()}: {c.paused}, new work "
            f"resumes after {until}{state}; last: {terminal_safe(c.paused_note)}"
        )
    return lines


def _preflight_lines(failures: Sequence[RunRecord], limit: int) -> list[str]:
    """Runs that never reached their target: apart from the runs, in no rate, each with
    what to fix (the error names the setting)."""
    if not failures:
        return []
    lines = [
        "",
        f"Failed before reaching a target ({len(failures)}): not runs of the agents, in no rate",
    ]
    rows = [
        [
            fmt_time(r.finished_at),
            r.role.value,
            terminal_safe(r.repo) or "-",
            "-" if r.target.kind is TargetKind.REPO else _target(r),
            terminal_safe(r.error),
        ]
        for r in failures[: min(limit, 5)]
    ]
    headers = ["finished (UTC)", "role", "repository", "target", "what to fix"]
    lines.append(render_table(headers, rows, max_cell=160))
    if len(failures) > 5:
        lines.append(f"  ... and {len(failures) - 5} earlier (agent-loop status --json)")
    return lines


def render_status(snapshot: MemorySnapshot, *, limit: int = 15) -> str:
    """The whole `agent-loop status` page, safe to print to a terminal."""
    return terminal_safe(_render(snapshot, limit))


def _render(snapshot: MemorySnapshot, limit: int) -> str:
    where = snapshot.location.root or "?"
    if snapshot.empty and not snapshot.problems:
        return (
            f"No runs recorded yet in {where}.\n"
            "Run one with `agent-loop run builder` (or try `agent-loop demo`)."
        )
    out: list[str] = [f"Memory: {where}", ""]
    runs = snapshot.runs
    shown = min(limit, len(runs))
    out.append(f"Recent runs ({shown} of {len(runs)})")
    out.append(runs_by_repo(runs, limit) if runs else "  (none)")
    out += _preflight_lines(snapshot.preflight_failures, limit)
    if snapshot.unreadable:
        out.append(
            f"  {snapshot.unreadable} record file(s) are invalid or of a newer schema: kept, not shown."
        )
    idle_days = [c for c in snapshot.idle if c.count]
    if idle_days:
        idle = ", ".join(f"{c.role.value} {c.count} on {c.day.isoformat()}" for c in idle_days[:6])
        out.append(f"  Idle runs (nothing to claim): {idle}")
    out += _paused_lines(snapshot)
    resting = snapshot.resting
    if resting:
        out += ["", f"Resting in back-off ({len(resting)})"]
        several = len({r.repo.lower() for r in snapshot.records if r.repo}) > 1
        for record in resting:
            option = "--issue" if record.target.kind.value == "issue" else "--pr"
            until = (
                record.backoff_until.strftime("%Y-%m-%d %H:%M UTC") if record.backoff_until else "?"
            )
            where = f"{terminal_safe(record.repo)} " if several and record.repo else ""
            pick = f" --repo {terminal_safe(record.repo)}" if where else ""
            out.append(
                f"  {where}{_target(record)}: next try after {until}; to retry now: agent-loop "
                f"run {record.role.value}{pick} {option} {record.target.number} --retry-now"
            )
    if snapshot.problems:
        out += ["", f"Memory problems ({len(snapshot.problems)}): read as absent, kept for you"]
        out += [f"  - {problem}" for problem in snapshot.problems]
    tests = evidence_table(runs, limit)
    if tests:
        out += ["", "Tests of the recent changes (run in the sandbox, judged by code)", tests]
    out += ["", "Metrics", metrics_table(snapshot.metrics), ""]
    if snapshot.lessons.lessons:
        out.append(
            f"Lessons ({len(snapshot.lessons.lessons)}): {lesson_counts(snapshot.lessons.lessons)}"
        )
        out.append(lessons_table(snapshot.lessons.lessons))
        out.append("  more: agent-loop lessons list | show ID | retire ID | pin ID")
    else:
        out.append("Lessons: none yet (the distiller writes them from graded runs).")
    if snapshot.digest.strip():
        out.append(
            f"Context digest: {len(snapshot.digest)} characters "
            f"({DIGEST_PATH} in {snapshot.location.keys.context})"
        )
    return "\n".join(out)


def snapshot_json(snapshot: MemorySnapshot, *, limit: int = 15) -> str:
    """`status --json`: the snapshot as one JSON object (the newest `limit` records, every
    lesson, grade, idle counter and problem, the headline metrics, the digest).

    Unlike the page, the text is not made terminal-safe: JSON escapes every control
    character, and a program reads it, not a terminal.
    """
    from pydantic import TypeAdapter

    location = snapshot.location
    document: dict[str, Any] = {
        "memory": {
            "root": location.root,
            "org": location.org,
            "project": location.project,
            "domain": location.domain,
            "prefix": location.prefix,
        },
        "records": snapshot.records[:limit],
        "records_total": len(snapshot.records),
        "unreadable": snapshot.unreadable,
        "metrics": snapshot.metrics,
        "lessons": snapshot.lessons.lessons,
        "grades": snapshot.grades,
        "digest": snapshot.digest,
        "idle": snapshot.idle,
        "resting": [r.run_id for r in snapshot.resting],
        "problems": snapshot.problems,
    }
    return TypeAdapter(dict[str, Any]).dump_json(document).decode()
