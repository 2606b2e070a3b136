"""The distiller agent's tools: one itemized lesson edit per call, plus one read-only look.

Plain async functions closed over a `LessonEditor` (never traced: a replayed trace would
skip their effect on the editor). A refused edit returns text starting with
`REFUSAL_PREFIX`, so the model can correct itself and the run's trace marks the step
failed. Provenance is derived from the cited run ids, never typed by the model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated

from pydantic import Field

from agent_loop_common.agents import fence_untrusted
from agent_loop_common.records import Lesson, RunRecord
from agent_loop_common.staging import REFUSAL_PREFIX
from agent_loop_distiller._errors import EditRefused
from agent_loop_distiller._lessons import LessonEditor

__all__ = ["LessonTool", "lesson_tools", "render_record"]

LessonTool = Callable[..., Awaitable[str]]
"""An async tool function the Agent registers."""

LessonText = Annotated[
    str,
    Field(
        description="The lesson: one or two actionable sentences that generalise beyond a single issue (at most 400 characters)."
    ),
]
EvidenceIds = Annotated[
    list[str],
    Field(description="Run ids from the records that back this lesson (at least one)."),
]
Roles = Annotated[
    list[str],
    Field(description="Who the lesson is for: 'builder' and/or 'reviewer'; [] for both."),
]
General = Annotated[
    bool,
    Field(
        description="True only when the lesson holds for any repository (a habit of the "
        "agents, not a fact about this code base): the loop's other repositories read it too."
    ),
]
Cites = Annotated[
    list[str],
    Field(
        description="What the lesson names that must exist for it to hold, each "
        "'path:<file or folder>', 'symbol:<name>' (or 'symbol:<name>@<file>') or "
        "'command:<command line>'. Checked against the code before every run; a lesson "
        "whose citation disappears is hidden until you fix or retire it. [] for none."
    ),
]
NewCites = Annotated[
    list[str] | None,
    Field(description="New citations (same form as add_lesson's cites), or null to keep them."),
]
LessonId = Annotated[str, Field(description="The id of an existing lesson, e.g. 'L-1a2b3c4d'.")]
LessonIds = Annotated[list[str], Field(description="Ids of two or more existing lessons.")]
Reason = Annotated[str, Field(description="Why, in one sentence.")]
Summary = Annotated[str, Field(description="What you changed and why, in a few sentences.")]
RunId = Annotated[str, Field(description="A run id from the records.")]


def _shown(lesson: Lesson) -> str:
    return f"{lesson.id} (backed by {max(lesson.hits, len(lesson.source_run_ids))} run(s))"


def render_record(record: RunRecord, *, notes_chars: int = 4_000) -> str:
    """A record's full story for the model: attempts with verifier notes, error, trace."""
    head = (
        f"run {record.run_id}: {record.role.value} on {record.target.ref}, "
        f"outcome {record.outcome.value}, {len(record.attempts)} attempt(s)"
    )
    lines = [f"title: {record.target.title}"]
    for a in record.attempts:
        verdict = "verified" if a.verified else "REJECTED"
        lines.append(f"attempt {a.number} ({verdict}): {a.notes[:notes_chars]}")
        if a.staged_paths:
            lines.append(f"  staged: {', '.join(a.staged_paths[:20])}")
        if a.tests:
            lines.append(f"  tests: {a.tests}")
    if record.tests is not None:
        t = record.tests
        lines.append(
            f"tests: `{t.command or '(none)'}` from {t.source or '-'} in {t.backend}: "
            f"{t.status}, {t.summary}"
        )
        if t.fail_to_pass:
            lines.append(f"  fail-to-pass: {', '.join(t.fail_to_pass[:20])}")
        if t.tamper_flags:
            lines.append(f"  tampering flags: {', '.join(t.tamper_flags[:20])}")
    if record.error:
        lines.append(f"error: {record.error[:notes_chars]}")
    failed = [s for s in record.trace if not s.ok]
    lines.append(f"trace: {len(record.trace)} step(s), {len(failed)} failed")
    lines += [f"  failed {s.tool} {s.args}: {s.error}" for s in failed[:10]]
    return head + "\n" + fence_untrusted(f"run {record.run_id}", "\n".join(lines))


def lesson_tools(editor: LessonEditor, records: Mapping[str, RunRecord]) -> list[LessonTool]:
    """`add_lesson`, `confirm_lesson`, `merge_lessons`, `reword_lesson`, `retire_lesson`,
    `finish`, and the read-only `read_record`."""

    async def add_lesson(
        text: LessonText,
        evidence_run_ids: EvidenceIds,
        roles: Roles,
        general: General = False,
        cites: Cites | None = None,
    ) -> str:
        """Add a new lesson learned from the given runs. Prefer confirm_lesson when an existing lesson already says it."""
        try:
            lesson = editor.add(text, evidence_run_ids, roles, general=general, cites=cites or [])
        except EditRefused as exc:
            return f"{REFUSAL_PREFIX}{exc}"
        return f"Added {_shown(lesson)}. The book has {len(editor.lessons)} lesson(s)."

    async def confirm_lesson(lesson_id: LessonId, evidence_run_ids: EvidenceIds) -> str:
        """Record that new runs back an existing lesson (raises its hit count, keeps it fresh)."""
        try:
            lesson = editor.confirm(lesson_id, evidence_run_ids)
        except EditRefused as exc:
            return f"{REFUSAL_PREFIX}{exc}"
        return f"Confirmed {_shown(lesson)}."

    async def merge_lessons(lesson_ids: LessonIds, text: LessonText) -> str:
        """Replace overlapping lessons by one lesson with the given text; their evidence is kept."""
        try:
            lesson = editor.merge(lesson_ids, text)
        except EditRefused as exc:
            return f"{REFUSAL_PREFIX}{exc}"
        return f"Merged into {_shown(lesson)}. The book has {len(editor.lessons)} lesson(s)."

    async def reword_lesson(lesson_id: LessonId, text: LessonText, cites: NewCites = None) -> str:
        """Change the wording of a lesson (clearer, more general), or fix a stale lesson's citations; its evidence stays. A lesson whose effect is being measured gets a new id (a new wording is measured afresh)."""
        try:
            lesson = editor.reword(lesson_id, text, cites)
        except EditRefused as exc:
            return f"{REFUSAL_PREFIX}{exc}"
        if lesson.supersedes and lesson.id != str(lesson_id).strip():
            return (
                f"Reworded {lesson.supersedes[0]} as a new version {lesson.id}: its effect "
                "is measured afresh."
            )
        return f"Reworded {lesson.id}."

    async def retire_lesson(lesson_id: LessonId, reason: Reason) -> str:
        """Remove a lesson that the records show to be wrong, obsolete or harmful."""
        try:
            lesson = editor.retire(lesson_id, reason)
        except EditRefused as exc:
            return f"{REFUSAL_PREFIX}{exc}"
        return f"Retired {lesson.id}. The book has {len(editor.lessons)} lesson(s)."

    async def finish(summary: Summary) -> str:
        """Finish editing (also when nothing needed to change). Call it once, last; then reply with a short final message."""
        try:
            editor.finish(summary)
        except EditRefused as exc:
            return f"{REFUSAL_PREFIX}{exc}"
        return (
            f"Finished with {len(editor.edits)} edit(s). Reply with a short final message; "
            "do not call more tools."
        )

    async def read_record(run_id: RunId) -> str:
        """Read one run's full record: every attempt with the verifier's notes, its error and failed steps."""
        record = records.get(str(run_id).strip())
        if record is None:
            return f"{REFUSAL_PREFIX}no record {run_id!r} in this tick."
        return render_record(record)

    return [
        add_lesson,
        confirm_lesson,
        merge_lessons,
        reword_lesson,
        retire_lesson,
        finish,
        read_record,
    ]
