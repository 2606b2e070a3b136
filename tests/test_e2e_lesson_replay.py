"""Lessons proven by replay, end to end: `agent-loop run distiller` with
`AGENT_LOOP_LESSON_REPLAY=on` replays a lesson on the repository's mined instances.

The calc sample grows by three merged fixes (`seed_calc_history`), kept as instances in
the file `agent-loop eval mine` writes (`<AGENT_LOOP_HOME>/eval/<owner>__<name>/
instances.jsonl`). Memory holds one lesson still proving, with some live evidence
already (its e-value 10 to 40: not decided). A distiller tick with nothing else new
replays it on each instance twice, through the eval's task called by name in Flyte's
local mode (the real builder pipeline on the base tarball, the real bubblewrap sandbox,
the hidden tests): once shown only that lesson, once shown none. A scripted model
writes the right fix when the lesson is in its prompt and a wrong one when it is not
(the lesson helps: proven), or the other way round (it hurts: retired as harmful).

Checked as well: the pairs are kept on the lesson apart from its live evidence (the
effect state's e-values are those of the live runs), `agent-loop lessons show` prints
them, GitHub sees only reads of the base tarballs and the distiller's own claim, and
with the setting off nothing is replayed at all.
"""

from __future__ import annotations

import asyncio
import json
import math
import pathlib
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from agent_loop import cli
from agent_loop_common.memory import EFFECTS_PATH, LESSONS_PATH, read_context, read_retired
from agent_loop_common.records import Lesson, LessonBook, LessonState, OutcomeMetric, Role
from agent_loop_common.runtime import local_memory, use_model
from agent_loop_common.settings import load_settings
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_distiller import EffectBook, EffectPolicy, LessonEffect, fold
from agent_loop_testing import (
    VERIFIED,
    CalcHistory,
    GitHubEmulator,
    ModelPerArm,
    ScriptedModel,
    bwrap_e2e_marks,
    call,
    seed_calc_history,
    serve_for_cli,
    stored_record,
    turn,
    write_memory_file,
)
from calc_instances import calc_instance

pytestmark = bwrap_e2e_marks()

CALC = "src/calc.py"
MARKER = "REPLAY-LESSON-MARKER-5d2"
NOW = datetime.now(UTC)
RIGHT = {"subtract": "a - b", "multiply": "a * b", "divide": "a / b"}
WRONG = {"subtract": "b - a", "multiply": "a + b", "divide": "a * b"}


def _build(before: str, name: str, body: str) -> ScriptedModel:
    """One build: `name` added to `src/calc.py` as `return <body>`, submitted, verified."""
    content = before + f"\n\ndef {name}(a, b):\n    return {body}\n"
    return ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path=CALC, content=content)]),
            turn(
                tool_calls=[call("submit_implementation", title=name, body="Done.", summary=name)]
            ),
            turn("Submitted."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED)]},
    )


def _live_evidence(lesson_id: str, helps: bool) -> LessonEffect:
    """Live runs of the lesson folded by the real `fold` until its e-value in the
    direction of `helps` is above 10, far from the 40 that decides."""
    effect = LessonEffect(lesson_id=lesson_id)
    policy = EffectPolicy()
    metric = OutcomeMetric.FIRST_TRY_TESTS
    k = 0
    while (effect.help if helps else effect.harm).e_value < 10:
        shown = k % 5 != 0  # held out one run in five, as the draw does at 0.2
        y = 1.0 if shown == helps else 0.0
        fold(effect, [("o/calc|feature", shown, 0.2, ((metric, y),))], policy)
        k += 1
    assert (effect.help if helps else effect.harm).e_value < policy.threshold
    return effect


@pytest.fixture
def served(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> Iterator[tuple[GitHubEmulator, CalcHistory]]:
    emulator = GitHubEmulator()
    history = seed_calc_history(emulator)
    with serve_for_cli(
        monkeypatch,
        emulator,
        tmp_path / "home",
        AGENT_LOOP_SANDBOX="bwrap",
        AGENT_LOOP_MAX_TRIES="1",
        AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS="120",
        AGENT_LOOP_LESSON_REPLAY=str(getattr(request, "param", "on")),
    ):
        yield emulator, history


def _seed(emulator: GitHubEmulator, history: CalcHistory, *, helps: bool) -> Lesson:
    """The instances file where `eval mine` leaves it, and one proving lesson with live
    evidence leaning its way in memory."""
    settings = load_settings()
    settings.eval_instances.parent.mkdir(parents=True)
    settings.eval_instances.write_text(
        "".join(
            i.model_dump_json() + "\n"
            for i in [calc_instance(emulator, fix, created_at=NOW) for fix in history.fixes]
        )
    )
    lesson = Lesson(
        id=f"{emulator.full_name}#L-5d2a7c10",
        text=f"Write each new operation of `src/calc.py` as its own function ({MARKER}).",
        created_at=NOW,
        updated_at=NOW,
        roles=[Role.BUILDER],
        repo=emulator.full_name,
    )
    location = local_memory(settings)
    book = LessonBook(lessons=[lesson])
    write_memory_file(location, location.keys.context, LESSONS_PATH, book.model_dump_json())
    effects = EffectBook(lessons={lesson.id: _live_evidence(lesson.id, helps)})
    write_memory_file(location, location.keys.ledger, EFFECTS_PATH, effects.model_dump_json())
    return lesson


def _models(history: CalcHistory, *, helps: bool) -> ModelPerArm:
    """Shown the lesson, the model writes the right fix when the lesson helps and a wrong
    one when it hurts; not shown it, the other one."""
    shown, hidden = (RIGHT, WRONG) if helps else (WRONG, RIGHT)
    names = dict(zip([f.issue for f in history.fixes], RIGHT, strict=True))
    before = {fix.issue: fix.before[CALC] for fix in history.fixes}
    return ModelPerArm(
        MARKER,
        shown={n: _build(before[n], name, shown[name]) for n, name in names.items()},
        hidden={n: _build(before[n], name, hidden[name]) for n, name in names.items()},
    )


@pytest.mark.parametrize("helps", [True, False], ids=["helps-proven", "hurts-retired"])
def test_a_lesson_is_decided_by_its_replays(
    served: tuple[GitHubEmulator, CalcHistory],
    capsys: pytest.CaptureFixture[str],
    helps: bool,
) -> None:
    emulator, history = served
    lesson = _seed(emulator, history, helps=helps)
    live = _live_evidence(lesson.id, helps)
    models = _models(history, helps=helps)
    emulator.clear_requests()
    with use_model(models):
        code = cli.main(["run", "distiller", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    models.assert_finished()
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["details"]["tick"] == "replayed"
    assert summary["details"]["replayed_pairs"] == "3"
    assert "replays_stopped" not in summary["details"]
    state = "proven" if helps else "harmful"
    assert summary["note"].endswith(f"replayed 3 pair(s) of 1 lesson(s) (24 model calls): "
                                    f"{lesson.id} {state}")  # fmt: skip
    # The tick is a recorded run: one step per pair in its trace.
    record = stored_record(local_memory(load_settings()), summary["run_id"])
    steps = [s for s in record.trace if s.tool == "replay_lesson"]
    assert len(steps) == 3
    assert all(s.ok and lesson.id in s.args for s in steps)
    # Each instance built twice: once shown the lesson, once not.
    assert sorted(models.arms) == sorted(
        (fix.issue, shown) for fix in history.fixes for shown in (True, False)
    )

    settings = load_settings()
    location = local_memory(settings)
    if helps:
        (kept,) = asyncio.run(read_context(location)).lessons.lessons
        assert kept.state is LessonState.PROVEN
        replay = kept.replay
    else:
        assert asyncio.run(read_context(location)).lessons.lessons == []
        (gone,) = asyncio.run(read_retired(location))
        assert gone.lesson.state is LessonState.HARMFUL
        assert gone.reason.startswith("harmful: ")
        assert "replay: 3 pair(s): 0 resolved only with it, 3 only without" in gone.reason
        replay = gone.lesson.replay
    assert replay is not None
    ids = [
        i.instance_id
        for i in [calc_instance(emulator, fix, created_at=NOW) for fix in history.fixes]
    ]
    assert sorted(p.instance_id for p in replay.pairs) == sorted(ids)
    assert all(p.counted and p.with_lesson.lesson_shown for p in replay.pairs)
    assert not any(p.without.lesson_shown for p in replay.pairs)
    assert [p.with_lesson.resolved for p in replay.pairs] == [helps] * 3
    assert [p.without.resolved for p in replay.pairs] == [not helps] * 3
    assert (replay.wins, replay.losses) == ((3, 0) if helps else (0, 3))
    assert replay.llm_calls == 3 * 2 * 4  # three builder turns and one verdict per build

    # The live evidence is the live runs' alone: replays are kept on the lesson.
    state = EffectBook.model_validate_json(
        (pathlib.Path(location.remote_path(location.keys.ledger)) / EFFECTS_PATH).read_text()
    )
    measured = state.lessons[lesson.id]
    assert math.isclose(measured.help.log_wealth, live.help.log_wealth)
    assert math.isclose(measured.harm.log_wealth, live.harm.log_wealth)
    assert measured.applicable == live.applicable

    # GitHub: the base tarballs read, and the distiller's claim (a ref to a marker commit,
    # renewed, deleted); nothing else written: the replays wrote nothing.
    repo = f"/repos/{emulator.full_name}/git"
    claim = f"{repo}/refs/agent-loop/claims/repo-distiller"
    allowed = {f"POST {repo}/commits", f"POST {repo}/refs", f"PATCH {claim}", f"DELETE {claim}"}
    writes = {f"{r.method} {r.path}" for r in emulator.requests if r.method != "GET"}
    assert writes <= allowed, writes
    tarballs = {r.path.rsplit("/", 1)[1] for r in emulator.requests if "/tarball/" in r.path}
    assert tarballs == {fix.base for fix in history.fixes}

    if helps:
        assert cli.main(["lessons", "show", lesson.id]) == 0
        shown = capsys.readouterr().out
        assert (
            "\nreplay: 3 pair(s): 3 resolved only with it, 0 only without, 0 both, 0 neither, "
            "e-value 3.75 for help, 0.25 for harm\n" in shown
        )


@pytest.mark.parametrize("served", ["off"], indirect=True)
def test_nothing_is_replayed_with_the_setting_off(
    served: tuple[GitHubEmulator, CalcHistory], capsys: pytest.CaptureFixture[str]
) -> None:
    emulator, history = served
    lesson = _seed(emulator, history, helps=True)
    models = ModelPerArm(MARKER, shown={}, hidden={})
    emulator.clear_requests()
    with use_model(models):
        code = cli.main(["run", "distiller", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "replayed_pairs" not in json.loads(out.strip().splitlines()[-1])["details"]
    assert models.arms == []
    assert not [r for r in emulator.requests if "/tarball/" in r.path]
    (kept,) = asyncio.run(read_context(local_memory(load_settings()))).lessons.lessons
    assert (kept.id, kept.state, kept.replay) == (lesson.id, LessonState.PROVING, None)
