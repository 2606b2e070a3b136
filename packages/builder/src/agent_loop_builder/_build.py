"""The build itself, shared by a live tick and an offline replay: prepare, then attempt.

A live tick finds and claims an issue on GitHub and the benchmark replays one on a
snapshot in hand (`replay_build`), but from the issue's text and the commit on, both
run exactly this: the run's test `Checks` on the base tree (their baseline started at
once, beside everything that follows), the maintainers' instructions and the lessons
from the base commit and memory, the first prompt, and the shared attempt loop with the
builder's proposer. Only how the lessons are chosen differs: a
live run draws them (`draw_lessons`: some held out, so their effect can be measured),
a replay shows what it was asked to (all, none, or the lessons named).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Literal

import structlog

from agent_loop_builder._attempt import BuildJob, BuildProposer
from agent_loop_builder._prompts import build_prompt, render_context
from agent_loop_common.attempts import AttemptResult, attempt_loop
from agent_loop_common.checks import open_checks
from agent_loop_common.exposure import draw_lessons, work_kind_of
from agent_loop_common.memory import ContextView, MemoryLocation, read_context
from agent_loop_common.records import Role
from agent_loop_common.repo import RepoSnapshot, repository_instructions, stale_lessons
from agent_loop_common.runtime import RunScope

__all__ = ["BuildAsk", "LessonChoice", "build"]

_log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class LessonChoice:
    """Which lessons from memory a build is shown.

    `draw` is a live run's: each applicable lesson drawn in or held out (`draw_lessons`
    at `AGENT_LOOP_LESSON_HOLDOUT`), the digest beside them. A replay compares runs, so
    it chooses instead: `all` applicable lessons, `none`, or `only` the lessons named
    (for the builder, whatever their work kinds); and it shows no digest, which tells
    of runs after the replayed commit.
    """

    mode: Literal["draw", "all", "none", "only"] = "draw"
    ids: tuple[str, ...] = ()
    """The lessons named (`only`)."""

    @classmethod
    def parse(cls, text: str) -> LessonChoice:
        """`on` (every applicable lesson), `off` (none), or lesson ids, comma separated.

        Raises:
            ValueError: Empty, or a list naming no id.
        """
        value = text.strip()
        if value.lower() == "on":
            return cls("all")
        if value.lower() == "off":
            return cls("none")
        ids = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
        if not ids:
            raise ValueError(f"lessons must be on, off or lesson ids, got {text!r}")
        return cls("only", ids)

    def __str__(self) -> str:
        """How the option was written (`on`, `off`, `id1,id2`; `draw` for a live run)."""
        return {"all": "on", "none": "off", "only": ",".join(self.ids)}.get(self.mode, "draw")


@dataclass(frozen=True)
class BuildAsk:
    """What a build is asked to do, however the issue was found."""

    number: int
    """The issue's number, as the prompts name it."""
    issue_text: str
    """`read_issue`'s answer: the fenced issue and the comments a model may see."""
    request: str
    """The issue as the verifier gets it (it fences it itself)."""
    background: str = ""
    """Trusted comments for the verifier's background block."""
    labels: tuple[str, ...] = ()
    """The issue's labels (the run's work kind, for the lessons)."""
    may_decompose: bool = True
    """Whether the issue may be split into sub-issues (its depth allows it)."""
    private: bool = True
    """The repository is private (or unknown): lessons shared from others may still show."""
    lessons: LessonChoice = field(default_factory=LessonChoice)


async def build(scope: RunScope, ask: BuildAsk, snapshot: RepoSnapshot) -> AttemptResult:
    """Prepare the build of `ask` on `snapshot` and run the attempt loop on it.

    Raises:
        AgentFailed: The agent's model call failed.
        BudgetExceeded: The run's budget stopped a model call.
        VerifierError: The verifier's run failed (no verdict).
    """
    rt = scope.runtime
    async with open_checks(rt, tree=snapshot, config=snapshot) as checks:
        # The environment's build and the run on the base commit do not depend on the
        # change: they go on beside the reading and the conversation from here on.
        checks.start_baseline(scope.stage)
        await asyncio.sleep(0)  # let it start: the reads below may never suspend
        rules = await repository_instructions(snapshot)
        job = BuildJob(
            number=ask.number,
            prompt=build_prompt(
                issue_block=ask.issue_text,
                context_block=await _context(scope, ask, snapshot),
                number=ask.number,
                tries=rt.settings.max_tries,
                may_decompose=ask.may_decompose,
                instructions=rules.render(),
            ),
            issue_text=ask.issue_text,
            request=ask.request,
            background=ask.background,
            snapshot=snapshot,
            may_decompose=ask.may_decompose,
        )
        return await attempt_loop(
            scope, BuildProposer(rt, job, checks), tries=rt.settings.max_tries, checks=checks
        )


async def _context(scope: RunScope, ask: BuildAsk, snapshot: RepoSnapshot) -> str:
    """The budgeted lessons (and, live, the digest); a memory failure costs the context,
    not the run.

    Lessons whose citations are missing from the base commit are hidden and listed in
    the record (`stale_lessons`) for the distiller to fix or retire. Each other
    applicable lesson is drawn in or held out (`draw_lessons`), or chosen by
    `ask.lessons`; held-out and inapplicable lessons leave both the lesson list and the
    digest, and the record keeps every candidate's draw.
    """
    rt = scope.runtime
    choice = ask.lessons
    scope.work_kind = work_kind_of(ask.labels, role=Role.BUILDER)
    if choice.mode == "none":
        return ""
    try:
        view = await read_context(
            rt.memory,
            shared=MemoryLocation.shared_from_settings(rt.settings, rt.memory.root),
            share_from=rt.settings.share_lessons_from,
            reader_public=not ask.private,
        )
        scope.stale_lessons = await stale_lessons(snapshot, view.lessons.lessons)
    except Exception as exc:
        _log.warning("builder.context_unavailable", error=repr(exc))
        return ""
    view = view.without(stale.lesson_id for stale in scope.stale_lessons)
    if choice.mode != "draw":
        view = _chosen(view, choice)
    draw = draw_lessons(
        view.lessons.lessons,
        run_id=rt.run_id,
        role=Role.BUILDER,
        kind=scope.work_kind,
        rate=rt.settings.lesson_holdout if choice.mode == "draw" else 0.0,
    )
    hidden = draw.hidden_ids if choice.mode != "only" else set[str]()
    block, ids = render_context(view.without(hidden), token_budget=rt.settings.digest_token_budget)
    scope.lesson_ids.extend(ids)
    scope.exposures = draw.record(ids)
    return block


def _chosen(view: ContextView, choice: LessonChoice) -> ContextView:
    """A replay's view: no digest, and only the named lessons for `only`."""
    view = ContextView(digest="", lessons=view.lessons, lessons_corrupt=view.lessons_corrupt)
    if choice.mode == "only":
        wanted = set(choice.ids)
        view = view.without(x.id for x in view.lessons.lessons if x.id not in wanted)
    return view
