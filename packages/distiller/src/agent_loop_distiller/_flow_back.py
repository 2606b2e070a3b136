"""The lessons flow back: people's edits of the published section, taken in on GitHub's
word only.

With `AGENT_LOOP_LESSONS_PR=on` the proven lessons live in a marked section of the
lessons file; people edit or delete its lines there. A commit's author and committer
are whatever its creator wrote (anyone who can push can write a maintainer's email), so
they never say whose an edit is. An edit is taken in only when GitHub itself vouches
for a person who passes the shared trust rule (`AGENT_LOOP_TRUSTED_MIN_PERMISSION`,
never the agents' own identity):

- **merged**: the commit belongs to a pull request merged into the branch read (GitHub's
  `associatedPullRequests`), and the person who merged it (`mergedBy`, a `User`: a merge
  by an App or bot account, which merges whatever its rules let through, vouches for no
  person) passes; the edit is theirs, since they accepted it;
- **signed**: the commit carries a signature GitHub verified (`VALID`) made by the
  signer's own registered key (GitHub checks the key is theirs and the committer email
  is one of their verified emails), and the signer passes. GitHub's own signature (a
  merge, a web or API edit) vouches that GitHub made the commit, for no person.

Each commit since the agents' own last commit of the file is read on its own: what it
changed in the section (against its first parent) is taken in as the person's when
vouched; when not, it is ignored and listed (`IgnoredEdit`, with the reason), and the next
pull request puts the lessons' own text back. The last vouched change of a line wins.
Adding a line changes nothing, and neither does removing the section with its markers.

Where to start reading is the newest commit the agents made themselves: authored by
their identity and signed by GitHub (they commit through `createCommitOnBranch`), which a
push with a forged author field is not. That boundary only says where reading starts:
it never makes any text trusted (a change before it was either read by an earlier tick
or is lost, never applied as someone else's).

Requests: the history listing (one, conditional), the file at each commit since the
boundary and at the oldest one's parent (only when the newest has the section), then
for the commits that changed a line one GraphQL request for their provenance and one
permission look-up per merger or signer (cached for the run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import structlog

from agent_loop_common.github import (
    CommitProvenance,
    GitHub,
    MergedPull,
    NotFound,
    PathCommit,
)
from agent_loop_common.records import (
    Lesson,
    LessonAuthor,
    LessonBook,
    LessonEvent,
    RetiredLesson,
    with_event,
)
from agent_loop_common.trust import Trust
from agent_loop_distiller._section import one_line, parse_section

__all__ = [
    "HISTORY",
    "FlowBack",
    "IgnoredEdit",
    "LineEdit",
    "apply_flow_back",
    "is_agents_commit",
    "merge_ignored",
    "read_flow_back",
]

_log = structlog.get_logger(__name__)

HISTORY = 10
"""Commits of the file's history read per tick: a longer run of people's commits is
judged on its newest ten."""
_GITHUB_COMMITTERS = frozenset({"", "web-flow"})
"""The committer accounts of the commits GitHub makes itself (no account on some
Enterprise servers)."""


@dataclass(frozen=True)
class LineEdit:
    """A vouched change of one lesson's line."""

    text: str | None
    """The line's new text; `None`: the line was removed."""
    login: str
    """Who GitHub vouches for: the person who merged the commit's pull request, or whose
    key signed it."""
    sha: str


@dataclass(frozen=True)
class IgnoredEdit:
    """A commit that changed lessons' lines and was not taken in, and why."""

    sha: str
    branch: str
    lessons: tuple[str, ...]
    """The lessons whose lines it changed."""
    claimed: str
    """The account its author email maps to ("" for none): what it claims, not proof."""
    reason: str

    def describe(self) -> str:
        """One line for the pull request body and the tick's summary."""
        claim = f"author field @{self.claimed}" if self.claimed else "author email of no account"
        return (
            f"`{self.sha[:7]}` on `{self.branch}` changed {', '.join(self.lessons)} "
            f"({claim}, which proves nothing): {self.reason}"
        )


@dataclass
class FlowBack:
    """What people changed in the section, as GitHub vouches for it."""

    edits: dict[str, LineEdit] = field(default_factory=dict[str, LineEdit])
    """Lesson id -> its last vouched change."""
    ignored: list[IgnoredEdit] = field(default_factory=list[IgnoredEdit])


def is_agents_commit(commit: PathCommit, trust: Trust) -> bool:
    """Whether the agents made `commit` themselves: authored by their identity and
    signed by GitHub, as `createCommitOnBranch` commits are (a push with their email in
    the author field is not)."""
    return (
        bool(commit.author_login)
        and trust.is_agent(commit.author_login)
        and commit.verified
        and (commit.committer_login in _GITHUB_COMMITTERS or trust.is_agent(commit.committer_login))
    )


def _changes(before: dict[str, str] | None, after: dict[str, str] | None) -> dict[str, str | None]:
    """The lines of `before` that `after` rewords or removes."""
    if before is None or after is None:
        return {}
    return {i: after.get(i) for i, text in before.items() if after.get(i) != text}


def _person(login: str, trust: Trust) -> bool:
    return bool(login) and not trust.is_agent(login) and trust(login)


def _not_a_person(login: str, trust: Trust) -> str:
    if not login:
        return "an account GitHub no longer names"
    if trust.is_agent(login):
        return "the agents' own identity, not a person"
    return f"@{login}, who lacks the trusted permission ({trust.minimum})"


def _merger(pull: MergedPull, trust: Trust) -> str:
    """Why the account that merged `pull` vouches for nobody."""
    if pull.merged_by and pull.merged_by_type != "User" and not trust.is_agent(pull.merged_by):
        kind = "an App or bot account" if pull.merged_by_type == "Bot" else "an account"
        return f"@{pull.merged_by}, {kind} ({pull.merged_by_type or 'of no type'}), not a person"
    return _not_a_person(pull.merged_by, trust)


def _candidates(provenance: CommitProvenance, branch: str) -> list[str]:
    """Whom GitHub's word could make the commit's: the person accounts (`User`) that
    merged it into `branch`, then its signer ("" for none). Their permissions are what
    the tick looks up, and the first who passes the trust rule is the one vouched for."""
    merged_by = [
        p.merged_by
        for p in provenance.merged
        if p.base_ref == branch and p.merged_by_type == "User"
    ]
    return [*merged_by, provenance.signer]


def _vouched(provenance: CommitProvenance | None, trust: Trust, branch: str) -> tuple[str, str]:
    """`(login, "")` for the trusted person GitHub vouches for, else `("", reason)`."""
    if provenance is None:
        return "", "GitHub does not know this commit"
    for login in _candidates(provenance, branch):
        if _person(login, trust):
            return login, ""
    merged = [p for p in provenance.merged if p.base_ref == branch]
    reasons = [f"merged in #{p.number} by {_merger(p, trust)}" for p in merged]
    if not merged:
        reasons.append(f"no pull request merged it into {branch}")
    state = provenance.signature_state
    if provenance.signer:
        reasons.append(f"signed by {_not_a_person(provenance.signer, trust)}")
    elif state not in ("UNSIGNED", "VALID"):
        reasons.append(f"signature not verified ({state.lower()})")
    elif not merged:
        reasons.append(
            "GitHub's own signature (a web or API edit) names no person"
            if provenance.signed_by_github
            else "no signature"
        )
    return "", "; ".join(reasons)


async def read_flow_back(
    github: GitHub, trust: Trust, path: str, branch: str | None, branch_name: str
) -> FlowBack:
    """People's vouched edits of the section on `branch` (`None`: the default branch, named
    `branch_name`; or the lessons pull request's branch during its review) since the
    agents' own last commit of `path`, and the edits ignored with their reasons."""
    try:
        history = await github.path_commits(path, branch, limit=HISTORY)
    except NotFound:
        return FlowBack()  # no such branch (the lessons branch before its first write)
    people: list[PathCommit] = []
    for commit in history:
        if is_agents_commit(commit, trust):
            break
        people.append(commit)
    if not people:
        return FlowBack()
    sections: dict[str, dict[str, str] | None] = {}

    async def section(sha: str) -> dict[str, str] | None:
        if sha not in sections:
            raw = await github.get_file(path, sha)
            sections[sha] = parse_section(None if raw is None else raw.decode("utf-8", "replace"))
        return sections[sha]

    if await section(people[0].sha) is None:
        # No section (never merged, or removed with its markers): nothing flows back, and
        # nobody's permission needs asking.
        return FlowBack()
    changed: list[tuple[PathCommit, dict[str, str | None]]] = []
    for commit in reversed(people):  # oldest first: the last vouched change wins
        if commit.parents:
            edits = _changes(await section(commit.parents[0]), await section(commit.sha))
            if edits:
                changed.append((commit, edits))
    if not changed:
        return FlowBack()
    provenance = await github.commit_provenance([c.sha for c, _ in changed])
    await trust.resolve(
        {login for p in provenance.values() for login in _candidates(p, branch_name) if login}
    )
    flow = FlowBack()
    for commit, edits in changed:
        login, reason = _vouched(provenance.get(commit.sha), trust, branch_name)
        if login:
            for lesson_id, text in edits.items():
                flow.edits[lesson_id] = LineEdit(text, login, commit.sha)
            continue
        ignored = IgnoredEdit(
            commit.sha, branch_name, tuple(sorted(edits)), commit.author_login, reason
        )
        flow.ignored.append(ignored)
        _log.info("distiller.lessons_edit_ignored", path=path, edit=ignored.describe())
    return flow


def apply_flow_back(
    book: LessonBook, flow: FlowBack, now: datetime
) -> tuple[LessonBook, list[RetiredLesson]]:
    """Fold vouched edits into the book, as the person's; idempotent (applying twice
    changes nothing: a retired lesson is gone, a reworded one already has the text)."""
    if not flow.edits:
        return book, []
    kept: list[Lesson] = []
    retired: list[RetiredLesson] = []
    for lesson in book.lessons:
        edit = flow.edits.get(lesson.id)
        if edit is None:
            kept.append(lesson)
            continue
        if edit.text is None:
            reason = f"removed by {edit.login}"
            event = LessonEvent(
                at=now, op="retired", by=LessonAuthor.MAINTAINER, login=edit.login, detail=reason
            )
            retired.append(
                RetiredLesson(
                    lesson=with_event(lesson, event),
                    kind="retired",
                    reason=reason,
                    by=LessonAuthor.MAINTAINER,
                    login=edit.login,
                    at=now,
                )
            )
            continue
        if edit.text != one_line(lesson.text):
            event = LessonEvent(
                at=now,
                op="reworded",
                by=LessonAuthor.MAINTAINER,
                login=edit.login,
                detail=f"edited in the repository's instructions ({edit.sha[:7]})",
            )
            lesson = with_event(
                lesson,
                event,
                text=edit.text,
                author=LessonAuthor.MAINTAINER,
                author_login=edit.login,
                updated_at=now,
            )
        kept.append(lesson)
    return book.model_copy(update={"lessons": kept}), retired


def merge_ignored(found: Sequence[IgnoredEdit], more: Sequence[IgnoredEdit]) -> list[IgnoredEdit]:
    """`found` then `more`, each commit once."""
    seen = {x.sha for x in found}
    return [*found, *(x for x in more if x.sha not in seen)]
