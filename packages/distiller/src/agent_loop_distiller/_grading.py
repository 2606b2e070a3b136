"""Grading: what became of the agents' work on GitHub, kept in the distiller's memory.

Humans decide whether the loop did well (a PR merged or closed unmerged, sub-issues
closed), so metrics and lessons are graded by that, not only by the verifier. What is
followed up:

- every PR a builder run opened (`opened_pr` records) and every decomposition (the
  sub-issues an `opened_issues` run filed), graded `open` until decided;
- review rounds: reviewer runs that pushed a fix or commented on the PR, counted once
  per run id (`Grade.review_run_ids`), so re-reading records never double counts;
- once an agent PR is decided, the outcome facts it left (`_pull_facts`): review
  threads left unresolved, the first CI result on the head the builder pushed, who
  closed it and the trusted reason, and later whether the merge was reverted on the
  default branch within 30 days.

Cost: one listing of the open issues (PRs included) per tick, a conditional request
that GitHub answers `304` (free) while nothing opened or closed; `get_pull` only for a
PR that left the open list. An agent PR found decided costs, once: one GraphQL request
(threads, first and merge commit), the check runs and the statuses of its first commit
(one request each), and when closed unmerged its events and comments (one each) plus a
permission look-up per login that could give a reason. While a merge is within its 30
days, one listing of the default branch's commits since the oldest such merge per
regrading tick (a stable URL: a free `304` while the branch did not move). `regrade` is
pure; `follow_up` does the I/O; only grades that changed are returned (grading that
finds no change writes nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Literal, Protocol

from agent_loop_common.github import (
    CheckRun,
    Comment,
    CommitStatus,
    Issue,
    IssueEvent,
    PathCommit,
    PullHistory,
    PullRequest,
    RequestStats,
)
from agent_loop_common.memory import MemoryLocation, month_of, read_grades
from agent_loop_common.records import (
    Grade,
    GradeState,
    LessonExposure,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
    WorkKind,
)
from agent_loop_distiller._pull_facts import (
    REVERT_WINDOW,
    PullFacts,
    close_reason,
    closer,
    first_ci,
    revert_of,
)

__all__ = [
    "REVIEW_ROUND_OUTCOMES",
    "Followed",
    "GradingGitHub",
    "GradingResult",
    "PullFate",
    "Trusted",
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

    async def pull_history(self, n: int) -> PullHistory: ...

    async def list_check_runs(self, ref: str) -> list[CheckRun]: ...

    async def list_statuses(self, ref: str) -> list[CommitStatus]: ...

    async def list_issue_events(self, n: int) -> list[IssueEvent]: ...

    async def list_issue_comments(self, n: int, since: datetime | None = None) -> list[Comment]: ...

    async def commits_since(self, ref: str | None, since: datetime) -> list[PathCommit]: ...


class Trusted(Protocol):
    """Who may give a closed PR its reason (`agent_loop_common.trust.Trust` is one)."""

    async def resolve(self, logins: Iterable[str]) -> None: ...

    def is_agent(self, login: str) -> bool: ...

    def __call__(self, login: str) -> bool: ...


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
    repo: str = ""
    """The run's repository (the effect's stratum)."""
    work_kind: WorkKind | None = None
    """The run's kind of work (the effect's stratum)."""
    exposures: tuple[LessonExposure, ...] = ()
    """The run's applicable lessons, shown or held out (the PR's outcomes feed them)."""


@dataclass(frozen=True, slots=True)
class PullFate:
    """What GitHub says about a PR that left the open list."""

    merged: bool
    title: str
    url: str
    opened_at: datetime
    facts: PullFacts | None = None
    """The outcome facts, read for agent PRs only."""


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
    def awaiting_revert(self) -> bool:
        """Some merge's revert check is undecided: a tick that saw GitHub change (a
        revert PR merged, say) should look under its claim, where reverts are read."""
        return any(awaiting_revert(g) for g in self.current)

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
                drawn = tuple(e for e in r.exposures if e.applicable and (e.shown or e.held_out))
                work.append(
                    Followed(
                        TargetKind.PR, pr, r.run_id, r.target.number, r.target.title,
                        r.links.pr_url, r.finished_at, repo=r.repo, work_kind=r.work_kind,
                        exposures=drawn,
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


def fix_runs(records: Iterable[RunRecord]) -> list[str]:
    """Reviewer runs that pushed a fix commit to a PR (the `no_review_fix` outcome)."""
    return [
        r.run_id
        for r in records
        if r.role is Role.REVIEWER
        and r.outcome is Outcome.PUSHED_FIX
        and r.target.kind is TargetKind.PR
    ]


def _same(a: Grade, b: Grade) -> bool:
    return a.model_dump(exclude={"graded_at"}) == b.model_dump(exclude={"graded_at"})


def regrade(
    stored: Mapping[str, Grade],
    work: Iterable[Followed],
    rounds: Mapping[int, Iterable[str]],
    open_numbers: set[int],
    fates: Mapping[int, PullFate],
    now: datetime,
    commits: Sequence[PathCommit] | None = None,
    repo: str = "",
    fix_run_ids: frozenset[str] = frozenset(),
) -> GradingResult:
    """New grades from what is stored, the new records and GitHub's answers. Pure.

    Args:
        stored: Grades by `target.ref` as read from memory.
        work: PRs and decompositions from new builder records.
        rounds: Reviewer round run ids per PR number, from new records.
        open_numbers: Issues and PRs open on GitHub now.
        fates: Merged or not (and the outcome facts), for PRs that are graded open but
            left the open list.
        now: The grading time.
        commits: The default branch's commits since the oldest merge whose revert is
            undecided (`None`: not listed this tick, reverts stay undecided).
        repo: `owner/name`, for `Reverts owner/name#N` messages.
        fix_run_ids: The reviewer runs among `rounds` that pushed a fix commit.
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
            repo=item.repo,
            work_kind=item.work_kind,
            exposures=list(item.exposures),
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
            fixed = [*grade.review_fix_run_ids, *(i for i in run_ids if i in fix_run_ids)]
            grades[ref] = grade.model_copy(
                update={
                    "review_run_ids": ids,
                    "review_rounds": max(grade.review_rounds, len(ids)),
                    "review_fix_run_ids": list(dict.fromkeys(fixed)),
                }
            )
    for ref, grade in grades.items():
        grades[ref] = _settle_revert(_follow(grade, open_numbers, fates), commits, now, repo)
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
    update: dict[str, object] = {"state": state}
    facts = fate.facts
    if facts is not None and grade.state is GradeState.OPEN:
        update |= {
            "unresolved_threads": facts.unresolved_threads,
            "first_head_sha": facts.first_head_sha,
            "first_ci": facts.first_ci,
            "merge_sha": facts.merge_sha,
            "merged_at": facts.merged_at,
            "closed_by": facts.closed_by,
            "close_reason": facts.close_reason,
        }
    return grade.model_copy(update=update)


def awaiting_revert(grade: Grade) -> bool:
    """A merge whose `not_reverted` outcome is not decided yet."""
    return (
        grade.state is GradeState.MERGED
        and grade.reverted is None
        and bool(grade.merge_sha)
        and grade.merged_at is not None
    )


def _settle_revert(
    grade: Grade, commits: Sequence[PathCommit] | None, now: datetime, repo: str
) -> Grade:
    """Reverted once a reverting commit is seen; not reverted once the window passed."""
    if commits is None or not awaiting_revert(grade) or grade.merged_at is None:
        return grade
    number = grade.target.number or 0
    found = revert_of(
        commits, merge_sha=grade.merge_sha, number=number, repo=repo, merged_at=grade.merged_at
    )
    if found is not None:
        return grade.model_copy(update={"reverted": True, "revert_sha": found.sha})
    if now >= grade.merged_at + REVERT_WINDOW:
        return grade.model_copy(update={"reverted": False})
    return grade


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
    trust: Trusted | None = None,
    repo: str = "",
) -> GradingResult:
    """Grade the work of `records` and re-grade what is still open.

    Stops after the one conditional listing when GitHub answers it unchanged and the
    records bring nothing to grade (unless `force`): no memory read, no write.

    With `trust` (the tick under its claim), agent PRs found decided get their outcome
    facts read, and merges within their 30 days are checked for a revert; without it
    (the read-only look before the claim) only states change, so nothing is read twice.
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
    agent_prs = new_prs | {
        g.target.number for g in stored.values() if g.run_id and g.target.kind is TargetKind.PR
    }
    fates: dict[int, PullFate] = {}
    for pr in sorted(wanted):
        pull = await github.get_pull(pr)
        if pull.state == "closed":
            facts = None
            if trust is not None and pr in agent_prs:
                facts = await read_facts(github, trust, pull)
            fates[pr] = PullFate(pull.merged, pull.title, pull.html_url, pull.created_at, facts)
        elif pr in rounds:
            open_now.add(pr)
            fates[pr] = PullFate(False, pull.title, pull.html_url, pull.created_at)
    commits = None
    if trust is not None:
        commits = await _commits_to_check(github, stored.values(), fates.values())
    fixes = frozenset(fix_runs(records))
    result = regrade(stored, work, rounds, open_now, fates, now, commits, repo, fixes)
    return GradingResult(
        changed=result.changed, current=result.current, listing_unchanged=unchanged
    )


async def read_facts(github: GradingGitHub, trust: Trusted, pull: PullRequest) -> PullFacts:
    """The outcome facts of a closed agent PR (see the module's cost)."""
    history = await github.pull_history(pull.number)
    head = history.first_commit_sha
    ci = None
    if head:
        ci = first_ci(await github.list_check_runs(head), await github.list_statuses(head))
    facts = PullFacts(
        unresolved_threads=history.unresolved_threads,
        first_head_sha=head,
        first_ci=ci,
        merge_sha=history.merge_commit_sha,
        merged_at=pull.merged_at,
    )
    if pull.merged:
        return facts
    events = await github.list_issue_events(pull.number)
    comments = await github.list_issue_comments(pull.number)
    # Only logins whose words could give a reason are looked up (one request each,
    # cached for the run); the agents' own labels and comments never excuse it.
    await trust.resolve(
        {e.actor.login for e in events if e.event == "labeled" and e.actor is not None}
        | {c.user.login for c in comments}
    )

    def vouched(login: str) -> bool:
        return trust(login) and not trust.is_agent(login)

    reason = close_reason(events, comments, pull.closed_at, vouched)
    return PullFacts(
        unresolved_threads=facts.unresolved_threads,
        first_head_sha=head,
        first_ci=ci,
        closed_by=closer(events),
        close_reason=reason,
    )


async def _commits_to_check(
    github: GradingGitHub, stored: Iterable[Grade], fates: Iterable[PullFate]
) -> list[PathCommit] | None:
    """The default branch's commits since the oldest merge awaiting its revert check
    (`None` when no merge awaits one: no request)."""
    starts = [g.merged_at for g in stored if awaiting_revert(g) and g.merged_at is not None]
    starts += [
        f.facts.merged_at
        for f in fates
        if f.merged and f.facts is not None and f.facts.merged_at is not None and f.facts.merge_sha
    ]
    if not starts:
        return None
    return await github.commits_since(None, min(starts))
