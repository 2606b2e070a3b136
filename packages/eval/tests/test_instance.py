"""Instances in SWE-bench's field names: ours round-trip, SWE-bench's own files read."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_loop_eval import (
    Instance,
    InstanceFileError,
    instance_id,
    instance_line,
    read_instances,
    write_instances,
)

SWE_BENCH_LINE = {
    "repo": "astropy/astropy",
    "instance_id": "astropy__astropy-12907",
    "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
    "patch": "diff --git a/x.py b/x.py\n",
    "test_patch": "diff --git a/tests/test_x.py b/tests/test_x.py\n",
    "problem_statement": "Modeling's `separability_matrix` does not compute ...",
    "hints_text": "",
    "created_at": "2022-03-03T15:14:54Z",
    "version": "4.3",
    "FAIL_TO_PASS": '["astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]"]',
    "PASS_TO_PASS": '["astropy/modeling/tests/test_separable.py::test_coord_matrix"]',
    "environment_setup_commit": "298ccb478e6bf092953bca67a3d29dc6c35f6752",
}


def _ours() -> Instance:
    return Instance(
        instance_id=instance_id("acme/calc", 7),
        repo="acme/calc",
        base_commit="a" * 40,
        problem_statement="add() subtracts\n\nIt should add.",
        patch="diff --git a/calc.py b/calc.py\n",
        test_patch="diff --git a/tests/test_calc.py b/tests/test_calc.py\n",
        FAIL_TO_PASS=["tests/test_calc.py::test_add"],
        PASS_TO_PASS=["tests/test_calc.py::TestSub::test_sub[1-2]"],
        created_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
        issue_numbers=[3],
        pull_number=7,
        test_command="python -m pytest -q",
    )


def test_an_instance_round_trips_through_a_jsonl_file(tmp_path: Path) -> None:
    path = tmp_path / "eval" / "instances.jsonl"
    assert write_instances(path, [_ours()]) == 1
    assert write_instances(path, [_ours().model_copy(update={"pull_number": 8})], append=True) == 1
    first, second = read_instances(path)
    assert first == _ours()
    assert second.pull_number == 8
    line = json.loads(path.read_text().splitlines()[0])
    assert line["instance_id"] == "acme__calc-7"
    assert line["created_at"] == "2025-01-02T03:04:05Z"
    assert line["FAIL_TO_PASS"] == ["tests/test_calc.py::test_add"]
    assert list(line)[:4] == ["instance_id", "repo", "base_commit", "problem_statement"]


def test_a_swe_bench_line_made_elsewhere_reads(tmp_path: Path) -> None:
    path = tmp_path / "subset.jsonl"
    path.write_text(json.dumps(SWE_BENCH_LINE) + "\n\n")
    (instance,) = read_instances(path)
    assert instance.FAIL_TO_PASS == [
        "astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]"
    ]
    assert instance.PASS_TO_PASS == ["astropy/modeling/tests/test_separable.py::test_coord_matrix"]
    assert instance.pull_number == 12907
    assert instance.created_at == datetime(2022, 3, 3, 15, 14, 54, tzinfo=UTC)
    assert instance.issue_numbers == []
    assert instance.test_command == ""
    # Written back, it is still a SWE-bench line (lists as lists, the same time form).
    again = json.loads(instance_line(instance))
    assert again["created_at"] == SWE_BENCH_LINE["created_at"]
    listed = tmp_path / "subset.json"
    listed.write_text(json.dumps([SWE_BENCH_LINE]))
    assert read_instances(listed) == [instance]


def test_a_bad_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(instance_line(_ours()) + "\n{not json\n")
    with pytest.raises(InstanceFileError, match=r"bad\.jsonl:2: not JSON"):
        read_instances(path)
    path.write_text(json.dumps({"instance_id": "x"}) + "\n")
    with pytest.raises(InstanceFileError, match=r"bad\.jsonl:1: not an instance"):
        read_instances(path)


def test_instance_ids_are_swe_benchs() -> None:
    assert instance_id("psf/requests", 863) == "psf__requests-863"
    with pytest.raises(ValueError, match="owner/name"):
        instance_id("requests", 1)
