"""One distillation: the distiller agent edits the lesson book, and the result is checked.

The agent only proposes (through `LessonEditor`, one edit per tool call); this module
decides whether the proposal may be committed. It may not when the model failed
(`ModelFailed`) or when the edits do not hold up as a whole (`EditsRejected`: the agent
never called `finish`, or a lesson lost its provenance). Either way the caller commits
nothing, so the ledger stays where it was and the next tick sees the same records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from flyte.ai.agents import Agent, LLMCallable

from agent_loop_common.agents import AgentRun, run_agent
from agent_loop_common.records import Grade, LessonBook, RetiredLesson, RunRecord, Visibility
from agent_loop_distiller._errors import EditsRejected, ModelFailed
from agent_loop_distiller._lessons import Edit, Evidence, LessonEditor, LessonLimits, evidence_of
from agent_loop_distiller._prompts import INSTRUCTIONS, build_prompt
from agent_loop_distiller._tools import lesson_tools

__all__ = ["Distillation", "distill", "evidence_index"]


@dataclass(frozen=True)
class Distillation:
    """An accepted set of edits."""

    book: LessonBook
    """The edited book, ranked."""
    edits: list[Edit]
    """The edits in the order the agent made them."""
    summary: str
    """The agent's `finish` summary."""
    run: AgentRun
    """The agent run (trace, turns)."""
    retired: list[RetiredLesson]
    """Lessons the edits took out of the book (retired, or superseded by a merge)."""


def evidence_index(records: Sequence[RunRecord], decided: Sequence[Grade]) -> dict[str, Evidence]:
    """Every run id the agent may cite: the new records and the builder runs of decided
    grades (a PR closed unmerged is evidence about the run that opened it)."""
    index = {r.run_id: evidence_of(r) for r in records}
    for grade in decided:
        if not grade.run_id:
            continue
        refs = [grade.target.ref]
        if grade.issue_number is not None:
            refs.append(f"issue-{grade.issue_number}")
        known = index.get(grade.run_id)
        merged = tuple(dict.fromkeys([*(known.refs if known else ()), *refs]))
        index[grade.run_id] = Evidence(grade.run_id, merged, grade.graded_at)
    return index


def _check(book: LessonBook, before: LessonBook, editor: LessonEditor) -> None:
    if editor.summary is None:
        raise EditsRejected(
            f"the agent stopped without calling finish after {len(editor.edits)} edit(s); "
            "its edits are discarded"
        )
    old = {lesson.id: lesson for lesson in before.lessons}
    for lesson in book.lessons:
        if lesson.id not in old and not lesson.source_run_ids:
            raise EditsRejected(f"new lesson {lesson.id} has no evidence")
    ids = [lesson.id for lesson in book.lessons]
    if len(ids) != len(set(ids)):
        raise EditsRejected("the edited book repeats a lesson id")


async def distill(
    *,
    call_llm: LLMCallable,
    model: str,
    book: LessonBook,
    records: Sequence[RunRecord],
    decided: Sequence[Grade],
    now: datetime,
    max_turns: int,
    limits: LessonLimits | None = None,
    prompt_chars: int = 60_000,
    repo: str = "",
    visibility: Visibility = "",
    measured: frozenset[str] = frozenset(),
) -> Distillation:
    """Let the agent edit `book` from the evidence, and accept or refuse the result
    (`measured`: lessons whose effect is being measured, reworded as new versions).

    Raises:
        ModelFailed: the model call failed or the turn limit was reached.
        EditsRejected: the edits cannot be committed as a whole.
    """
    by_id: Mapping[str, RunRecord] = {r.run_id: r for r in records}
    editor = LessonEditor(
        book=book,
        evidence=evidence_index(records, decided),
        now=now,
        limits=limits or LessonLimits(),
        repo=repo,
        visibility=visibility,
        measured=measured,
    )
    agent = Agent(
        name="distiller",
        instructions=INSTRUCTIONS,
        model=model,
        tools=lesson_tools(editor, by_id),
        call_llm=call_llm,
        max_turns=max_turns,
        parallel_tool_calls=False,
    )
    prompt = build_prompt(book, records, decided, max_chars=prompt_chars)
    run = await run_agent(agent, prompt)
    if not run.ok:
        raise ModelFailed(f"distiller agent failed: {run.result.error}", run.trace)
    result = editor.result()
    try:
        _check(result, book, editor)
    except EditsRejected as exc:
        raise EditsRejected(str(exc), run.trace) from None
    return Distillation(
        book=result,
        edits=list(editor.edits),
        summary=editor.summary or "",
        run=run,
        retired=list(editor.retired),
    )
