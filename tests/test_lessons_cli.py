"""`agent-loop lessons` reads and edits the same memory the agents read, and `status`
sums the book up; an operator's retire or pin is recorded as the operator's."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
from datetime import UTC, datetime

import pytest

from agent_loop import cli
from agent_loop_common.memory import (
    DIGEST_PATH,
    EFFECTS_PATH,
    LESSONS_PATH,
    read_context,
    read_operator_edits,
    read_retired,
)
from agent_loop_common.records import (
    CitationStatus,
    Lesson,
    LessonAuthor,
    LessonBook,
    LessonDiagnosis,
    WorkKind,
)
from agent_loop_common.runtime import local_memory
from agent_loop_common.settings import load_settings
from agent_loop_testing import write_memory_file

NOW = datetime.now(UTC)


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> pathlib.Path:
    for key in list(os.environ):
        if key.startswith(("GITHUB_", "AGENT_LOOP_")) and key != "AGENT_LOOP_ALLOW_MODEL_REQUESTS":
            monkeypatch.delenv(key)
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/api")
    monkeypatch.setenv("AGENT_LOOP_HOME", str(tmp_path / "home"))
    location = local_memory(load_settings(github_token="x"))
    lessons = [
        Lesson(id="acme/api#L-aaaa", text="Run make lint.", created_at=NOW, updated_at=NOW),
        Lesson(
            id="acme/api#L-bbbb",
            text="Use parse() in src/p.py.",
            created_at=NOW,
            updated_at=NOW,
            citation_status=CitationStatus.BROKEN,
        ),
    ]
    book = LessonBook(lessons=lessons)
    write_memory_file(location, location.keys.context, LESSONS_PATH, book.model_dump_json())
    digest = "".join(f"- [{x.id}] (all) {x.text}\n" for x in lessons)
    write_memory_file(location, location.keys.context, DIGEST_PATH, digest)
    return tmp_path / "home"


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli.main(["lessons", *argv])
    out, err = capsys.readouterr()
    return code, out + err


def test_list_show_retire_pin(home: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli(capsys, "list", "--json")
    assert code == 0
    listed = json.loads(out)
    assert [x["id"] for x in listed["lessons"]] == ["acme/api#L-aaaa", "acme/api#L-bbbb"]
    assert listed["lessons"][1]["citation_status"] == "broken"
    code, out = _cli(capsys, "show", "L-aaaa", "--json")  # the id without its repository
    assert json.loads(out)["text"] == "Run make lint."
    assert _cli(capsys, "show", "L-nope")[0] == 1

    assert _cli(capsys, "pin", "L-aaaa")[0] == 0
    assert _cli(capsys, "retire", "acme/api#L-bbbb", "--reason", "the parser is gone")[0] == 0
    location = local_memory(load_settings(github_token="x"))
    context = asyncio.run(read_context(location))
    (kept,) = context.lessons.lessons
    assert kept.pinned
    assert kept.history[-1].by is LessonAuthor.OPERATOR
    assert "L-bbbb" not in context.digest
    (gone,) = asyncio.run(read_retired(location))
    assert (gone.lesson.id, gone.by, gone.reason) == (
        "acme/api#L-bbbb",
        LessonAuthor.OPERATOR,
        "the parser is gone",
    )
    ops = asyncio.run(read_operator_edits(location))
    assert [(e.op, e.lesson_id) for e in ops] == [
        ("pin", "acme/api#L-aaaa"),
        ("retire", "acme/api#L-bbbb"),
    ]
    code, out = _cli(capsys, "list", "--all")
    assert "Left the book (1)" in out
    assert "the parser is gone" in out

    code = cli.main(["status"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Lessons (1): 1 proving; 1 pinned" in out


def test_many_repositories_need_repo(
    home: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AGENT_LOOP_REPO")
    monkeypatch.setenv("AGENT_LOOP_REPOS", "acme/api,acme/web")
    code, out = _cli(capsys, "list")
    assert code == 2
    assert "--repo OWNER/NAME" in out
    code, out = _cli(capsys, "list", "--repo", "acme/web")
    assert code == 0
    assert "No lessons yet" in out


def test_show_and_list_say_the_diagnosis(
    home: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    location = local_memory(load_settings(github_token="x"))
    diagnosis = LessonDiagnosis(
        at=NOW, applicability=0.4, compliance=0.03, base_compliance=0.0, checked=30,
        judged_by="trace", action="narrow", done=True,
        note="narrowed to docs: used in docs (1 of 6); never in bug (23 of 23)",
    )  # fmt: skip
    narrowed = Lesson(
        id="acme/api#L-cccc", text="The endpoints are in `docs/api.md`.", created_at=NOW,
        updated_at=NOW, kinds=[WorkKind.DOCS], diagnosis=diagnosis,
    )  # fmt: skip
    book = LessonBook(lessons=[narrowed])
    write_memory_file(location, location.keys.context, LESSONS_PATH, book.model_dump_json())

    code, out = _cli(capsys, "show", "L-cccc")
    assert code == 0
    (line,) = [x for x in out.splitlines() if x.startswith("diagnosis: ")]
    assert line == (
        "diagnosis: applies to 40% of runs; followed in 3% of 30 checked shown runs, 0% held "
        "out (judged from the tool trace); narrow: done - narrowed to docs: used in docs "
        "(1 of 6); never in bug (23 of 23)"
    )
    code, out = _cli(capsys, "show", "L-cccc", "--json")
    assert json.loads(out)["diagnosis"]["judged_by"] == "trace"
    code, out = _cli(capsys, "list", "--json")
    assert json.loads(out)["lessons"][0]["diagnosis"] == "narrow (done)"
    code, out = _cli(capsys, "list")
    assert "narrow (done)" in out

    flagged = narrowed.model_copy(
        update={"pinned": True, "diagnosis": diagnosis.model_copy(update={"done": False})}
    )
    book = LessonBook(lessons=[flagged])
    write_memory_file(location, location.keys.context, LESSONS_PATH, book.model_dump_json())
    assert cli.main(["status"]) == 0
    out = capsys.readouterr().out
    assert "Lessons (1): 1 proving; 1 pinned; flagged for you: 1 narrow" in out


def test_show_lists_the_effect_per_outcome(
    home: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The target metric first, then every other outcome measured (the PR's included)."""
    from agent_loop_common.records import OutcomeMetric
    from agent_loop_distiller import EffectBook, LessonEffect, MetricStats

    location = local_memory(load_settings(github_token="x"))
    code, out = _cli(capsys, "show", "L-aaaa")
    assert "effects: not measured yet" in out.splitlines()
    measured = LessonEffect(
        lesson_id="acme/api#L-aaaa",
        metric=OutcomeMetric.MERGED,
        metrics={
            OutcomeMetric.FIRST_TRY_TESTS: MetricStats(strata={"acme/api|bug": [10, 7, 5, 2]}),
            OutcomeMetric.MERGED: MetricStats(strata={"acme/api|bug": [8, 6, 4, 1]}),
        },
    )
    effects = EffectBook(lessons={measured.lesson_id: measured})
    write_memory_file(location, location.keys.ledger, EFFECTS_PATH, effects.model_dump_json())
    code, out = _cli(capsys, "show", "L-aaaa")
    assert code == 0
    (line,) = [x for x in out.splitlines() if x.startswith("effects: ")]
    assert line.startswith("effects: target merged: +0.37 [")
    assert "; first_try_tests: +0.24 [" in line
    code, out = _cli(capsys, "show", "L-aaaa", "--json")
    effects = json.loads(out)["effects"]
    assert [e.split(":")[0] for e in effects] == ["target merged", "first_try_tests"]
