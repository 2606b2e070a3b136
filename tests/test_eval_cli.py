"""`agent-loop eval run` and `eval compare` refuse what cannot work before anything runs:
exit 2, a sentence saying why, and nothing sent to GitHub."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from agent_loop import cli, eval_run_cmd
from agent_loop_common.memory import LESSONS_PATH
from agent_loop_common.records import Lesson, LessonBook
from agent_loop_common.runtime import local_memory
from agent_loop_common.settings import load_settings
from agent_loop_eval import Instance, read_instances
from agent_loop_testing import GitHubEmulator, serve_for_cli, write_memory_file


@pytest.fixture
def served(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> Iterator[tuple[GitHubEmulator, pathlib.Path]]:
    """The emulator served as the configured repository, an instances file of one."""
    emulator = GitHubEmulator()
    sha = emulator.seed_files({"README.md": "# calc\n"})
    file = tmp_path / "instances.jsonl"
    instance = Instance(
        instance_id="acme__widgets-5",
        repo=emulator.full_name,
        base_commit=sha,
        problem_statement="Add subtract()",
        FAIL_TO_PASS=["tests/test_calc.py::test_subtract"],
        created_at=datetime.now(UTC),
    )
    file.write_text(instance.model_dump_json() + "\n")
    for key in ("FLYTECTL_CONFIG", "UCTL_CONFIG", "FLYTE_ADMIN_ENDPOINT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.chdir(tmp_path)
    with serve_for_cli(monkeypatch, emulator, tmp_path / "home", AGENT_LOOP_SANDBOX="off"):
        emulator.clear_requests()
        yield emulator, file


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--instances", "acme__widgets-5,acme__widgets-9"], "not in "),
        (["--lessons", ","], "--lessons"),
        ([], "AGENT_LOOP_SANDBOX=off"),
        (["--remote"], "No Flyte config found"),
        (["--config", "x.yaml"], "--config names the cluster of --remote"),
    ],
)
def test_a_run_that_cannot_work_exits_2_before_anything_runs(
    served: tuple[GitHubEmulator, pathlib.Path],
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    said: str,
) -> None:
    emulator, file = served
    code = cli.main(["eval", "run", str(file), *extra])
    out, err = capsys.readouterr()
    assert code == cli.EXIT_CONFIG
    assert out == ""
    assert said in err
    assert "Traceback" not in err
    assert emulator.requests == []
    assert not (pathlib.Path(os.environ["AGENT_LOOP_HOME"]) / "eval").exists()


def test_a_missing_or_empty_instances_file_exits_2(
    served: tuple[GitHubEmulator, pathlib.Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, file = served
    assert cli.main(["eval", "run", str(file.with_name("none.jsonl"))]) == cli.EXIT_CONFIG
    assert "none.jsonl" in capsys.readouterr().err
    empty = file.with_name("empty.jsonl")
    empty.write_text("\n")
    assert cli.main(["eval", "run", str(empty)]) == cli.EXIT_CONFIG
    assert "no instance to run" in capsys.readouterr().err


def test_compare_names_a_run_it_cannot_read(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["eval", "compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert "agent-loop eval compare:" in capsys.readouterr().err


def test_lessons_are_named_as_lessons_show_takes_them(
    served: tuple[GitHubEmulator, pathlib.Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """`--lessons L-aaaa` names `acme/widgets#L-aaaa` (the id `lessons list` prints); a
    name matching no lesson in memory is refused, not run as "no lesson at all"."""
    emulator, file = served
    location = local_memory(load_settings())
    now = datetime.now(UTC)
    book = LessonBook(
        lessons=[
            Lesson(id="acme/widgets#L-aaaa", text="Run make lint.", created_at=now, updated_at=now)
        ]
    )
    write_memory_file(location, location.keys.context, LESSONS_PATH, book.model_dump_json())
    assert cli.main(["eval", "run", str(file), "--lessons", "L-aaaa,L-typo"]) == cli.EXIT_CONFIG
    err = capsys.readouterr().err
    assert "not a lesson in memory: L-typo" in err
    assert "L-aaaa" not in err.split("not a lesson in memory:", 1)[1]
    # Known names pass to the next check (the sandbox here), short or full, as full ids.
    for named in ("L-aaaa", "acme/widgets#L-aaaa"):
        assert cli.main(["eval", "run", str(file), "--lessons", named]) == cli.EXIT_CONFIG
        assert "AGENT_LOOP_SANDBOX=off" in capsys.readouterr().err
        chosen = eval_run_cmd.lesson_ids(load_settings(), read_instances(file), [named])
        assert chosen == (["acme/widgets#L-aaaa"], [])
    assert emulator.requests == []


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ([], "give a predictions file, or --gold"),
        (["PREDICTIONS", "--gold"], "give a predictions file, or --gold"),
        (["--gold", "--instances", "acme__widgets-9"], "not in "),
        (["NOFILE"], "none.jsonl"),
        (["STRANGERS"], "has predictions for 1 instance(s) that"),
        (["--gold"], "AGENT_LOOP_SANDBOX=off: `eval score`"),
        (["--gold", "--config", "x.yaml"], "--config names the cluster of --remote"),
    ],
)
def test_a_score_that_cannot_work_exits_2_before_anything_runs(
    served: tuple[GitHubEmulator, pathlib.Path],
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    said: str,
) -> None:
    emulator, file = served
    predictions = file.with_name("predictions.jsonl")
    predictions.write_text('{"instance_id": "acme__widgets-5", "model_patch": ""}\n')
    strangers = file.with_name("strangers.jsonl")
    strangers.write_text('{"instance_id": "acme__widgets-6", "model_patch": ""}\n')
    names = {
        "PREDICTIONS": predictions,
        "NOFILE": file.with_name("none.jsonl"),
        "STRANGERS": strangers,
    }
    argv = [str(names.get(x, x)) for x in extra]
    code = cli.main(["eval", "score", str(file), *argv])
    out, err = capsys.readouterr()
    assert code == cli.EXIT_CONFIG
    assert out == ""
    assert said in err
    assert "Traceback" not in err
    assert emulator.requests == []
    assert not (pathlib.Path(os.environ["AGENT_LOOP_HOME"]) / "eval").exists()
