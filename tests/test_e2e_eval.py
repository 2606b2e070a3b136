"""`agent-loop eval run` and `eval compare` end to end, through the CLI.

The calc sample grows by three merged fixes (`seed_calc_history`); each becomes an
instance (its base commit, its issue's text, its tests hidden as the test patch). A
scripted model solves the first, writes a wrong fix for the second (its FAIL_TO_PASS
test fails) and breaks `add` for negative numbers in the third (a PASS_TO_PASS test the
builder's visible tests do not catch). The run goes through `main(["eval", "run", ...])`
in Flyte local mode against the emulator served on loopback, the real builder pipeline
and the real bubblewrap sandbox, and each instance must be scored exactly.

What must never happen is checked as well: the run sends GitHub nothing but the base
tarballs (no write at all), and no canary of a fix's code, of its tests or of a later
commit reaches a model call (tool results included) or a sandbox run of the instance
before its scoring run.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator

import pytest

from agent_loop import cli
from agent_loop_common.runtime import use_model, use_sandbox
from agent_loop_common.sandbox import SandboxLimits
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    VERIFIED,
    CalcHistory,
    GitHubEmulator,
    ModelPerIssue,
    RecordingSandbox,
    ScriptedModel,
    bwrap_e2e_marks,
    call,
    seed_calc_history,
    serve_for_cli,
    turn,
)
from calc_instances import calc_instance

pytestmark = bwrap_e2e_marks()

CALC = "src/calc.py"


def _solve(base_code: str, added: str) -> ScriptedModel:
    """A builder run that looks around (searching for the canaries), stages `added` at
    the end of `src/calc.py` and submits; its verifier accepts."""
    return ScriptedModel(
        [
            turn(tool_calls=[call("search_code", pattern="canary")]),
            turn(tool_calls=[call("read_file", path="tests/test_calc.py")]),
            turn(tool_calls=[call("stage_file", path=CALC, content=base_code + added)]),
            turn(
                tool_calls=[call("submit_implementation", title="Fix", body="Done.", summary="s")]
            ),
            turn("Submitted."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED)]},
    )


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
        AGENT_LOOP_MAX_TRIES="1",
        AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS="120",
    ):
        yield emulator, history


def test_a_run_scores_each_instance_exactly_and_leaks_nothing(
    served: tuple[GitHubEmulator, CalcHistory],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator, history = served
    instances = [calc_instance(emulator, fix) for fix in history.fixes]
    file = tmp_path / "instances.jsonl"
    file.write_text("".join(i.model_dump_json() + "\n" for i in instances))
    subtract, multiply, divide = history.fixes
    models = ModelPerIssue(
        {
            1: _solve(subtract.before[CALC], "\n\ndef subtract(a, b):\n    return a - b\n"),
            2: _solve(multiply.before[CALC], "\n\ndef multiply(a, b):\n    return a + b\n"),
            3: _solve(
                divide.before[CALC].replace("return a + b", "return abs(a) + abs(b)"),
                "\n\ndef divide(a, b):\n    return a / b\n",
            ),
        }
    )
    sandbox = RecordingSandbox(SandboxLimits(wall_seconds=120))
    emulator.clear_requests()
    out = tmp_path / "run-a"
    with use_model(models), use_sandbox(sandbox):
        code = cli.main(["eval", "run", str(file), "--out", str(out)])
    printed, err = capsys.readouterr()
    assert code == 0, err
    models.assert_finished()

    results = {r["instance_id"]: r for r in json.loads((out / "results.json").read_text())}
    ids = [i.instance_id for i in instances]
    assert list(results) == ids
    first, second, third = (results[i] for i in ids)
    assert first["resolved"] is True
    assert first["failing_tests"] == []
    assert set(first["tests"].values()) == {"passed"}
    assert second["resolved"] is False
    assert second["failing_tests"] == ["tests/test_calc.py::test_multiply"]
    assert third["resolved"] is False
    assert third["failing_tests"] == ["tests/test_calc.py::test_add_negative"]
    assert third["tests"]["tests/test_calc.py::test_divide"] == "passed"
    for result in (first, second, third):
        assert result["outcome"] == "change"
        assert result["tries"] == 1
        assert result["github_requests"] == 0
        assert result["tokens_in"] > 0
        assert result["diff"].startswith("diff --git a/src/calc.py b/src/calc.py\n")
        assert result["model"] == "scripted"
        assert [v["verified"] for v in result["verdicts"]] == [True]
    assert "+def subtract(a, b):" in first["diff"]

    predictions = [
        json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()
    ]
    assert [set(p) for p in predictions] == [
        {"instance_id", "model_name_or_path", "model_patch"}
    ] * 3
    assert [p["model_patch"] for p in predictions] == [r["diff"] for r in results.values()]
    report = (out / "report.html").read_text()
    assert "1 of 3" in report
    assert "+def subtract(a, b):" in report
    progress = [line for line in printed.splitlines() if line.startswith("[")]
    assert len(progress) == 3
    assert f"{ids[0]}  resolved" in printed
    assert "test_calc.py::test_multiply" in printed
    assert "resolved 1 of 3 (33.3%" in printed

    # GitHub saw reads of the three base tarballs and nothing else.
    assert emulator.requests, "the bases were downloaded"
    assert {r.method for r in emulator.requests} == {"GET"}
    assert all(
        "/tarball/" in r.path or r.path.startswith("/_codeload/") for r in emulator.requests
    ), emulator.requests
    assert sorted(r.path.rsplit("/", 1)[1] for r in emulator.requests if "/tarball/" in r.path) == (
        sorted(fix.base for fix in history.fixes)
    )

    # No canary of the fix, its tests or later work reached the model of its instance...
    for k, fix in enumerate(history.fixes):
        forbidden = [history.later_canary, *fix.canaries]
        forbidden += [c for later in history.fixes[k + 1 :] for c in later.canaries]
        seen = json.dumps([(c.system, c.messages) for c in models.models[fix.issue].calls])
        assert not [c for c in forbidden if c in seen], fix.title
    # ...nor a sandbox run of it before its scoring run, which is its last.
    golds = [fix.gold_canary for fix in history.fixes]
    scoring: list[int] = []
    for index, run in enumerate(sandbox.calls):
        k = sum(g in run.tree for g in golds)  # a base holds the fixes merged before it
        fix = history.fixes[k]
        later = [c for f in history.fixes[k + 1 :] for c in f.canaries]
        assert not [c for c in [history.later_canary, fix.gold_canary, *later] if run.shows(c)]
        if run.shows(fix.test_canary):
            assert fix.test_canary in run.changes
            scoring.append(index)
    assert len(scoring) == 3
    for k, index in enumerate(scoring):
        others = [
            i for i, run in enumerate(sandbox.calls) if sum(g in run.tree for g in golds) == k
        ]
        assert index == max(others), "the scoring run is the instance's last"


def test_compare_pairs_two_runs(
    served: tuple[GitHubEmulator, CalcHistory],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two runs of two instances, K=2 at a time: A solves only the first, B only the
    second; `eval compare` prints the paired table."""
    emulator, history = served
    instances = [calc_instance(emulator, fix) for fix in history.fixes]
    file = tmp_path / "instances.jsonl"
    file.write_text("".join(i.model_dump_json() + "\n" for i in instances))
    subtract, multiply, _ = history.fixes
    right = {
        1: "\n\ndef subtract(a, b):\n    return a - b\n",
        2: "\n\ndef multiply(a, b):\n    return a * b\n",
    }
    wrong = {
        1: "\n\ndef subtract(a, b):\n    return b - a\n",
        2: "\n\ndef multiply(a, b):\n    return a + b\n",
    }
    before = {1: subtract.before[CALC], 2: multiply.before[CALC]}
    chosen = ",".join(i.instance_id for i in instances[:2])
    runs: list[pathlib.Path] = []
    for name, pick in (("a", {1: right, 2: wrong}), ("b", {1: wrong, 2: right})):
        models = ModelPerIssue({n: _solve(before[n], pick[n][n]) for n in (1, 2)})
        runs.append(tmp_path / name)
        with use_model(models):
            argv = ["eval", "run", str(file), "--instances", chosen, "--parallel", "2"]
            code = cli.main([*argv, "--lessons", "off", "--out", str(runs[-1])])
        assert code == 0, capsys.readouterr().err
        models.assert_finished()
    capsys.readouterr()

    assert cli.main(["eval", "compare", str(runs[0]), str(runs[1] / "results.json")]) == 0
    text = capsys.readouterr().out
    assert "2 instance(s) paired" in text
    assert "resolved by both: 0, neither: 0, only A: 1, only B: 1" in text
    assert "exact McNemar p = 1.0000" in text
    assert f"only A: {instances[0].instance_id}" in text
    assert f"only B: {instances[1].instance_id}" in text
    assert cli.main(["eval", "compare", str(runs[0]), str(runs[1]), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["paired"] == 2
    assert data["only_a"] == [instances[0].instance_id]
