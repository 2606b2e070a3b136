"""`agent-loop eval score` end to end, through the CLI: changes made elsewhere, scored.

The calc sample grows by three merged fixes (`seed_calc_history`), each an instance.
Predictions in SWE-bench's format, as another agent would leave them, are scored in
Flyte local mode against the emulator served on loopback and the real bubblewrap
sandbox, by the scoring `eval run` uses: a right fix resolves, a wrong one names its
failing test, a forged pass is `tampered`, and a patch that does not apply, an empty
one and a missing one are never resolved, each saying so. `--gold` checks the
instances themselves and names the broken ones. GitHub sees the base tarballs' reads
only, and only for the predictions that are scored.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent_loop import cli
from agent_loop_eval import diff_files, instance_id
from agent_loop_testing import (
    REPORT_FORGERY,
    CalcFix,
    CalcHistory,
    GitHubEmulator,
    bwrap_e2e_marks,
    seed_calc_history,
    serve_for_cli,
)
from calc_instances import calc_instance

pytestmark = bwrap_e2e_marks()

CALC = "src/calc.py"


def _patch(fix: CalcFix, added: str, *, code: str | None = None) -> str:
    """A change to `src/calc.py` at `fix`'s base: `added` at its end (`code`: in place of
    the base's code), as another agent's `git diff` would write it."""
    before = fix.before[CALC]
    after = {CALC: (before if code is None else code) + added}
    return diff_files({CALC: before}, after, after)


def _write(path: pathlib.Path, rows: list[dict[str, Any]]) -> pathlib.Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def served(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> Iterator[tuple[GitHubEmulator, CalcHistory]]:
    emulator = GitHubEmulator()
    history = seed_calc_history(emulator)
    with serve_for_cli(
        monkeypatch,
        emulator,
        tmp_path / "home",
        AGENT_LOOP_SANDBOX="bwrap",
        AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS="120",
    ):
        emulator.clear_requests()
        yield emulator, history


def test_predictions_made_elsewhere_are_scored_as_eval_run_scores_its_own(
    served: tuple[GitHubEmulator, CalcHistory],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    echo: Callable[[str], None],
) -> None:
    emulator, history = served
    subtract, multiply, divide = history.fixes
    ids = {n: instance_id(emulator.full_name, n) for n in (11, 12, 13, 91, 92, 93)}
    instances = [
        calc_instance(emulator, subtract),
        calc_instance(emulator, multiply),
        calc_instance(emulator, divide),
        calc_instance(emulator, subtract, number=91),
        calc_instance(emulator, multiply, number=92),
        calc_instance(emulator, subtract, number=93),
    ]
    file = tmp_path / "instances.jsonl"
    file.write_text("".join(i.model_dump_json() + "\n" for i in instances))
    agent = "other-agent/v2"
    rows = [
        (11, _patch(subtract, "\n\ndef subtract(a, b):\n    return a - b\n")),
        (12, _patch(multiply, "\n\ndef multiply(a, b):\n    return a + b\n")),
        # written against another tree: its context is not in calc.py at the base
        (13, diff_files({CALC: "def other():\n    pass\n"}, {CALC: "def divide():\n"}, [CALC])),
        (91, None),  # SWE-bench's null: the agent produced nothing
        # 92: no prediction at all
        (93, _patch(subtract, "\n\ndef subtract(a, b):\n    return b - a\n" + REPORT_FORGERY)),
    ]
    predictions = _write(
        tmp_path / "predictions.jsonl",
        [{"instance_id": ids[n], "model_name_or_path": agent, "model_patch": p} for n, p in rows],
    )
    out = tmp_path / "scored"
    code = cli.main(["eval", "score", str(file), str(predictions), "--out", str(out)])
    printed, err = capsys.readouterr()
    echo(printed)  # for docs/eval.md (pytest -s)
    assert code == 0, err

    results = {r["instance_id"]: r for r in json.loads((out / "results.json").read_text())}
    assert list(results) == [i.instance_id for i in instances]
    right, wrong, unapplied, empty, missing, forged = results.values()
    assert (right["resolved"], right["outcome"], right["model"]) == (True, "change", agent)
    assert set(right["tests"].values()) == {"passed"}
    assert "+def subtract(a, b):" in right["diff"]
    assert (wrong["resolved"], wrong["outcome"]) == (False, "change")
    assert wrong["failing_tests"] == ["tests/test_calc.py::test_multiply"]
    assert wrong["reason"] == "1 hidden test(s) did not pass"
    assert (unapplied["resolved"], unapplied["outcome"]) == (False, "unapplied")
    assert (
        unapplied["reason"] == "patch does not apply: src/calc.py: hunk 1 (line 1) does not apply"
    )
    assert (empty["resolved"], empty["outcome"], empty["tests"]) == (False, "empty", {})
    assert (missing["resolved"], missing["outcome"]) == (False, "missing")
    assert missing["reason"] == "no prediction for this instance"
    # The forged pass fooled the reports; the scoring's guard and scan did not.
    assert (forged["resolved"], forged["outcome"]) == (False, "change")
    assert forged["reason"].startswith("tampered: ")
    assert "tests/test_calc.py::test_subtract" in forged["failing_tests"]

    assert f"  {ids[92]}: no prediction (missing, not resolved)" in printed
    assert f"{ids[11]}  resolved  (change, " in printed
    assert (
        f"{ids[12]}  not resolved: 1 hidden test(s) did not pass [tests/test_calc.py::" in printed
    )
    assert "resolved 1 of 6 (16.7%" in printed
    assert "; tampered 1 (never resolved)" in printed
    assert "not scored: patch does not apply 1, empty patch 1, no prediction 1" in printed
    report = (out / "report.html").read_text()
    assert "other-agent/v2" in report
    assert "Lessons" not in report

    # The bases of the three predictions with a patch that applies or not, read once
    # each; nothing for the empty one or the missing one, and no write at all.
    assert {r.method for r in emulator.requests} == {"GET"}
    tarballs = [r.path.rsplit("/", 1)[1] for r in emulator.requests if "/tarball/" in r.path]
    assert sorted(tarballs) == sorted([subtract.base, multiply.base, divide.base, subtract.base])

    # `eval compare` pairs the scored predictions with any run of the same instances.
    assert cli.main(["eval", "compare", str(out), str(out)]) == 0
    assert "6 instance(s) paired" in capsys.readouterr().out


def test_gold_names_every_brokencalc_instance(
    served: tuple[GitHubEmulator, CalcHistory],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    echo: Callable[[str], None],
) -> None:
    """`--gold`: the real subtract instance is valid; one whose reference fix is wrong,
    and one whose FAIL_TO_PASS test already passes at the base (no test change), are
    broken, and say why."""
    emulator, history = served
    subtract, multiply, divide = history.fixes
    wrong_fix = _patch(multiply, "\n\ndef multiply(a, b):\n    return a + b\n")
    instances = [
        calc_instance(emulator, subtract),
        calc_instance(emulator, multiply, patch=wrong_fix),
        calc_instance(
            emulator,
            divide,
            test_patch="",
            FAIL_TO_PASS=["tests/test_calc.py::test_add"],
            PASS_TO_PASS=[],
        ),
    ]
    file = tmp_path / "instances.jsonl"
    file.write_text("".join(i.model_dump_json() + "\n" for i in instances))
    out = tmp_path / "gold"
    code = cli.main(["eval", "score", str(file), "--gold", "--out", str(out)])
    printed, err = capsys.readouterr()
    echo(printed)  # for docs/eval.md (pytest -s)
    assert code == cli.EXIT_FAILED, err

    results = {r["instance_id"]: r for r in json.loads((out / "results.json").read_text())}
    valid, bad_fix, passes_before = (results[i.instance_id] for i in instances)
    assert valid["resolved"] is True
    assert valid["model"] == "gold"
    assert valid["gold_check"]["valid"] is True
    assert valid["gold_check"]["empty_failing"] == ["tests/test_calc.py::test_subtract"]
    # the test module imports subtract(), which the base lacks: a collection error
    assert ": exit 2: 1 error (" in valid["gold_check"]["empty_scoring"]
    assert bad_fix["gold_check"]["valid"] is False
    assert bad_fix["gold_check"]["problems"] == [
        "the gold patch does not resolve it: 1 hidden test(s) did not pass "
        "[tests/test_calc.py::test_multiply]"
    ]
    assert passes_before["resolved"] is True  # its fix breaks nothing...
    assert passes_before["gold_check"]["problems"] == [  # ...but nothing could fail it
        "the empty patch resolves its FAIL_TO_PASS tests: every one passes with no change"
    ]
    assert passes_before["gold_check"]["empty_failing"] == []

    ids = [i.instance_id for i in instances]
    assert f"{ids[0]}  valid: the gold patch resolves it, the empty patch fails 1 of 1" in printed
    assert f"{ids[1]}  BROKEN: the gold patch does not resolve it" in printed
    assert f"gold check: 1 valid, 2 broken ({ids[1]}, {ids[2]})" in printed
    predictions = [
        json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()
    ]
    assert {p["model_name_or_path"] for p in predictions} == {"gold"}
    assert "broken instance" in (out / "report.html").read_text()
    assert {r.method for r in emulator.requests} == {"GET"}


def test_a_patch_that_is_no_diff_does_not_apply_rather_than_change_nothing(
    served: tuple[GitHubEmulator, CalcHistory],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An agent's prose, or a diff mangled on its way into JSON, is text with no file's
    diff in it: counted `empty` ("the patch changes nothing"), it read as an agent that
    chose to change nothing; it is a patch that does not apply."""
    emulator, history = served
    subtract = history.fixes[0]
    file = tmp_path / "instances.jsonl"
    file.write_text(calc_instance(emulator, subtract).model_dump_json() + "\n")
    predictions = _write(
        tmp_path / "predictions.jsonl",
        [
            {
                "instance_id": instance_id(emulator.full_name, subtract.pull),
                "model_patch": "I could not find where subtract() belongs.",
            }
        ],
    )
    out = tmp_path / "scored"
    assert cli.main(["eval", "score", str(file), str(predictions), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    (result,) = json.loads((out / "results.json").read_text())
    assert (result["resolved"], result["outcome"]) == (False, "unapplied")
    assert result["reason"].startswith("patch does not apply: no file's diff in it")
    assert "not scored: patch does not apply 1, empty patch 0, no prediction 0" in printed


def test_gold_does_not_call_an_instance_broken_when_github_is_down(
    served: tuple[GitHubEmulator, CalcHistory],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A base tarball GitHub would not serve (503, every retry) says nothing of the
    instance: it was printed `BROKEN: it could not be scored: ...` and counted broken,
    which sends a person to fix a sound instance. It is now `NOT CHECKED`, counted
    apart, and the run exits 1 (an error) as before."""
    emulator, history = served
    subtract, multiply, _ = history.fixes
    instances = [calc_instance(emulator, subtract), calc_instance(emulator, multiply)]
    file = tmp_path / "instances.jsonl"
    file.write_text("".join(i.model_dump_json() + "\n" for i in instances))
    emulator.inject_fault("GET", rf"/tarball/{multiply.base}", status=503, times=1000)
    out = tmp_path / "gold"
    code = cli.main(["eval", "score", str(file), "--gold", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 1
    down = instances[1].instance_id
    assert f"{down}  NOT CHECKED: GitHubUnavailable: GET " in printed
    assert "BROKEN" not in printed
    assert (
        f"gold check: 1 valid, 0 broken; 1 not checked, GitHub unavailable ({down}): run it again"
    ) in printed
    # The instance's line clips the error; the summary says it whole, once.
    (said,) = [line for line in printed.splitlines() if line.startswith("error in ")]
    assert said.startswith(f"error in {down}; the first: GitHubUnavailable: GET ")
    results = {r["instance_id"]: r for r in json.loads((out / "results.json").read_text())}
    assert said.endswith(results[down]["error"])
    assert results[down]["outcome"] == "error"
    assert results[down]["gold_check"] is None
    assert results[instances[0].instance_id]["gold_check"]["valid"] is True
