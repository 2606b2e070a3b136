"""The context digest builder and reviewer read: budgeted lessons + a rollup of done work.

Both halves are deterministic: lessons in `rank_lessons` order, and a rollup of the
work already processed rendered from grades (what became of each agent PR and
decomposition on GitHub), never written by a model. The whole digest fits
`budget_tokens` by a fixed estimate (`estimate_tokens`, about four characters per
token), so every agent run pays the same bounded context at any history size.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from agent_loop_common.agents import strip_hidden
from agent_loop_common.records import CitationStatus, Grade, GradeState, LessonBook, TargetKind
from agent_loop_distiller._outcomes import pr_facts
from agent_loop_distiller._upkeep import hits_of, rank_lessons

__all__ = [
    "LESSON_SHARE",
    "estimate_tokens",
    "render_digest",
    "work_line",
    "work_lines",
]

LESSON_SHARE = 0.7
"""Share of the budget lessons get first; the rollup fills the rest (then lessons again)."""

_TITLE_CHARS = 80
_HEADER = "# agent-loop context (written by the distiller)"
_LESSONS = "## Lessons (most backed first)"
_WORK = "## Work already done (newest first, as graded on GitHub)"


def estimate_tokens(text: str) -> int:
    """Tokens of `text` by the fixed rule of about four characters per token."""
    return (len(text) + 3) // 4


def _title(text: str) -> str:
    clean = " ".join(strip_hidden(text).split()).replace('"', "'")
    return clean if len(clean) <= _TITLE_CHARS else clean[: _TITLE_CHARS - 1] + "…"


def _rounds(n: int) -> str:
    return f"{n} review round{'' if n == 1 else 's'}"


def work_line(grade: Grade) -> str:
    """One rollup line: what a builder run's PR or decomposition became."""
    title = f' "{_title(grade.target.title)}"' if grade.target.title.strip() else ""
    issue = f"issue #{grade.issue_number} -> " if grade.issue_number is not None else ""
    if grade.target.kind is TargetKind.ISSUE:
        subs = sorted(set(grade.sub_issues))
        closed = len(set(grade.sub_issues_closed) & set(subs))
        listed = ", ".join(f"#{n}" for n in subs[:8]) + (" ..." if len(subs) > 8 else "")
        return (
            f"- issue #{grade.target.number}{title} -> sub-issues {listed} "
            f"({closed} of {len(subs)} closed)"
        )
    match grade.state:
        case GradeState.MERGED:
            fate = "merged"
        case GradeState.CLOSED_UNMERGED:
            fate = "closed without merge"
        case GradeState.OPEN:
            fate = "open"
    if grade.review_rounds:
        fate += f" after {_rounds(grade.review_rounds)}"
    facts = "".join(f"; {fact}" for fact in pr_facts(grade))
    return f"- {issue}PR #{grade.target.number}{title}: {fate}{facts}"


def _opened(grade: Grade) -> datetime:
    return grade.opened_at or grade.graded_at


def work_lines(grades: Iterable[Grade]) -> list[str]:
    """Rollup lines, newest first (ties by kind and number), one per graded target."""
    latest: dict[str, Grade] = {}
    for grade in grades:
        key = grade.target.ref
        if key not in latest or grade.graded_at >= latest[key].graded_at:
            latest[key] = grade
    ordered = sorted(
        latest.values(),
        key=lambda g: (-_opened(g).timestamp(), g.target.kind.value, g.target.number or 0),
    )
    return [work_line(g) for g in ordered]


def _lesson_line(book_lesson_text: str, lesson_id: str, roles: Sequence[str], hits: int) -> str:
    who = "/".join(roles) if roles else "all"
    text = " ".join(book_lesson_text.split())
    return f"- [{lesson_id}] ({who}; backed by {hits} run{'' if hits == 1 else 's'}) {text}"


def _take(lines: Sequence[str], start: int, budget: int) -> tuple[list[str], int]:
    """Lines from `start` while their tokens (one newline each) fit `budget`."""
    taken: list[str] = []
    used = 0
    for line in lines[start:]:
        cost = estimate_tokens(line + "\n")
        if used + cost > budget:
            break
        taken.append(line)
        used += cost
    return taken, used


def render_digest(book: LessonBook, grades: Iterable[Grade], budget_tokens: int) -> str:
    """The digest, at most `budget_tokens` by `estimate_tokens`.

    Lessons get `LESSON_SHARE` of the budget first, the rollup the remainder, and
    lessons that did not fit take whatever the rollup left over. Lines are never cut.
    """
    lessons = [
        _lesson_line(lesson.text, lesson.id, [r.value for r in lesson.roles], hits_of(lesson))
        for lesson in rank_lessons(book.lessons)
        if lesson.citation_status is not CitationStatus.BROKEN  # hidden until fixed
    ]
    work = work_lines(grades)
    frame = [_HEADER, "", _LESSONS, "", _WORK]
    # Reserve the frame and the two "not shown" notes so the total stays in budget.
    reserve = estimate_tokens("\n".join(frame) + "\n") + 2 * estimate_tokens(
        "- (99999 more not shown)\n"
    )
    room = max(budget_tokens - reserve, 0)
    first, used = _take(lessons, 0, int(room * LESSON_SHARE))
    shown_work, used_work = _take(work, 0, room - used)
    more, _ = _take(lessons, len(first), room - used - used_work)
    shown_lessons = first + more
    out = [_HEADER, "", _LESSONS]
    out += shown_lessons or ["- (no lessons yet)"]
    if len(lessons) > len(shown_lessons):
        out.append(f"- ({len(lessons) - len(shown_lessons)} more not shown)")
    out += ["", _WORK]
    out += shown_work or ["- (nothing graded yet)"]
    if len(work) > len(shown_work):
        out.append(f"- ({len(work) - len(shown_work)} more not shown)")
    text = "\n".join(out) + "\n"
    if estimate_tokens(text) > budget_tokens:  # a budget too small for even the frame
        return text[: budget_tokens * 4].rsplit("\n", 1)[0] + "\n"
    return text
