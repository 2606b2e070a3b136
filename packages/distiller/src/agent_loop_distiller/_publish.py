"""Memory a maintainer reviews like code: the proven lessons as a pull request.

With `AGENT_LOOP_LESSONS_PR=on` the distiller keeps one pull request, from its own branch,
that writes the proven lessons into a marked section of `AGENT_LOOP_LESSONS_FILE`
(`AGENTS.md` by default), one line each with its id and its evidence. Once merged those
lines are the repository's own instructions, which the agents read from the base branch.

The flow back is the other way round: when the newest commits that changed the file on
the default branch are by people (not the agents' identity) and every one of them passes
the shared trust rule, the section as they left it is compared with the section before
their first commit. A line they removed retires its lesson ("removed by <login>"); a
line they reworded rewords it. Both are recorded as the maintainer's (author
`maintainer`, their login), so the distiller can no longer change or expire the lesson.
Anyone else's edit is ignored, and the next pull request puts the lesson's text back.
The pull request's own branch is read the same way (a reviewer's edit before the merge).

On a tick with nothing else to do, `lessons_moved` asks first, with two conditional
reads (free 304s while nothing changed): the history of the file on the default branch
and the head of the lessons branch. Only when one changed does the tick claim and
fold the edit in, so a maintainer's edit flows back without waiting for new work.

Requests are few: one history listing of the file per branch and tick; when people changed the
file since the agents' last commit to it, the file as they left it, and only when it has
the section their permissions and the file before them; for the pull request, the base's
section and the branch's (and the pull request's state while it is pending) before any
write. An unchanged set writes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

import structlog

from agent_loop_common.github import BranchHead, GitHub, NotFound, PathCommit
from agent_loop_common.records import (
    Lesson,
    LessonAuthor,
    LessonBook,
    LessonEvent,
    LessonState,
    RetiredLesson,
    with_event,
)
from agent_loop_common.trust import Trust
from agent_loop_distiller._effect import EffectBook, target_estimate

__all__ = [
    "SECTION_END",
    "SECTION_START",
    "FlowBack",
    "PullSync",
    "apply_flow_back",
    "lessons_branch",
    "lessons_moved",
    "parse_section",
    "published_lines",
    "read_flow_back",
    "render_section",
    "splice_section",
    "sync_lessons_pull",
]

_log = structlog.get_logger(__name__)

SECTION_START = "<!-- agent-loop:lessons:start -->"
SECTION_END = "<!-- agent-loop:lessons:end -->"
_LINE = re.compile(r"^- \[(?P<id>[^\]\s]+)\] (?P<text>.*?)(?: _\(evidence: .*\)_)?\s*$")
_TITLE = "agent-loop: proven lessons"
_HISTORY = 10
"""Commits of the file's history read per tick: a longer run of people's commits is
judged on its newest ten."""


def one_line(text: str) -> str:
    """The lesson as one line of Markdown: whitespace collapsed, no HTML comment marks
    (a lesson's text must not close the section or hide the lines after it)."""
    return " ".join(text.replace("<!--", "").replace("-->", "").split())


def lessons_branch(branch_prefix: str) -> str:
    """The pull request's branch: next to the agents' prefix, not under it, so the
    builder and the reviewer never take it for one of their own pull requests."""
    return f"{branch_prefix.rstrip('/') or 'agent-loop'}-lessons"


def _evidence(lesson: Lesson, effects: EffectBook) -> str:
    parts = [lesson.state.value]
    effect = effects.lessons.get(lesson.id)
    if effect is not None:
        estimate = target_estimate(effect)
        if estimate is not None:
            parts.append(
                f"{estimate.metric.value} {estimate.effect:+.2f} "
                f"(95% interval {estimate.low:+.2f} to {estimate.high:+.2f})"
            )
        parts.append(f"shown {effect.shown}, held out {effect.held_out}")
    prs = [ref.removeprefix("pr-") for ref in lesson.source_refs if ref.startswith("pr-")]
    if prs:
        parts.append("from " + ", ".join(f"PR #{n}" for n in prs))
    if lesson.author is LessonAuthor.MAINTAINER and lesson.author_login:
        parts.append(f"worded by @{lesson.author_login}")
    return "; ".join(parts)


def published_lines(book: LessonBook) -> dict[str, str]:
    """Lesson id -> its one-line text, for every proven lesson of the book (in order)."""
    return {
        lesson.id: one_line(lesson.text)
        for lesson in book.lessons
        if lesson.state is LessonState.PROVEN and one_line(lesson.text)
    }


def render_section(book: LessonBook, effects: EffectBook) -> str:
    """The marked section with the proven lessons, one line each with its evidence."""
    lines = [
        SECTION_START,
        "## Lessons (proven by agent-loop's measurements)",
        "",
        "Each line was measured to help (shown vs held out). Edit or delete a line on the",
        "default branch to change or retire the lesson: edits by people with the trusted",
        "permission flow back into agent-loop's memory; anyone else's are ignored.",
        "",
    ]
    texts = published_lines(book)
    lines.extend(
        f"- [{lesson.id}] {texts[lesson.id]} _(evidence: {_evidence(lesson, effects)})_"
        for lesson in book.lessons
        if lesson.id in texts
    )
    if not texts:
        lines.append("(no proven lesson yet)")
    lines.append(SECTION_END)
    return "\n".join(lines) + "\n"


def parse_section(content: str | None) -> dict[str, str] | None:
    """Lesson id -> text of the section's lesson lines; `None` when there is no section."""
    if content is None:
        return None
    start, end = content.find(SECTION_START), content.find(SECTION_END)
    if start < 0 or end < start:
        return None
    found: dict[str, str] = {}
    for line in content[start + len(SECTION_START) : end].splitlines():
        match = _LINE.match(line.strip())
        if match is not None and match["text"].strip():
            found[match["id"]] = one_line(match["text"])
    return found


def splice_section(content: str | None, section: str) -> str:
    """`content` with its marked section replaced by `section` (appended when absent)."""
    if not content:
        return section
    start, end = content.find(SECTION_START), content.find(SECTION_END)
    if start >= 0 and end > start:
        tail = content[end + len(SECTION_END) :].removeprefix("\n")
        return content[:start] + section + tail
    return content.rstrip("\n") + "\n\n" + section


@dataclass
class FlowBack:
    """What people changed in the section on the default branch, and who."""

    login: str = ""
    """The newest trusted author (empty: nothing to apply)."""
    before: dict[str, str] = field(default_factory=dict[str, str])
    after: dict[str, str] = field(default_factory=dict[str, str])
    ignored: list[str] = field(default_factory=list[str])
    """Logins whose commits were not applied (not trusted, or no account)."""


def apply_flow_back(
    book: LessonBook, flow: FlowBack, now: datetime
) -> tuple[LessonBook, list[RetiredLesson]]:
    """Fold a trusted person's edits into the book; idempotent (applying twice changes
    nothing: a retired lesson is gone, a reworded one already has the new text)."""
    if not flow.login:
        return book, []
    kept: list[Lesson] = []
    retired: list[RetiredLesson] = []
    for lesson in book.lessons:
        if lesson.id not in flow.before:
            kept.append(lesson)
            continue
        after = flow.after.get(lesson.id)
        if after is None:
            reason = f"removed by {flow.login}"
            event = LessonEvent(
                at=now, op="retired", by=LessonAuthor.MAINTAINER, login=flow.login, detail=reason
            )
            gone = with_event(lesson, event)
            retired.append(
                RetiredLesson(
                    lesson=gone,
                    kind="retired",
                    reason=reason,
                    by=LessonAuthor.MAINTAINER,
                    login=flow.login,
                    at=now,
                )
            )
            continue
        if after != flow.before[lesson.id] and after != one_line(lesson.text):
            event = LessonEvent(
                at=now,
                op="reworded",
                by=LessonAuthor.MAINTAINER,
                login=flow.login,
                detail="edited in the repository's instructions",
            )
            lesson = with_event(
                lesson,
                event,
                text=after,
                author=LessonAuthor.MAINTAINER,
                author_login=flow.login,
                updated_at=now,
            )
        kept.append(lesson)
    return book.model_copy(update={"lessons": kept}), retired


def _text(raw: bytes | None) -> str | None:
    return None if raw is None else raw.decode("utf-8", "replace")


async def read_flow_back(github: GitHub, trust: Trust, path: str, branch: str | None) -> FlowBack:
    """People's edits of the section on `branch` since the agents' last commit to it
    (`None`: the default branch; or the lessons pull request's branch during its review).

    The newest commits of the file not by the agents' identity are the people's edits;
    they count only when every one is by a trusted person (a trusted person merging a
    stranger's change leaves the stranger as the file's author, so it is ignored too).
    """
    try:
        history = await github.path_commits(path, branch, limit=_HISTORY)
    except NotFound:
        return FlowBack()  # no such branch (the lessons branch before its first write)
    people: list[PathCommit] = []
    for commit in history:
        if commit.author_login and trust.is_agent(commit.author_login):
            break
        people.append(commit)
    if not people:
        return FlowBack()
    after = parse_section(_text(await github.get_file(path, people[0].sha)))
    if after is None:
        # No section (never merged, or removed with its markers): nothing flows back, and
        # nobody's permission needs asking.
        return FlowBack()
    logins = [c.author_login for c in people]
    await trust.resolve([login for login in logins if login])
    untrusted = [login or "(no account)" for login in logins if not login or not trust(login)]
    if untrusted:
        _log.info("distiller.lessons_edit_ignored", path=path, by=sorted(set(untrusted)))
        return FlowBack(ignored=sorted(set(untrusted)))
    oldest = people[-1]
    before_raw = await github.get_file(path, oldest.parents[0]) if oldest.parents else None
    before = parse_section(_text(before_raw)) or {}
    if not before:
        return FlowBack()
    return FlowBack(login=people[0].author_login, before=before, after=after)


async def lessons_moved(github: GitHub, path: str, branch_prefix: str) -> bool:
    """Whether someone may have edited the lessons since the last tick looked: the file's
    history on the default branch, or the head of the lessons pull request's branch,
    changed.

    Two conditional reads (the history listing is the one the flow-back sends), so while
    nothing moved both are free 304s and an idle tick stays free. Anything but two 304s
    (the first look, or an answer that changed) says "moved": the tick then claims and
    folds the edit in, which costs requests only when there is something to read.
    """
    total, not_modified = github.stats.total, github.stats.not_modified
    await github.path_commits(path, None, limit=_HISTORY)
    await github.branch_head(lessons_branch(branch_prefix))
    sent = github.stats.total - total
    return github.stats.not_modified - not_modified != sent


@dataclass(frozen=True)
class PullSync:
    """What keeping the lessons pull request did this tick."""

    action: str
    """`merged` (the default branch has these lessons), `unchanged` (the open pull
    request proposes them), `declined` (a person closed it unmerged: not proposed again
    until the set changes), `opened` or `updated`. Only the last two write."""
    number: int | None = None
    """The pull request, when this tick opened or updated it."""


def _same(found: Mapping[str, str] | None, wanted: Mapping[str, str]) -> bool:
    return (found or {}) == wanted


async def sync_lessons_pull(
    github: GitHub,
    *,
    book: LessonBook,
    effects: EffectBook,
    path: str,
    branch_prefix: str,
    base: BranchHead | None = None,
) -> PullSync:
    """Keep the one lessons pull request in step with the proven lessons.

    Nothing is written when the default branch already has them, or the branch already
    proposes them; otherwise the branch is (re)started from the default branch's head
    with one commit writing the section, and a pull request opened if none is open.
    `base` is the default branch as the tick already read it (one request saved).
    """
    wanted = published_lines(book)
    if base is None:
        base = await github.default_branch()
    base_text = _text(await github.get_file(path, base.sha))
    if _same(parse_section(base_text), wanted):
        return PullSync("merged")
    branch = lessons_branch(branch_prefix)
    head = await github.get_ref(f"heads/{branch}")
    if head is not None and _same(parse_section(_text(await github.get_file(path, head))), wanted):
        pulls = await github.list_pulls(head=branch, state="all")
        latest = max(pulls, key=lambda p: p.number, default=None)
        if latest is None or latest.state == "open":
            return PullSync("unchanged", None if latest is None else latest.number)
        if not latest.merged:
            # A person closed it unmerged: this set is declined until it changes.
            return PullSync("declined", latest.number)
        # Merged, and the default branch changed since: propose the lessons again.
    content = splice_section(base_text, render_section(book, effects))
    if head is None:
        await github.create_ref(f"refs/heads/{branch}", base.sha)
    elif head != base.sha:
        await github.update_ref(f"heads/{branch}", base.sha, force=True)
    message = f"{_TITLE}: {len(wanted)} lesson(s) in {path}"
    await github.commit_on_branch(
        branch=branch, expected_head=base.sha, message=message, files={path: content}
    )
    open_pulls = await github.list_pulls(head=branch, state="open")
    if open_pulls:
        return PullSync("updated", open_pulls[0].number)
    body = (
        f"The lessons agent-loop measured to help, written into the marked section of "
        f"`{path}`: each line has the lesson's id and its evidence (the state, the effect "
        "with its interval, how often it was shown and held out, the pull requests it "
        "came from).\n\nReview them like code. Once merged they are this repository's "
        "instructions to the agents. Later, edit or delete a line on the default branch: "
        "a trusted person's change flows back into agent-loop's memory (reworded or "
        "retired, recorded as theirs); anyone else's is ignored."
    )
    pull = await github.create_pull(title=_TITLE, body=body, head=branch, base=base.name)
    return PullSync("opened", pull.number)
