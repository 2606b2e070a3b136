"""`agent-loop eval compare` as a user meets it: a table whose numbers sit under their
headings whatever the runs are called, two runs with nothing in common refused with a
sentence (not a table of zeros and p = 1), and a file that is not a run's results named
as such."""

from __future__ import annotations

import pathlib

import pytest

from agent_loop import cli
from agent_loop_eval import InstanceResult, write_results


def _run(folder: pathlib.Path, resolved: dict[str, bool]) -> pathlib.Path:
    results = [
        InstanceResult(instance_id=i, resolved=r, outcome="change") for i, r in resolved.items()
    ]
    write_results(folder, results, model="m")
    return folder


def _compare(
    capsys: pytest.CaptureFixture[str], a: pathlib.Path, b: pathlib.Path
) -> tuple[int, str, str]:
    code = cli.main(["eval", "compare", str(a), str(b)])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_paired_table_lines_up(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # runs with short names: `eval compare a b`
    _run(tmp_path / "a", {"x-1": True, "x-2": True, "x-3": False})
    _run(tmp_path / "b", {"x-1": True, "x-2": False, "x-3": False})
    code, out, _ = _compare(capsys, pathlib.Path("a"), pathlib.Path("b"))
    assert code == 0
    lines = out.splitlines()
    head = next(line for line in lines if "B resolved" in line)
    row = next(line for line in lines if line.startswith("A resolved"))
    other = next(line for line in lines if line.startswith("A not"))
    # Each count ends where its heading ends.
    assert row.index("1") + 1 == head.index("B resolved") + len("B resolved")
    assert len(row) == len(other) == len(head)


def test_runs_with_nothing_in_common_are_refused(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _run(tmp_path / "a", {"x-1": True})
    b = _run(tmp_path / "b", {"y-1": True, "y-2": False})
    code, out, err = _compare(capsys, a, b)
    assert code == 2
    assert out == ""
    assert "no instance in common (1 and 2 instance(s))" in err


def test_a_file_that_is_no_results_is_named(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _run(tmp_path / "a", {"x-1": True})
    code, _, err = _compare(capsys, a, a / "predictions.jsonl")
    assert code == 2
    assert "predictions.jsonl: not a run's results.json" in err


def test_instances_that_ended_in_error_are_named_not_silently_lost(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run whose GitHub was down for an instance lost it as "not resolved", and the
    comparison read as "A is better" with nothing saying why."""
    a = _run(tmp_path / "a", {"x-1": True, "x-2": True})
    b = tmp_path / "b"
    write_results(
        b,
        [
            InstanceResult(instance_id="x-1", resolved=True, outcome="change"),
            InstanceResult(
                instance_id="x-2", resolved=False, outcome="error", error="GitHubUnavailable: x"
            ),
        ],
        model="m",
    )
    code, out, _ = _compare(capsys, a, b)
    assert code == 0
    assert "only A: x-2" in out
    assert (
        "error in B (counted as not resolved; the eval failed, not the change: run them again): x-2"
    ) in out.splitlines()
    assert "error in A" not in out
    assert cli.main(["eval", "compare", str(a), str(b), "--json"]) == 0
    assert '"errors_a":[],"errors_b":["x-2"]' in capsys.readouterr().out
