"""Lessons proven by replay: the sign test's e-values, what is replayed, the budget.

The e-values are checked exactly (closed form) and for what makes them usable: under
the null, the chance that one ever reaches 40 however long it is watched stays under
1/40. The selection and the pairing are driven through `plan_replays` and
`run_replays` with the eval's task answered by `ScriptedEvalTask`; the whole path (the
task called by name in Flyte local mode) is `tests/test_e2e_lesson_replay.py`.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_loop_common.records import (
    Citation,
    Lesson,
    LessonBook,
    LessonReplay,
    LessonState,
    OutcomeMetric,
    ReplayArm,
    ReplayPair,
    Role,
)
from agent_loop_distiller import (
    EffectBook,
    EffectPolicy,
    LessonEffect,
    Replayed,
    ReplayInstance,
    decide,
    fold,
    measure_effects,
    plan_replays,
    read_replay_instances,
    replay_candidates,
    replay_e_values,
    run_replays,
    with_replays,
)
from agent_loop_testing import ScriptedEvalTask

NOW = datetime(2026, 12, 4, tzinfo=UTC)
REPO = "acme/calc"


def _lesson(suffix: str, **update: object) -> Lesson:
    base = Lesson(
        id=f"{REPO}#L-{suffix}",
        text=f"Advice {suffix}: run `make test`.",
        created_at=NOW,
        updated_at=NOW,
        repo=REPO,
    )
    return base.model_copy(update=update)


def _instance(n: int, *, days: int = 0, paths: tuple[str, ...] = ("src/calc.py",),
              repo: str = REPO) -> ReplayInstance:  # fmt: skip
    patch = "".join(f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n" for p in paths)
    return ReplayInstance.model_validate(
        {
            "instance_id": f"{repo.replace('/', '__')}-{n}",
            "repo": repo,
            "base_commit": f"{n:040x}",
            "created_at": (NOW - timedelta(days=days)).isoformat(),
            "patch": patch,
            "problem_statement": f"Issue {n}",
            "FAIL_TO_PASS": '["tests/test_calc.py::test_x"]',
            "issue_numbers": [n],
            "pull_number": 100 + n,
        }
    )


def _arm(resolved: bool) -> ReplayArm:
    return ReplayArm(resolved=resolved, outcome="change", lesson_shown=True, llm_calls=3)


def _pair(n: int, on: bool, off: bool) -> ReplayPair:
    return ReplayPair(
        instance_id=f"i-{n}",
        at=NOW,
        with_lesson=_arm(on),
        without=_arm(off).model_copy(update={"lesson_shown": False}),
        counted=True,
    )


# ------------------------------------------------------------------ the e-values


def test_the_sign_tests_e_values_in_closed_form() -> None:
    assert replay_e_values(0, 0) == (1.0, 1.0)
    assert replay_e_values(6, 0) == (127 / 7, 1 / 7)  # 2^7 - 1 over 7
    assert math.isclose(replay_e_values(8, 0)[0], 511 / 9)
    help_e, harm_e = replay_e_values(3, 1)
    assert replay_e_values(1, 3) == (harm_e, help_e)  # the mirror image
    # The average over q' of the likelihood ratio, by numerical integration.
    w, loss = 5, 2
    steps = 20_000
    integral = sum(
        ((0.5 + (k + 0.5) / (2 * steps)) ** w) * ((0.5 - (k + 0.5) / (2 * steps)) ** loss)
        for k in range(steps)
    ) / (2 * steps)
    assert math.isclose(replay_e_values(w, loss)[0], 2 ** (w + loss) * 2 * integral, rel_tol=1e-6)
    # More wins, more evidence; a tie is evidence for neither side.
    assert replay_e_values(7, 0)[0] < policy_bar() < replay_e_values(8, 0)[0]
    assert replay_e_values(3, 3)[0] < 1
    assert replay_e_values(3, 3)[1] < 1


def policy_bar() -> float:
    return EffectPolicy().threshold


def test_under_the_null_an_e_value_rarely_ever_reaches_the_bar() -> None:
    """A lesson with no effect: each discordant pair is a fair coin. Watched after every
    pair for 60 pairs, the chance its help e-value ever reaches 40 is under 1/40 (Ville);
    a fixed-sample test looked at that often would be fooled far more."""
    rng = random.Random(5)
    series, crossed = 2_000, 0
    for _ in range(series):
        wins = losses = 0
        for _ in range(60):
            if rng.random() < 0.5:
                wins += 1
            else:
                losses += 1
            if replay_e_values(wins, losses)[0] >= policy_bar():
                crossed += 1
                break
    assert crossed / series < 1 / 40


def test_replay_evidence_multiplies_the_live_e_value() -> None:
    policy = EffectPolicy()
    effect = LessonEffect(lesson_id="L")
    metric = OutcomeMetric.FIRST_TRY_TESTS
    k = 0
    while effect.help.e_value < 12:
        shown = k % 5 != 0
        fold(effect, [("r|feature", shown, 0.2, ((metric, 1.0 if shown else 0.0),))], policy)
        k += 1
    assert decide(effect, policy) is LessonState.PROVING
    assert decide(effect, policy, (2, 0)) is LessonState.PROVING  # 12 x 2.33
    assert decide(effect, policy, (3, 0)) is LessonState.PROVEN  # 12 x 3.75
    assert decide(effect, policy, (3, 3)) is LessonState.PROVING
    # Replays alone decide, in both directions.
    fresh = LessonEffect(lesson_id="F")
    assert decide(fresh, policy, (8, 0)) is LessonState.PROVEN
    assert decide(fresh, policy, (0, 8)) is LessonState.HARMFUL
    assert decide(fresh, policy, (7, 0)) is LessonState.PROVING


def test_measure_effects_decides_a_replayed_lesson_and_retires_a_harmful_one() -> None:
    good = _lesson("good", replay=LessonReplay(pairs=[_pair(i, True, False) for i in range(8)]))
    bad = _lesson("bad", replay=LessonReplay(pairs=[_pair(i, False, True) for i in range(8)]))
    untouched = _lesson(
        "none", replay=LessonReplay(pairs=[_pair(i, True, False) for i in range(8)])
    )
    book = LessonBook(lessons=[good, bad, untouched])
    effects = EffectBook()
    out = measure_effects(effects, book, [], NOW, replayed=[good.id, bad.id])
    assert out.changed == {good.id: LessonState.PROVEN, bad.id: LessonState.HARMFUL}
    assert [x.id for x in out.book.lessons] == [good.id, untouched.id]
    (gone,) = out.retired
    assert gone.lesson.id == bad.id
    assert "replay: 8 pair(s): 0 resolved only with it, 8 only without" in gone.reason
    # A lesson whose replays did not grow this tick is not decided again here.
    assert untouched.id not in effects.lessons


# ------------------------------------------------------------------ what is replayed


def test_candidates_skip_tried_instances_and_the_lessons_own_sources() -> None:
    lesson = _lesson(
        "a",
        source_refs=["issue-2", "pr-105"],
        citations=[Citation(kind="path", value="src/io")],
        replay=LessonReplay(pairs=[_pair(0, True, False).model_copy(
            update={"instance_id": f"{REPO.replace('/', '__')}-1"})]),
    )  # fmt: skip
    instances = [
        _instance(1),  # tried already
        _instance(2),  # the issue it was learned from
        _instance(5),  # the pull request it was learned from (pr-105)
        _instance(3, days=1),
        _instance(4, days=9, paths=("src/io/read.py",)),  # touches a cited path
        _instance(6, days=0),
    ]
    got = [i.instance_id.rsplit("-", 1)[1] for i in replay_candidates(lesson, instances)]
    assert got == ["4", "6", "3"]  # the cited path first, then the newest


def test_the_plan_takes_turns_and_keeps_to_what_each_lesson_needs(tmp_path: Path) -> None:
    old = _lesson("old", created_at=NOW - timedelta(days=3))
    new = _lesson("new")
    half = _lesson(
        "half", replay=LessonReplay(pairs=[_pair(90 + i, True, False) for i in range(2)])
    )
    proven = _lesson("proven", state=LessonState.PROVEN)
    reviewer = _lesson("rev", roles=[Role.REVIEWER])
    edited = _lesson("edited")
    book = LessonBook(lessons=[old, new, half, proven, reviewer, edited])
    stored = book.model_copy(
        update={"lessons": [*book.lessons[:-1], edited.model_copy(update={"text": "before"})]}
    )
    mined = [_instance(n, days=n) for n in range(1, 5)] + [_instance(9, repo="acme/other")]
    path = tmp_path / "instances.jsonl"
    path.write_text("".join(i.model_dump_json() + "\n" for i in mined))
    instances = read_replay_instances(path, REPO)  # another repository's left out
    plan = plan_replays(book, stored, instances, max_instances=3)
    got = [(lesson.id.rsplit("-", 1)[1], i.instance_id.rsplit("-", 1)[1]) for lesson, i in plan]
    # Fewest counted pairs first (new before old: newer), round robin, `half` needs one.
    assert got == [
        ("new", "1"), ("old", "1"), ("half", "1"),
        ("new", "2"), ("old", "2"),
        ("new", "3"), ("old", "3"),
    ]  # fmt: skip


def test_the_instances_file_is_read_leniently(tmp_path: Path) -> None:
    path = tmp_path / "instances.jsonl"
    assert read_replay_instances(path, REPO) == []  # not mined yet
    lines = [
        _instance(1).model_dump_json(),
        "not json",
        '{"instance_id": "x"}',
        "",
        _instance(2, repo="acme/other").model_dump_json(),
        _instance(3).model_dump_json(),
    ]
    path.write_text("\n".join(lines) + "\n")
    got = read_replay_instances(path, "ACME/calc")
    assert [i.instance_id for i in got] == ["acme__calc-1", "acme__calc-3"]
    # Every field travels to the eval's task, the ones not read here included; the test
    # lists decoded (SWE-bench's JSON text: a cluster's guessed type takes lists only).
    sent = got[0].model_dump(mode="json")
    assert sent["FAIL_TO_PASS"] == ["tests/test_calc.py::test_x"]
    assert sent["problem_statement"] == "Issue 1"


# ------------------------------------------------------------------ pairs and budget


async def test_pairs_count_only_what_compares_the_lesson_and_the_budget_stops_them() -> None:
    lesson = _lesson("a")
    ids = [f"acme__calc-{n}" for n in range(1, 6)]
    table = {(i, c): c != "off" for i in ids for c in (lesson.id, "off")}
    task = ScriptedEvalTask(table, llm_calls=4, unshown={ids[1]})
    plan = [(lesson, _instance(n)) for n in range(1, 6)]
    done = await run_replays(task, plan, budget_calls=20, now=NOW)
    # 8 calls per pair: the third pair starts at 16 < 20, the fourth would at 24.
    assert done.count == 3
    assert done.llm_calls == 24
    assert done.stopped == "the tick's budget of 20 model calls is spent"
    assert len(task.calls) == 6
    assert {c for _, c in task.calls} == {lesson.id, "off"}
    first, second, third = done.pairs[lesson.id]
    assert (first.counted, first.sign) == (True, 1)
    assert (second.counted, second.sign) == (False, 0)
    assert second.note.startswith("the lesson did not reach the prompt")
    assert third.counted
    assert [s.tool for s in done.steps] == ["replay_lesson"] * 3
    assert "with it: resolved; without: not resolved" in done.steps[0].args
    book = with_replays(LessonBook(lessons=[lesson]), done)
    replay = book.lessons[0].replay
    assert replay is not None
    assert (replay.counted, replay.wins, replay.losses) == (2, 2, 0)


async def test_the_order_of_a_pairs_builds_is_drawn() -> None:
    """Not always the lesson first: a warm cache or a drifting model would favour one side."""
    lesson = _lesson("a")
    instances = [_instance(n) for n in range(1, 13)]
    task = ScriptedEvalTask(
        {(i.instance_id, c): True for i in instances for c in (lesson.id, "off")}
    )
    await run_replays(task, [(lesson, i) for i in instances], budget_calls=1_000, now=NOW)
    firsts = [task.calls[k][1] for k in range(0, len(task.calls), 2)]
    assert set(firsts) == {lesson.id, "off"}
    again = ScriptedEvalTask(dict(task.resolved))
    await run_replays(again, [(lesson, i) for i in instances], budget_calls=1_000, now=NOW)
    assert again.calls == task.calls  # drawn by hash: the same every time


async def test_a_stop_request_ends_the_replays_before_the_next_pair() -> None:
    lesson = _lesson("a")
    instances = [_instance(n) for n in (1, 2, 3)]
    task = ScriptedEvalTask(
        {(i.instance_id, c): True for i in instances for c in (lesson.id, "off")}
    )
    stops = iter([False, True])
    done = await run_replays(task, [(lesson, i) for i in instances], budget_calls=1_000,
                             now=NOW, stopping=lambda: next(stops))  # fmt: skip
    assert (done.count, done.stopped) == (1, "stopped by the operator")
    assert len(task.calls) == 2


@pytest.mark.parametrize("fault", ["errors", "raises"])
async def test_a_failure_ends_the_ticks_replays(fault: str) -> None:
    lesson = _lesson("a")
    ids = [f"acme__calc-{n}" for n in (1, 2, 3)]
    table = {(i, c): True for i in ids for c in (lesson.id, "off")}
    task = ScriptedEvalTask(table, **{fault: {ids[1]}})  # pyright: ignore[reportArgumentType]
    done = await run_replays(task, [(lesson, _instance(n)) for n in (1, 2, 3)],
                             budget_calls=1_000, now=NOW)  # fmt: skip
    assert ids[2] not in {i for i, _ in task.calls}
    pairs = done.pairs[lesson.id]
    if fault == "errors":  # kept, not counted: the instance is not tried again for it
        assert [p.counted for p in pairs] == [True, False]
        assert pairs[1].note.startswith("a build failed: ModelFailed")
        assert done.stopped == pairs[1].note
    else:  # nothing kept for the pair whose call failed
        assert [p.counted for p in pairs] == [True]
        assert done.stopped.startswith("the eval's task failed: RuntimeError")
        assert not done.steps[-1].ok


def test_lessons_read_before_replays_existed_and_round_trip() -> None:
    old = '{"schema_version": "1.4", "lessons": [{"id": "L", "text": "t", ' \
        '"created_at": "2026-12-01T00:00:00Z", "updated_at": "2026-12-01T00:00:00Z"}]}'  # fmt: skip
    assert LessonBook.model_validate_json(old).lessons[0].replay is None
    lesson = _lesson("r", replay=LessonReplay(pairs=[_pair(1, True, False), _pair(2, True, True)]))
    again = LessonBook.model_validate_json(LessonBook(lessons=[lesson]).model_dump_json())
    assert again.schema_version == "1.5"
    replay = again.lessons[0].replay
    assert replay is not None
    assert (
        replay.summary() == "2 pair(s): 1 resolved only with it, 0 only without, 1 both, 0 neither"
    )
    assert replay.llm_calls == 12


def test_the_ticks_summary_says_what_the_replays_did_and_why_they_stopped() -> None:
    from agent_loop_distiller import TickKind, TickResult
    from agent_loop_distiller.env import summarize_tick

    replayed = Replayed(llm_calls=16, stopped="the eval's task failed: TaskNotFound: eval...")
    replayed.pairs["L"] = [_pair(1, True, False), _pair(2, False, False)]
    result = TickResult(kind=TickKind.BOOKKEEPING, replayed=replayed)
    details = summarize_tick(result).details
    assert details["replayed_pairs"] == "2"
    assert details["replay_model_calls"] == "16"
    assert details["replays_stopped"].startswith("the eval's task failed: TaskNotFound")
    assert "replays_stopped" not in summarize_tick(TickResult(replayed=Replayed())).details
