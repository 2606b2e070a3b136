"""Grading: what became of the agents' work on GitHub, kept in the distiller's memory.

Humans decide whether the loop did well (a PR merged or closed unmerged, sub-issues
closed), so metrics and lessons are graded by that, not only by the verifier. What is
followed up:

- every PR a builder run opened (`opened_pr` records) and every decomposition (the
  sub-issues an `opened_issues` run filed), graded `open` until decided;
- review rounds: reviewer runs that pushed a fix or commented on the PR, counted once
  per run id (`Grade.review_run_ids`), so re-reading records never double counts.

Cost: one listing of the open issues (PRs included) per tick, a conditional request
that GitHub answers `304` (free) while nothing opened or closed; `get_pull` only for a
PR that left the open list. `regrade` is pure; `follow_up` does the I/O; only grades
that changed are returned (grading that finds no change writes nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Literal, Protocol

from agent_loop_common.github import Issue, PullRequest, RequestStats
from agent_loop_common.memory import MemoryLocation, month_of, read_grades
from agent_loop_common.records import (
    Grade,
    GradeState,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
)

__all__ = [
    "REVIEW_ROUND_OUTCOMES",
    "Followed",
    "GradingGitHub",
    "GradingResult",
    "PullFate",
    "follow_up",
    "grade_months",
    "is_decided",
    "regrade",
    "work_from_records",
]

REVIEW_ROUND_OUTCOMES = frozenset({Outcome.PUSHED_FIX, Outcome.COMMENTED})
"""Reviewer outcomes that count as a review round on the PR."""

_NUMBER = re.compile(r"/(?:pull|issues)/(\d+)(?:[/?#]|$)")


class GradingGitHub(Protocol):
    """The facade methods grading uses (the `GitHub` facade has them)."""

    stats: RequestStats

    async def list_issues(
        self, *, state: Literal["open", "closed", "all"] = "open"
    ) -> list[Issue]: ...

    async def get_pull(self, n: int) -> PullRequest: ...


@dataclass(frozen=True, slots=True)
class Followed:
    """One piece of agent work to follow up, as a builder record describes it."""

    kind: TargetKind
    """`pr` for an opened PR, `issue` for a decomposition (the parent issue)."""
    number: int
    """PR number, or the decomposed issue's number."""
    run_id: str
    """The builder run."""
    issue_number: int | None
    """The issue the run worked on."""
    title: str
    """The issue's title at the time of the run."""
    url: str
    """PR URL, or the issue's URL."""
    opened_at: datetime
    """When the run finished (the PR or sub-issues were opened)."""
    sub_issues: tuple[int, ...] = ()
    """Decompositions: the sub-issues opened."""


@dataclass(frozen=True, slots=True)
class PullFate:
    """What GitHub says about a PR that left the open list."""

    merged: bool
    title: str
    url: str
    opened_at: datetime


@dataclass(frozen=True, slots=True)
class GradingResult:
    """The grades after this tick, and which of them changed."""

    changed: list[Grade] = field(default_factory=list[Grade])
    """Grades to write (new, or different from the stored one apart from `graded_at`)."""
    current: list[Grade] = field(default_factory=list[Grade])
    """Every grade of the window after this tick (stored ones plus changes)."""
    listing_unchanged: bool = False
    """The open list was answered from the ETag cache (nothing opened or closed)."""
    looked: bool = True
    """False when grading stopped early: nothing new to grade and GitHub unchanged."""

    @property
    def decided(self) -> list[Grade]:
        """Changed grades that reached a decision (merged, closed, all sub-issues closed)."""
        return [g for g in self.changed if is_decided(g)]


def is_decided(grade: Grade) -> bool:
    """Whether humans have decided the work's fate."""
    return grade.state is not GradeState.OPEN


def _number(url: str) -> int | None:
    match = _NUMBER.search(url)
    return int(match.group(1)) if match else None


def work_from_records(
    records: Iterable[RunRecord],
) -> tuple[list[Followed], dict[int, list[str]]]:
    """PRs and decompositions to follow, and reviewer round run ids per PR, from records."""
    work: list[Followed] = []
    rounds: dict[int, list[str]] = {}
    for r in records:
        if r.role is Role.BUILDER and r.outcome is Outcome.OPENED_PR:
            pr = _number(r.links.pr_url)
            if pr is not None:
                work.append(
                    Followed(
                        TargetKind.PR, pr, r.run_id, r.target.number, r.target.title,
                        r.links.pr_url, r.finished_at,
                    )
                )  # fmt: skip
        elif r.role is Role.BUILDER and r.outcome is Outcome.OPENED_ISSUES:
            subs = tuple(n for n in (_number(u) for u in r.links.issue_urls) if n is not None)
            if subs and r.target.number is not None:
                work.append(
                    Followed(
                        TargetKind.ISSUE, r.target.number, r.run_id, r.target.number,
                        r.target.title, r.target.url, r.finished_at, subs,
                    )
                )  # fmt: skip
        elif (
            r.role is Role.REVIEWER
            and r.outcome in REVIEW_ROUND_OUTCOMES
            and r.target.kind is TargetKind.PR
            and r.target.number is not None
        ):
            rounds.setdefault(r.target.number, []).append(r.run_id)
    return work, rounds


def _same(a: Grade, b: Grade) -> bool:
    return a.model_dump(exclude={"graded_at"}) == b.model_dump(exclude={"graded_at"})


def regrade(
    stored: Mapping[str, Grade],
    work: Iterable[Followed],
    rounds: Mapping[int, Iterable[str]],
    open_numbers: set[int],
    fates: Mapping[int, PullFate],
    now: datetime,
) -> GradingResult:
    """New grades from what is stored, the new records and GitHub's answers. Pure.

    Args:
        stored: Grades by `target.ref` as read from memory.
        work: PRs and decompositions from new builder records.
        rounds: Reviewer round run ids per PR number, from new records.
        open_numbers: Issues and PRs open on GitHub now.
        fates: Merged or not, for PRs that are graded open but left the open list.
        now: The grading time.
    """
    grades: dict[str, Grade] = dict(stored)
    for item in work:
        ref = Target(kind=item.kind, number=item.number).ref
        if ref in grades:
            continue
        grades[ref] = Grade(
            target=Target(kind=item.kind, number=item.number, title=item.title, url=item.url),
            state=GradeState.OPEN,
            graded_at=now,
            opened_at=item.opened_at,
            run_id=item.run_id,
            issue_number=item.issue_number,
            sub_issues=list(item.sub_issues),
        )
    for pr, run_ids in rounds.items():
        ref = f"pr-{pr}"
        fate = fates.get(pr)
        if ref not in grades and fate is not None:
            grades[ref] = Grade(
                target=Target(kind=TargetKind.PR, number=pr, title=fate.title, url=fate.url),
                state=GradeState.OPEN,
                graded_at=now,
                opened_at=fate.opened_at,
            )
        if ref in grades:
            grade = grades[ref]
            ids = list(dict.fromkeys([*grade.review_run_ids, *run_ids]))
            grades[ref] = grade.model_copy(
                update={"review_run_ids": ids, "review_rounds": max(grade.review_rounds, len(ids))}
            )
    for ref, grade in grades.items():
        grades[ref] = _follow(grade, open_numbers, fates)
    changed = [
        g.model_copy(update={"graded_at": now})
        for ref, g in grades.items()
        if ref not in stored or not _same(g, stored[ref])
    ]
    by_ref = {**grades, **{g.target.ref: g for g in changed}}
    return GradingResult(changed=changed, current=list(by_ref.values()))


def _follow(grade: Grade, open_numbers: set[int], fates: Mapping[int, PullFate]) -> Grade:
    number = grade.target.number
    if number is None:
        return grade
    if grade.target.kind is TargetKind.ISSUE:
        closed = sorted(s for s in set(grade.sub_issues) if s not in open_numbers)
        state = GradeState.MERGED if len(closed) == len(set(grade.sub_issues)) else GradeState.OPEN
        return grade.model_copy(update={"sub_issues_closed": closed, "state": state})
    if number in open_numbers:
        return grade.model_copy(update={"state": GradeState.OPEN})
    fate = fates.get(number)
    if fate is None:
        return grade
    state = GradeState.MERGED if fate.merged else GradeState.CLOSED_UNMERGED
    return grade.model_copy(update={"state": state})


def grade_months(now: datetime, retention_days: int) -> list[str]:
    """The monthly grade keys followed: those opened within the retention window."""
    first = (now - timedelta(days=retention_days)).astimezone(UTC).date().replace(day=1)
    last = now.astimezone(UTC).date()
    months: list[str] = []
    day: date = first
    while day <= last:
        months.append(month_of(day))
        day = (day + timedelta(days=32)).replace(day=1)
    return months


async def open_numbers_of(github: GradingGitHub) -> tuple[set[int], bool]:
    """Numbers of the open issues and PRs, and whether every page was a free 304."""
    total, not_modified = github.stats.total, github.stats.not_modified
    items = await github.list_issues(state="open")
    sent = github.stats.total - total
    unchanged = sent > 0 and github.stats.not_modified - not_modified == sent
    return {i.number for i in items}, unchanged


async def follow_up(
    github: GradingGitHub,
    location: MemoryLocation,
    records: Iterable[RunRecord],
    now: datetime,
    *,
    retention_days: int,
    force: bool = False,
) -> GradingResult:
    """Grade the work of `records` and re-grade what is still open.

    Stops after the one conditional listing when GitHub answers it unchanged and the
    records bring nothing to grade (unless `force`): no memory read, no write.
    """
    work, rounds = work_from_records(records)
    open_now, unchanged = await open_numbers_of(github)
    if unchanged and not work and not rounds and not force:
        return GradingResult(listing_unchanged=True, looked=False)
    stored: dict[str, Grade] = {}
    for month in grade_months(now, retention_days):
        for grade in await read_grades(location, month):
            ref = grade.target.ref
            if ref not in stored or grade.graded_at > stored[ref].graded_at:
                stored[ref] = grade
    wanted = {
        g.target.number
        for g in stored.values()
        if g.target.kind is TargetKind.PR
        and g.target.number is not None
        and g.state is GradeState.OPEN
        and g.target.number not in open_now
    }
    for item in work:
        if item.kind is TargetKind.PR and item.number not in open_now:
            wanted.add(item.number)
    new_prs = {item.number for item in work if item.kind is TargetKind.PR}
    wanted |= {pr for pr in rounds if f"pr-{pr}" not in stored and pr not in new_prs}
    fates: dict[int, PullFate] = {}
    for pr in sorted(wanted):
        pull = await github.get_pull(pr)
        if pull.state == "closed":
            fates[pr] = PullFate(pull.merged, pull.title, pull.html_url, pull.created_at)
        elif pr in rounds:
            open_now.add(pr)
            fates[pr] = PullFate(False, pull.title, pull.html_url, pull.created_at)
    result = regrade(stored, work, rounds, open_now, fates, now)
    return GradingResult(
        changed=result.changed, current=result.current, listing_unchanged=unchanged
    )
