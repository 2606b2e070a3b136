"""Lessons proven by replay: mined instances replayed with and without a new lesson.

Live evidence is slow: a lesson is shown or held out of real runs as they come, a few a
day. With `AGENT_LOOP_LESSON_REPLAY=on` the distiller also replays each lesson that is
still proving on instances mined from the repository's own history (`agent-loop eval
mine`: a merged fix's issue, its base commit, hidden tests from the fix), twice each:
the builder shown only that lesson, and the builder shown no lesson at all. Same
instance, same base, same problem: the pair differs by the lesson alone, so only the
pairs resolved on one side count (`_effect.replay_e_values`, McNemar's sign test made
always valid), and no model of the loop judges anything.

```python
plan = plan_replays(book, stored, instances, max_instances=10)   # pure: what to replay
done = await run_replays(call, plan, budget_calls=200, now=now)  # the eval's task, by name
book = with_replays(book, done)                                  # pairs kept on the lessons
```

What applies: a lesson for the builder (its roles), still `proving`, replayed on fewer
than `max_instances` pairs that count (and tried on fewer than twice that); an instance
of the same repository, not tried for it yet, and not one of the lesson's own sources (a
lesson learned from the run that fixed an issue would hand its replay the answer: its
`source_refs` name that issue or pull request). Instances whose reference fix touches a
path the lesson cites come first, then the newest (an older instance is likelier to be
remembered by the model). The eval's own leakage rule holds for everything else: no
later commit and none of the fix reaches the build.

The eval's task is called by name (`REPLAY_TASK`, `call_task_by_name`): the distiller
imports neither the eval nor the builder (an import contract holds it). The budget is
model calls per tick: a pair starts only while the tick has spent fewer, and a pair
whose build failed, or a call that failed, ends the tick's replays (what failed one
instance fails the next).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import structlog
from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from agent_loop_common.records import (
    Lesson,
    LessonBook,
    LessonReplay,
    LessonState,
    ReplayArm,
    ReplayPair,
    Role,
    TraceStep,
)

__all__ = [
    "REPLAY_TASK",
    "ReplayCall",
    "ReplayInstance",
    "Replayed",
    "plan_replays",
    "read_replay_instances",
    "replay_candidates",
    "run_replays",
    "wants_replay",
    "with_replays",
]

_log = structlog.get_logger(__name__)

REPLAY_TASK = "eval.eval_instance"
"""The eval's per-instance task (`agent_loop_eval.env.eval_instance`), called by name:
`instance` (SWE-bench's fields), `lessons` (`off`, or lesson ids) and `model` ("" for
the deployment's) in, one instance's result out."""

ReplayCall = Callable[[Mapping[str, Any], str], Awaitable[Mapping[str, Any]]]
"""Replays one instance with a lessons choice (`off`, or a lesson id) and returns the
eval's result as plain data (`resolved`, `outcome`, `lesson_ids`, `llm_calls`, ...)."""

_DIFF_PATH = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)


class ReplayInstance(BaseModel):
    """One mined instance as the distiller reads it: what choosing needs, and every
    other field carried through unread to the eval's task."""

    model_config = ConfigDict(extra="allow", frozen=True)

    instance_id: str
    repo: str
    base_commit: str
    created_at: AwareDatetime
    patch: str = ""
    """The reference fix (never shown to a build): which paths it touches ranks the
    instances for a lesson that cites paths."""
    issue_numbers: list[int] = Field(default_factory=list[int])
    pull_number: int = 0
    FAIL_TO_PASS: list[str] = Field(default_factory=list[str])
    PASS_TO_PASS: list[str] = Field(default_factory=list[str])
    """Both as lists: SWE-bench's published files hold them as JSON text, which the
    eval's `Instance` decodes but the type a cluster guesses for its task does not (the
    validators stay with the eval's code), so they cross decoded."""

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _decode_test_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value) if value.strip() else []
            except json.JSONDecodeError as exc:
                raise ValueError(f"not a JSON list of test ids: {exc}") from None
        return value

    @property
    def refs(self) -> set[str]:
        """The issues and pull request it was mined from, as lessons cite their sources
        (`issue-12`, `pr-15`)."""
        return {f"issue-{n}" for n in self.issue_numbers} | (
            {f"pr-{self.pull_number}"} if self.pull_number else set()
        )

    @property
    def fix_paths(self) -> set[str]:
        """The paths its reference fix changes."""
        return {p for pair in _DIFF_PATH.findall(self.patch) for p in pair}


def read_replay_instances(path: Path, repo: str) -> list[ReplayInstance]:
    """The instances of `repo` in the JSON lines file at `path` (none when it is missing).

    A line that is not an instance is skipped and logged, never fatal: the file is
    `eval mine`'s, and one bad line must not stop a distiller tick.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    found: list[ReplayInstance] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            instance = ReplayInstance.model_validate_json(line)
        except ValidationError as exc:
            _log.warning("distiller.replay_bad_instance", file=str(path), line=number,
                         error=str(exc.errors()[:1]))  # fmt: skip
            continue
        if instance.repo.lower() == repo.lower():
            found.append(instance)
    return found


def wants_replay(lesson: Lesson, max_instances: int) -> bool:
    """Whether the lesson is one replays can still decide: the builder's, proving, with
    fewer than `max_instances` counted pairs and `2 * max_instances` tried."""
    replay = lesson.replay or LessonReplay()
    return (
        lesson.state is LessonState.PROVING
        and lesson.applies_to(Role.BUILDER, None)
        and replay.counted < max_instances
        and len(replay.pairs) < 2 * max_instances
    )


def replay_candidates(lesson: Lesson, instances: Sequence[ReplayInstance]) -> list[ReplayInstance]:
    """The instances the lesson may be replayed on, best first: not tried for it, not
    among its sources; those whose fix touches a path it cites first, then the newest.

    An instance's kind of work is unknown (its issue's labels are not mined), so a
    lesson's work kinds do not narrow the choice: the build is shown the lesson named.
    """
    replay = lesson.replay or LessonReplay()
    sources = set(lesson.source_refs)
    cited = {c.value.strip("/") for c in lesson.citations if c.kind == "path"}

    def touches(instance: ReplayInstance) -> bool:
        return any(p == c or p.startswith(f"{c}/") for p in instance.fix_paths for c in cited)

    fresh = [i for i in instances if not replay.tried(i.instance_id) and not (i.refs & sources)]
    return sorted(fresh, key=lambda i: (not touches(i), -i.created_at.timestamp()))


def plan_replays(
    book: LessonBook,
    stored: LessonBook,
    instances: Sequence[ReplayInstance],
    *,
    max_instances: int,
) -> list[tuple[Lesson, ReplayInstance]]:
    """Every pair the tick may replay, in the order it should: round robin over the
    lessons (fewest counted pairs first, then the newest), each lesson's instances best
    first, at most what each lesson still needs.

    Only lessons of `stored` (the book in memory, which the eval's build reads) with the
    same text as in `book` are replayed: the build must be shown the very lesson.
    """
    in_memory = {x.id: x.text for x in stored.lessons}
    lessons = [
        x for x in book.lessons if in_memory.get(x.id) == x.text and wants_replay(x, max_instances)
    ]
    lessons.sort(key=lambda x: (x.replay.counted if x.replay else 0, -x.created_at.timestamp()))
    queues: list[tuple[Lesson, list[ReplayInstance]]] = []
    for lesson in lessons:
        replay = lesson.replay or LessonReplay()
        room = min(max_instances - replay.counted, 2 * max_instances - len(replay.pairs))
        queues.append((lesson, replay_candidates(lesson, instances)[:room]))
    plan: list[tuple[Lesson, ReplayInstance]] = []
    depth = max((len(q) for _, q in queues), default=0)
    for k in range(depth):
        plan += [(lesson, q[k]) for lesson, q in queues if k < len(q)]
    return plan


@dataclass
class Replayed:
    """What one tick's replays did."""

    pairs: dict[str, list[ReplayPair]] = field(default_factory=dict[str, list[ReplayPair]])
    """Lesson id -> the pairs replayed for it this tick, in order."""
    llm_calls: int = 0
    """Model calls the pairs spent (both builds, verifiers included)."""
    cost_usd: float = 0.0
    planned: int = 0
    """Pairs the plan held (the budget may stop before the end)."""
    stopped: str = ""
    """Why the replays stopped before the plan's end (the budget, a failure)."""
    steps: list[TraceStep] = field(default_factory=list[TraceStep])
    """One step per pair, for the distiller run's record."""

    @property
    def count(self) -> int:
        """Pairs replayed."""
        return sum(len(p) for p in self.pairs.values())


def _arm(data: Mapping[str, Any], lesson_id: str) -> ReplayArm:
    ids = cast("list[Any]", data.get("lesson_ids") or [])
    return ReplayArm(
        resolved=bool(data.get("resolved")),
        outcome=str(data.get("outcome") or "error"),
        lesson_shown=lesson_id in ids,
        llm_calls=int(data.get("llm_calls") or 0),
        tokens=int(data.get("tokens_in") or 0) + int(data.get("tokens_out") or 0),
        cost_usd=float(data.get("cost_usd") or 0.0),
        error=str(data.get("error") or ""),
    )


def _shown_first(lesson_id: str, instance_id: str) -> bool:
    """Which build of a pair runs first, drawn by hash: the order is no systematic
    difference between the two sides (a warm cache, a model's drift)."""
    digest = hashlib.sha256(f"agent-loop/replay-order\0{lesson_id}\0{instance_id}".encode())
    return digest.digest()[0] % 2 == 0


def _pair(lesson_id: str, instance: ReplayInstance, on: ReplayArm, off: ReplayArm,
          all_off: list[Any], now: datetime) -> ReplayPair:  # fmt: skip
    """The pair, counted only when it compares what it should."""
    note = ""
    if on.outcome == "error" or on.error or off.outcome == "error" or off.error:
        note = f"a build failed: {(on.error or off.error or 'error')[:200]}"
    elif not on.lesson_shown:
        note = "the lesson did not reach the prompt (a citation missing at the base, or the budget)"
    elif all_off:
        note = "the build without it was shown lessons"
    return ReplayPair(
        instance_id=instance.instance_id,
        base_commit=instance.base_commit,
        at=now,
        with_lesson=on,
        without=off,
        counted=not note,
        note=note,
    )


async def run_replays(
    call: ReplayCall,
    plan: Iterable[tuple[Lesson, ReplayInstance]],
    *,
    budget_calls: int,
    now: datetime,
    stopping: Callable[[], bool] = lambda: False,
) -> Replayed:
    """Replay the plan's pairs in order while the tick has spent fewer than
    `budget_calls` model calls and `stopping()` is false (the operator's stop, checked
    before each pair); never raises for a failed call (it ends the replays).

    Each pair is two calls of the eval's task: `lessons=<the lesson's id>` and
    `lessons=off`, in an order drawn per pair (`_shown_first`). A failed call records
    nothing for its pair; a build that failed records the pair as not counted; both end
    the tick's replays.
    """
    out = Replayed()
    todo = list(plan)
    out.planned = len(todo)
    for lesson, instance in todo:
        if out.llm_calls >= budget_calls:
            out.stopped = f"the tick's budget of {budget_calls} model calls is spent"
            break
        if stopping():
            out.stopped = "stopped by the operator"
            break
        data = instance.model_dump(mode="json")
        started = time.perf_counter()
        results: dict[str, Mapping[str, Any]] = {}
        choices = [lesson.id, "off"] if _shown_first(lesson.id, instance.instance_id) else [
            "off", lesson.id
        ]  # fmt: skip
        try:
            for choice in choices:
                results[choice] = await call(data, choice)
        except Exception as exc:  # the task itself failed (not deployed, the cluster)
            out.stopped = f"the eval's task failed: {type(exc).__name__}: {exc}"[:300]
            out.steps.append(
                _step(lesson.id, instance.instance_id, _ms(started), error=out.stopped)
            )
            _log.warning("distiller.replay_failed", lesson=lesson.id,
                         instance=instance.instance_id, error=out.stopped)  # fmt: skip
            break
        on, off = _arm(results[lesson.id], lesson.id), _arm(results["off"], lesson.id)
        shown_off = cast("list[Any]", results["off"].get("lesson_ids") or [])
        pair = _pair(lesson.id, instance, on, off, shown_off, now)
        out.pairs.setdefault(lesson.id, []).append(pair)
        out.llm_calls += on.llm_calls + off.llm_calls
        out.cost_usd += on.cost_usd + off.cost_usd
        out.steps.append(_step(lesson.id, instance.instance_id, _ms(started), pair=pair))
        _log.info("distiller.replayed", lesson=lesson.id, instance=instance.instance_id,
                  with_lesson=on.resolved, without=off.resolved, counted=pair.counted)  # fmt: skip
        if on.outcome == "error" or off.outcome == "error" or on.error or off.error:
            out.stopped = pair.note
            break
    return out


def _ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def _step(lesson_id: str, instance_id: str, ms: int, *, pair: ReplayPair | None = None,
          error: str = "") -> TraceStep:  # fmt: skip
    """The pair as a step of the distiller run's trace."""
    if pair is None:
        return TraceStep(tool="replay_lesson", args=f"{lesson_id} {instance_id}", ok=False,
                         ms=ms, error=error)  # fmt: skip

    def side(arm: ReplayArm) -> str:
        return "resolved" if arm.resolved else f"not resolved ({arm.outcome})"

    args = (
        f"{lesson_id} {instance_id} -> with it: {side(pair.with_lesson)}; "
        f"without: {side(pair.without)}" + ("" if pair.counted else f" [not counted: {pair.note}]")
    )
    return TraceStep(tool="replay_lesson", args=args[:300], ok=pair.counted, ms=ms,
                     error="" if pair.counted else pair.note[:300])  # fmt: skip


def with_replays(book: LessonBook, replayed: Replayed) -> LessonBook:
    """The book with each lesson's new pairs added to its replay evidence."""
    if not replayed.pairs:
        return book
    lessons: list[Lesson] = []
    for lesson in book.lessons:
        new = replayed.pairs.get(lesson.id)
        if new:
            before = lesson.replay.pairs if lesson.replay else []
            lesson = lesson.model_copy(update={"replay": LessonReplay(pairs=[*before, *new])})
        lessons.append(lesson)
    return book.model_copy(update={"lessons": lessons})
