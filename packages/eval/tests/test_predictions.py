"""SWE-bench predictions files, as any agent writes them, and how they pair with instances."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_loop_eval import (
    Instance,
    PredictionFileError,
    gold_predictions,
    missing_result,
    pair_predictions,
    read_predictions,
)


def _instance(n: int, patch: str = "") -> Instance:
    return Instance(
        instance_id=f"acme__calc-{n}",
        repo="acme/calc",
        base_commit="a" * 40,
        problem_statement="Add it",
        patch=patch,
        FAIL_TO_PASS=["tests/test_calc.py::test_it"],
        created_at=datetime.now(UTC),
    )


def test_a_jsonl_file_and_a_json_list_read_the_same(tmp_path: Path) -> None:
    rows = [
        {"instance_id": "acme__calc-1", "model_name_or_path": "m", "model_patch": "diff"},
        # SWE-bench writes null for an agent that produced nothing; extra fields are kept out
        {"instance_id": "acme__calc-2", "model_name_or_path": None, "model_patch": None, "x": 1},
    ]
    lines = tmp_path / "p.jsonl"
    lines.write_text(json.dumps(rows[0]) + "\n\n" + json.dumps(rows[1]) + "\n")
    listed = tmp_path / "p.json"
    listed.write_text(json.dumps(rows))
    assert read_predictions(lines) == read_predictions(listed)
    first, second = read_predictions(lines)
    assert (first.instance_id, first.model_name_or_path, first.model_patch) == (
        "acme__calc-1",
        "m",
        "diff",
    )
    assert (second.model_name_or_path, second.model_patch) == ("", "")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"instance_id": "a"}\nnot json\n', "p.jsonl:2: not JSON"),
        ('{"model_patch": "x"}\n', "p.jsonl:1: not a prediction"),
        ('{"instance_id": "a"}\n{"instance_id": "a"}\n', "p.jsonl:2: a second prediction for a"),
        ('[{"instance_id": "a"}', "not a JSON list"),
        ('[{"instance_id": "a"}, 3]', "p.jsonl: item 2: not a prediction"),
    ],
)
def test_a_file_that_is_not_predictions_is_refused_naming_the_line(
    tmp_path: Path, text: str, said: str
) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    with pytest.raises(PredictionFileError, match=said):
        read_predictions(path)


def test_pairing_keeps_the_instances_order_and_names_the_missing_and_the_strangers(
    tmp_path: Path,
) -> None:
    instances = [_instance(n, patch=f"gold {n}") for n in (1, 2, 3)]
    path = tmp_path / "p.jsonl"
    path.write_text(
        "".join(
            json.dumps({"instance_id": i, "model_patch": "p"}) + "\n"
            for i in ("acme__calc-3", "other__repo-9", "acme__calc-1")
        )
    )
    pairs, missing, strangers = pair_predictions(instances, read_predictions(path))
    assert [(i.instance_id, p.instance_id) for i, p in pairs] == [
        ("acme__calc-1", "acme__calc-1"),
        ("acme__calc-3", "acme__calc-3"),
    ]
    assert [i.instance_id for i in missing] == ["acme__calc-2"]
    assert strangers == ["other__repo-9"]

    result = missing_result(instances[1])
    assert (result.resolved, result.outcome, result.reason) == (
        False,
        "missing",
        "no prediction for this instance",
    )
    gold = gold_predictions(instances)
    assert [(p.model_name_or_path, p.model_patch) for p in gold] == [
        ("gold", f"gold {n}") for n in (1, 2, 3)
    ]
