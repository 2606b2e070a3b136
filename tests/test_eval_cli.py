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
from agent_loop_testing import GitHubEmulator, bwrap_e2e_marks, serve_for_cli, write_memory_file


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
    assert "empty.jsonl holds no instance: nothing to run" in capsys.readouterr().err


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


def _one_line(err: str) -> str:
    """The one line a refusal prints (a pydantic dump or a traceback would be more)."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert "errors.pydantic.dev" not in err
    return lines[0]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (
            '{"foo": 1}\n',
            "bad.jsonl:1: not an instance: missing field(s) instance_id, repo, base_commit, "
            "problem_statement",
        ),
        ("LINE\n[]\n", "bad.jsonl:2: not an instance: not a JSON object"),
        ('LINE\n{"instance_id": "x", broken\n', "bad.jsonl:2: not JSON"),
        (
            'LINE\n{"instance_id": "x", "repo": "a/b", "base_commit": "abc", '
            '"problem_statement": "p", "FAIL_TO_PASS": 5}\n',
            "bad.jsonl:2: not an instance: FAIL_TO_PASS:",
        ),
    ],
)
def test_a_bad_instances_line_is_named_in_one_line(
    served: tuple[GitHubEmulator, pathlib.Path],
    capsys: pytest.CaptureFixture[str],
    content: str,
    said: str,
) -> None:
    emulator, file = served
    bad = file.with_name("bad.jsonl")
    bad.write_text(content.replace("LINE", file.read_text().strip()))
    for command in ("run", "score"):
        assert cli.main(["eval", command, str(bad), "--gold"][: 3 + (command == "score")]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert said in _one_line(err), err
    assert emulator.requests == []


def test_a_missing_file_or_a_folder_is_said_plainly(
    served: tuple[GitHubEmulator, pathlib.Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, file = served
    assert cli.main(["eval", "run", str(file.with_name("none.jsonl"))]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line == (
        f"agent-loop eval run: {file.with_name('none.jsonl')}: no such file; "
        "`agent-loop eval mine` writes a repository's instances (docs/eval.md)"
    )
    assert cli.main(["eval", "run", str(file.parent)]) == 2
    assert f"{file.parent}: a folder, not a file" in _one_line(capsys.readouterr().err)
    assert cli.main(["eval", "score", str(file), str(file.with_name("p.jsonl"))]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"agent-loop eval score: {file.with_name('p.jsonl')}: no such file"
    )


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("", "predictions.jsonl holds no prediction: nothing to score"),
        ("\n\n", "predictions.jsonl holds no prediction: nothing to score"),
        (
            '{"id": "acme__widgets-5", "patch": "x"}\n',
            "predictions.jsonl:1: not a prediction: missing field(s) instance_id",
        ),
        (
            '{"instance_id": "acme__widgets-5", "model_patch": 5}\n',
            "predictions.jsonl:1: not a prediction: model_patch: input should be a valid string",
        ),
    ],
)
def test_predictions_that_are_none_or_not_predictions_exit_2(
    served: tuple[GitHubEmulator, pathlib.Path],
    capsys: pytest.CaptureFixture[str],
    content: str,
    said: str,
) -> None:
    """An empty file would "score" every instance as missing and exit 0: a run that
    looks done and measured nothing."""
    emulator, file = served
    predictions = file.with_name("predictions.jsonl")
    predictions.write_text(content)
    assert cli.main(["eval", "score", str(file), str(predictions)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert said in _one_line(err)
    assert emulator.requests == []
    assert not (pathlib.Path(os.environ["AGENT_LOOP_HOME"]) / "eval").exists()


def test_compare_says_in_one_line_what_is_not_a_run(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.json"
    good.write_text('[{"instance_id": "a", "resolved": true}]')
    bad = tmp_path / "bad.json"
    bad.write_text('[{"instance_id": "a"}]')
    assert cli.main(["eval", "compare", str(good), str(bad)]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"agent-loop eval compare: {bad}: not a run's results.json (a JSON list of results, "
        "one per instance): missing field(s) resolved"
    )
    (tmp_path / "empty").mkdir()
    assert cli.main(["eval", "compare", str(good), str(tmp_path / "empty")]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"agent-loop eval compare: {tmp_path / 'empty' / 'results.json'}: no such file; "
        "give a run's folder (`eval run --out DIR`) or its results.json"
    )


_SLOW, _BWRAP_WORKS = bwrap_e2e_marks()


@_SLOW
@_BWRAP_WORKS
def test_a_model_that_cannot_be_called_is_named_as_the_option_given(
    served: tuple[GitHubEmulator, pathlib.Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--model anthropic/x` without its key is refused before anything runs, and the
    sentence names `--model` (what the person typed), not the AGENT_LOOP_MODEL they
    never set; without `--model` the configured one is checked as before."""
    emulator, file = served
    monkeypatch.setenv("AGENT_LOOP_SANDBOX", "bwrap")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("AGENT_LOOP_MODEL", "openai/gpt-5")
    code = cli.main(["eval", "run", str(file), "--model", "anthropic/claude-x"])
    out, err = capsys.readouterr()
    assert code == cli.EXIT_CONFIG
    assert out == ""
    assert "It is the key of provider 'anthropic', which --model='anthropic/claude-x' uses" in err
    assert "AGENT_LOOP_MODEL" not in err
    monkeypatch.setenv("AGENT_LOOP_MODEL", "anthropic/claude-x")
    assert cli.main(["eval", "run", str(file)]) == cli.EXIT_CONFIG
    assert "which AGENT_LOOP_MODEL='anthropic/claude-x' uses" in capsys.readouterr().err
    assert emulator.requests == []
    assert not (pathlib.Path(os.environ["AGENT_LOOP_HOME"]) / "eval").exists()


def test_an_out_that_is_a_file_is_refused_before_the_run_not_after_it(
    served: tuple[GitHubEmulator, pathlib.Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Found at the end (as it was), `--out notes.txt` lost every instance's result to a
    traceback after the whole run; it is now refused first, under it too."""
    emulator, file = served
    notes = file.with_name("notes.txt")
    notes.write_text("mine\n")
    for out in (notes, notes / "run"):
        for argv in (["run", str(file)], ["score", str(file), "--gold"]):
            assert cli.main(["eval", *argv, "--out", str(out)]) == cli.EXIT_CONFIG
            printed, err = capsys.readouterr()
            assert printed == ""
            assert _one_line(err) == (
                f"agent-loop eval {argv[0]}: --out {out}: {notes} is a file; --out names a "
                "folder (the run writes results.json, predictions.jsonl and report.html into it)"
            )
    assert notes.read_text() == "mine\n"
    assert emulator.requests == []


@pytest.mark.parametrize(
    ("only", "said"),
    [
        ("", "--instances '' names no instance id (comma separated, as the instance_id of "),
        (" , ", "--instances ' , ' names no instance id"),
        ("acme__widgets-9", "--instances: not in "),
    ],
)
def test_instances_that_name_nothing_are_refused_not_read_as_all_or_an_empty_file(
    served: tuple[GitHubEmulator, pathlib.Path],
    capsys: pytest.CaptureFixture[str],
    only: str,
    said: str,
) -> None:
    """`--instances ""` ran every instance and `--instances ,` said the file held none."""
    emulator, file = served
    assert cli.main(["eval", "run", str(file), "--instances", only]) == cli.EXIT_CONFIG
    line = _one_line(capsys.readouterr().err)
    assert said in line
    assert "holds no instance" not in line
    if only.strip(" ,"):
        assert line.endswith("acme__widgets-9 (its instance ids: acme__widgets-5)")
    assert emulator.requests == []


def test_an_instances_file_with_an_id_twice_is_refused(
    served: tuple[GitHubEmulator, pathlib.Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Scored twice, it counted twice in the resolved rate (4 of 4 from 3 instances)."""
    emulator, file = served
    twice = file.with_name("twice.jsonl")
    twice.write_text(file.read_text() * 2)
    for argv in (["run", str(twice)], ["score", str(twice), "--gold"]):
        assert cli.main(["eval", *argv]) == cli.EXIT_CONFIG
        assert _one_line(capsys.readouterr().err) == (
            f"agent-loop eval {argv[0]}: {twice} has instance_id acme__widgets-5 more than "
            "once; each instance goes in once (keep one line of each)."
        )
    assert emulator.requests == []


def test_a_file_that_is_not_text_is_said_in_one_line_and_a_bom_is_read(
    served: tuple[GitHubEmulator, pathlib.Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A binary file given by mistake was a UnicodeDecodeError traceback; a file saved
    with a byte-order mark (some editors' UTF-8) was "not JSON" on its first line."""
    emulator, file = served
    binary = file.with_name("instances.tar.gz")
    binary.write_bytes(b"\x1f\x8b\x08\x00\xd0\xff")
    assert cli.main(["eval", "run", str(binary)]) == cli.EXIT_CONFIG
    assert _one_line(capsys.readouterr().err) == (
        f"agent-loop eval run: {binary}: not UTF-8 text (byte 1 is not); an instances file "
        "is JSON lines, one instance a line"
    )
    assert cli.main(["eval", "score", str(file), str(binary)]) == cli.EXIT_CONFIG
    assert _one_line(capsys.readouterr().err) == (
        f"agent-loop eval score: {binary}: not UTF-8 text (byte 1 is not); a predictions "
        "file is JSON lines, one prediction a line"
    )
    assert cli.main(["eval", "compare", str(binary), str(binary)]) == cli.EXIT_CONFIG
    assert _one_line(capsys.readouterr().err).endswith("not UTF-8 text")
    bom = file.with_name("bom.jsonl")
    bom.write_bytes(b"\xef\xbb\xbf" + file.read_bytes())
    assert read_instances(bom) == read_instances(file)
    # Read, then refused only for the sandbox being off: the file was fine.
    assert cli.main(["eval", "run", str(bom)]) == cli.EXIT_CONFIG
    assert "AGENT_LOOP_SANDBOX=off" in capsys.readouterr().err
    assert emulator.requests == []


def test_an_out_holding_a_run_is_refused_unless_force(
    served: tuple[GitHubEmulator, pathlib.Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """`--out runs/a` given twice wrote the second run over the first (perhaps an hour of
    model spend) without a word; it is now refused before anything runs, and `--force`
    says it is meant. An empty folder, or one holding other files, is fine."""
    emulator, file = served
    earlier = file.with_name("runs") / "a"
    earlier.mkdir(parents=True)
    (earlier / "results.json").write_text("[]\n")
    (earlier / "report.html").write_text("<p>the earlier run</p>\n")
    empty = file.with_name("runs") / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("mine\n")
    for argv in (["run", str(file)], ["score", str(file), "--gold"]):
        assert cli.main(["eval", *argv, "--out", str(earlier)]) == cli.EXIT_CONFIG
        printed, err = capsys.readouterr()
        assert printed == ""
        assert _one_line(err) == (
            f"agent-loop eval {argv[0]}: --out {earlier} already holds a run (results.json, "
            "report.html); choose another folder, or add --force to write over it"
        )
        # past the folder's check, the run stops at the next one (this fixture's sandbox)
        for out, extra in ((earlier, ["--force"]), (empty, [])):
            assert cli.main(["eval", *argv, "--out", str(out), *extra]) == cli.EXIT_CONFIG
            assert "AGENT_LOOP_SANDBOX=off" in capsys.readouterr().err
    assert (earlier / "results.json").read_text() == "[]\n"
    assert emulator.requests == []
