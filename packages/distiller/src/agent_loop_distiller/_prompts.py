"""The distiller agent's instructions and the prompt built from a tick's evidence.

Evidence is ordered by signal: rejected attempts with the verifier's notes first (the
most specific account of what went wrong), then other failures, then what humans
decided on GitHub (PRs merged or closed unmerged), then successes. The prompt is capped
at `max_chars`; whatever does not fit is listed by run id for `read_record`.
Everything that came from people or models is fenced as untrusted data.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_loop_common.agents import UNTRUSTED_DATA_RULE, fence_untrusted
from agent_loop_common.metrics import SUCCESS_OUTCOMES
from agent_loop_common.records import (
    CitationStatus,
    Grade,
    GradeState,
    Lesson,
    LessonAuthor,
    LessonBook,
    Outcome,
    RunRecord,
    TargetKind,
)
from agent_loop_distiller._diagnosis import cues_of
from agent_loop_distiller._lessons import LessonLimits
from agent_loop_distiller._outcomes import pr_facts
from agent_loop_distiller._upkeep import hits_of, rank_lessons

__all__ = [
    "DISTILLER_MARKER",
    "INSTRUCTIONS",
    "JUDGE_INSTRUCTIONS",
    "JUDGE_MARKER",
    "REWORD_INSTRUCTIONS",
    "REWORD_MARKER",
    "build_prompt",
    "evidence_order",
    "judge_prompt",
    "reword_prompt",
]

DISTILLER_MARKER = "You maintain the lesson book of agent-loop"
"""A phrase of the instructions (scripted models route on it)."""

INSTRUCTIONS = f"""{DISTILLER_MARKER}: short, general, actionable advice that the
builder agent (turns GitHub issues into pull requests) and the reviewer agent (reviews
and fixes those pull requests) read before they work.

You get the current lessons and the evidence from new runs: rejected attempts with the
strict verifier's notes (the best signal), other failures, what humans did with the
agents' pull requests (merged, closed without merging), and successes.

Edit the book item by item with the tools; never rewrite it wholesale:
- add_lesson for a new, general lesson backed by run ids from the evidence;
- confirm_lesson when new runs back an existing lesson;
- merge_lessons when lessons overlap; reword_lesson to make one clearer;
- retire_lesson when the evidence shows a lesson is wrong or obsolete.
When a lesson names files, functions or commands, cite them (cites) so that a lesson
whose code moved is caught. A lesson marked STALE names something that is gone from the
code: no run sees it until you fix it (reword_lesson with the new text and cites) or
retire it. Lessons marked pinned or written by a maintainer can only be confirmed.
Cite only run ids that appear in the evidence. A lesson must help on future issues, not
describe one issue. Keep the book small ({LessonLimits().max_lessons} lessons at most).
If nothing is worth changing, change nothing. Always end with finish(summary), then
reply with one short sentence.

{UNTRUSTED_DATA_RULE}"""


def _priority(record: RunRecord) -> int:
    if any(not a.verified for a in record.attempts):
        return 0
    if record.outcome not in SUCCESS_OUTCOMES and record.outcome not in (
        Outcome.SKIPPED,
        Outcome.BACKED_OFF,
    ):
        return 1
    return 2


def evidence_order(records: Sequence[RunRecord]) -> list[RunRecord]:
    """Rejected attempts first, then other failures, then the rest; oldest first within."""
    return sorted(records, key=lambda r: (_priority(r), r.finished_at, r.run_id))


def _record_block(record: RunRecord, notes_chars: int) -> str:
    head = (
        f"- run {record.run_id} ({record.role.value}, {record.target.ref}, "
        f"outcome {record.outcome.value}, {len(record.attempts)} attempt(s))"
    )
    lines = [f"title: {record.target.title}"]
    for a in record.attempts:
        if not a.verified:
            lines.append(f"attempt {a.number} rejected, verifier notes: {a.notes[:notes_chars]}")
        else:
            lines.append(f"attempt {a.number} verified")
        if a.tests:
            lines.append(f"  tests: {a.tests}")
    if record.tests is not None:
        lines.append(_tests_line(record))
    if record.error:
        lines.append(f"error: {record.error[:notes_chars]}")
    return head + "\n" + fence_untrusted(f"run {record.run_id}", "\n".join(lines), notes_chars * 2)


def _tests_line(record: RunRecord) -> str:
    """The run's test evidence in one line (command, result, flags)."""
    tests = record.tests
    if tests is None:
        return ""
    where = f"`{tests.command}` from {tests.source}" if tests.command else "no command"
    flags = f"; tampering flags: {', '.join(tests.tamper_flags)}" if tests.tamper_flags else ""
    status = _TEST_STATUS.get(tests.status, tests.status)
    return f"tests ({where}, {tests.backend}): {status}, {tests.summary}{flags}"


_TEST_STATUS = {
    "tampered": (
        "TAMPERED (the change's code reached into the test runner; its results cannot be "
        "trusted; not a test pass)"
    ),
    "no_evidence": "NO EVIDENCE (the tests ran but prove nothing; not a test pass)",
    "not_run": "NOT RUN (no tests ran; not a test pass)",
}
"""How a status other than a verdict reads in the prompt: never mistaken for a pass."""


def _grade_line(grade: Grade) -> str:
    who = f" (builder run {grade.run_id})" if grade.run_id else ""
    if grade.target.kind is TargetKind.ISSUE:
        return (
            f"- issue #{grade.target.number}{who}: every one of its "
            f"{len(set(grade.sub_issues))} sub-issues was closed"
        )
    fate = "merged" if grade.state is GradeState.MERGED else "closed WITHOUT merging"
    issue = f" for issue #{grade.issue_number}" if grade.issue_number is not None else ""
    facts = "".join(f"; {fact}" for fact in pr_facts(grade))
    return (
        f"- PR #{grade.target.number}{issue}{who}: {fate} by a human after "
        f"{grade.review_rounds} review round(s){facts}"
    )


def build_prompt(
    book: LessonBook,
    records: Sequence[RunRecord],
    decided: Sequence[Grade],
    *,
    max_chars: int = 60_000,
    notes_chars: int = 2_000,
) -> str:
    """The user message of one distillation: current lessons, then the evidence."""
    lessons = rank_lessons(book.lessons)
    parts = [f"## Current lessons ({len(lessons)})"]
    if not lessons:
        parts.append("(none yet)")
    for lesson in lessons:
        roles = "/".join(r.value for r in lesson.roles) or "all"
        marks = [roles, f"backed by {hits_of(lesson)} run(s)"]
        if lesson.pinned:
            marks.append("pinned")
        if lesson.author is LessonAuthor.MAINTAINER:
            marks.append("written by a maintainer")
        if lesson.citations:
            marks.append("cites " + ", ".join(c.label() for c in lesson.citations))
        if lesson.citation_status is CitationStatus.BROKEN:
            marks.append(f"STALE, {lesson.stale_reason}")
        parts.append(f"- {lesson.id} [{'; '.join(marks)}]")
        parts.append(fence_untrusted(f"lesson {lesson.id}", lesson.text, 1_000))
    if decided:
        parts.append("\n## Decided by humans on GitHub since the last tick")
        parts += [_grade_line(g) for g in decided]
    parts.append(f"\n## New run records ({len(records)}), rejected attempts first")
    used = sum(len(p) + 1 for p in parts)
    left_out: list[str] = []
    for record in evidence_order(records):
        block = _record_block(record, notes_chars)
        if used + len(block) + 1 > max_chars:
            left_out.append(record.run_id)
            continue
        parts.append(block)
        used += len(block) + 1
    if left_out:
        parts.append(
            f"\n{len(left_out)} more record(s) did not fit; read them with read_record: "
            + ", ".join(left_out)
        )
    parts.append("\nEdit the lessons with the tools, then call finish.")
    return "\n".join(parts)


JUDGE_MARKER = "You judge whether one run of an agent acted on one lesson"
"""A phrase of the compliance judge's instructions (scripted models route on it)."""

JUDGE_INSTRUCTIONS = f"""{JUDGE_MARKER} of the advice it
may have been shown. You get the lesson and a summary of the run: what it worked on and
every tool call it made, in order. Decide whether the run did what the lesson advises
(whether or not it was shown the lesson; say false when the lesson did not come up).

Reply with exactly one JSON value and nothing else: true if the run acted on the
lesson, false if it did not.

{UNTRUSTED_DATA_RULE}"""

REWORD_MARKER = "You rewrite one lesson of agent-loop's lesson book"
"""A phrase of the rewording instructions (scripted models route on it)."""

REWORD_INSTRUCTIONS = f"""{REWORD_MARKER}. Runs that are shown
this lesson do not act on it any more than runs that are not shown it, so its wording
does not work. Write a new version that keeps its meaning and is prescriptive: one or two
sentences saying what to do, naming the exact command, file or API to use in backticks
(for example `make lint` or `src/app/config.py`). Do not start with "never", "don't" or
"avoid": say what to do instead.

Reply with exactly one JSON object and nothing else: {{"text": "<the new lesson>"}}.

{UNTRUSTED_DATA_RULE}"""

_TRACE_STEPS = 80
_STEP_CHARS = 200


def judge_prompt(lesson: Lesson, record: RunRecord) -> str:
    """The user message of one compliance judgment: the lesson, then the run's trace."""
    kind = record.work_kind.value if record.work_kind is not None else "unknown"
    lines = [
        f"{record.role.value} run on {record.target.ref} ({kind} work), "
        f"outcome {record.outcome.value}",
        f"title: {record.target.title}",
        f"tool calls ({len(record.trace)}):",
    ]
    for step in record.trace[:_TRACE_STEPS]:
        mark = "" if step.ok else " [failed]"
        lines.append(f"- {step.tool} {step.args[:_STEP_CHARS]}{mark}")
    if len(record.trace) > _TRACE_STEPS:
        lines.append(f"... {len(record.trace) - _TRACE_STEPS} more step(s)")
    return "\n".join(
        [
            "## The lesson",
            fence_untrusted(f"lesson {lesson.id}", lesson.text, 1_000),
            "## The run",
            fence_untrusted(f"run {record.run_id}", "\n".join(lines), 12_000),
            "Did this run act on this lesson? Reply true or false.",
        ]
    )


def reword_prompt(lesson: Lesson, why: str) -> str:
    """The user message of one rewording: the lesson, what it cites, and its diagnosis."""
    parts = ["## The lesson", fence_untrusted(f"lesson {lesson.id}", lesson.text, 1_000)]
    if lesson.citations:
        parts.append("It cites: " + ", ".join(c.label() for c in lesson.citations))
    named = cues_of(lesson)
    if named:
        parts.append(
            "Keep naming at least one of what it names: " + ", ".join(f"`{cue}`" for cue in named)
        )
    parts.append(f"## What the measurements say\n{why}")
    parts.append('Reply with {"text": "..."} only.')
    return "\n".join(parts)
