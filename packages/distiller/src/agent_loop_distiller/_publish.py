"""Memory a maintainer reviews like code: the proven lessons as a pull request.

With `AGENT_LOOP_LESSONS_PR=on` the distiller keeps one pull request, from its own branch,
that writes the proven lessons into a marked section of `AGENT_LOOP_LESSONS_FILE`
(`AGENTS.md` by default), one line each with its id and its evidence. Once merged those
lines are the repository's own instructions, which the agents read from the base branch.

The flow back is the other way round (`_flow_back`): an edit of a line on the default
branch, or on the pull request's branch during its review, is taken in only when GitHub
vouches for a trusted person (who merged it, or whose own key signed it), never on a
commit's author field. Every edit not taken in is listed in the pull request's body with
its reason, and the next pull request puts the lessons' own text back.

On a tick with nothing else to do, `lessons_moved` asks first, with two conditional
reads (free 304s while nothing changed): the history of the file on the default branch
and the head of the lessons branch. Only when one changed does the tick claim and
fold the edit in, so a maintainer's edit flows back without waiting for new work.

Requests are few: for the pull request, the base's section and the branch's (and the
pull request's state while it is pending) before any write; the body is rewritten only
when an ignored edit is new to it. An unchanged set writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agent_loop_common.github import BranchHead, GitHub
from agent_loop_common.records import Lesson, LessonAuthor, LessonBook, LessonState
from agent_loop_common.texts import public_text
from agent_loop_distiller._effect import EffectBook, target_estimate
from agent_loop_distiller._flow_back import HISTORY, IgnoredEdit
from agent_loop_distiller._section import (
    SECTION_END,
    SECTION_START,
    one_line,
    parse_section,
    splice_section,
)

__all__ = [
    "SECTION_END",
    "SECTION_START",
    "PullSync",
    "lessons_branch",
    "lessons_moved",
    "parse_section",
    "published_lines",
    "pull_body",
    "render_section",
    "splice_section",
    "sync_lessons_pull",
]

_TITLE = "agent-loop: proven lessons"


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
    await github.path_commits(path, None, limit=HISTORY)
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


def _text(raw: bytes | None) -> str | None:
    return None if raw is None else raw.decode("utf-8", "replace")


_IGNORED_HEADING = "### Edits not taken into memory"
_IGNORED_KEPT = 50
"""Ignored edits a body lists at most (the newest)."""


def _listed(body: str) -> list[str]:
    """The ignored edits a body already lists (its lines under `_IGNORED_HEADING`)."""
    _, found, tail = body.partition(_IGNORED_HEADING)
    if not found:
        return []
    return [line[2:] for line in tail.splitlines() if line.startswith("- `")]


def _sha_of(line: str) -> str:
    return line.split("`", 2)[1] if line.count("`") >= 2 else line


def pull_body(path: str, ignored: Sequence[str] = ()) -> str:
    """The lessons pull request's body: what it is, how edits flow back, and every edit
    not taken into memory with its reason (`IgnoredEdit.describe` lines)."""
    body = (
        f"The lessons agent-loop measured to help, written into the marked section of "
        f"`{path}`: each line has the lesson's id and its evidence (the state, the effect "
        "with its interval, how often it was shown and held out, the pull requests it "
        "came from).\n\nReview them like code. Once merged they are this repository's "
        "instructions to the agents. Later, edit or delete a line: the change flows back "
        "into agent-loop's memory (reworded or retired, recorded as that person's) when "
        "GitHub vouches for someone with the trusted permission, that is when such a "
        "person merged it through a pull request or signed the commit with their own "
        "verified key. A commit's author field is never enough: anything else is ignored, "
        "listed below with the reason, and the lessons' own text is proposed again."
    )
    if ignored:
        lines = "\n".join(f"- {line}" for line in ignored[-_IGNORED_KEPT:])
        body += f"\n\n{_IGNORED_HEADING}\n\n{lines}"
    return public_text(body)


async def _list_ignored(
    github: GitHub, number: int, body: str, path: str, ignored: Sequence[IgnoredEdit]
) -> None:
    """Add the ignored edits the open pull request's body does not list yet."""
    listed = _listed(body)
    known = {_sha_of(line) for line in listed}
    new = [x.describe() for x in ignored if x.sha[:7] not in known]
    if new:
        await github.update_pull(number, body=pull_body(path, [*listed, *new]))


async def sync_lessons_pull(
    github: GitHub,
    *,
    book: LessonBook,
    effects: EffectBook,
    path: str,
    branch_prefix: str,
    base: BranchHead | None = None,
    ignored: Sequence[IgnoredEdit] = (),
) -> PullSync:
    """Keep the one lessons pull request in step with the proven lessons.

    Nothing is written when the default branch already has them, or the branch already
    proposes them; otherwise the branch is (re)started from the default branch's head
    with one commit writing the section, and a pull request opened if none is open.
    `base` is the default branch as the tick already read it (one request saved).
    `ignored`: the edits the flow back did not take in; the open pull request's body
    lists each (its body is rewritten only when one is new to it).
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
            if latest is not None:
                await _list_ignored(github, latest.number, latest.body, path, ignored)
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
        await _list_ignored(github, open_pulls[0].number, open_pulls[0].body, path, ignored)
        return PullSync("updated", open_pulls[0].number)
    body = pull_body(path, [x.describe() for x in ignored])
    pull = await github.create_pull(title=_TITLE, body=body, head=branch, base=base.name)
    return PullSync("opened", pull.number)
