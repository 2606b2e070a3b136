"""Instance files made by other tools than SWE-bench's own datasets: a `version` written
as a number, no `created_at` at all. Each still reads, and writes back as SWE-bench's
form (the version as text, no invented date)."""

from __future__ import annotations

import json
from pathlib import Path

from agent_loop_eval import instance_line, read_instances

LINE = {
    "repo": "acme/calc",
    "instance_id": "acme__calc-12",
    "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
    "patch": "diff --git a/x.py b/x.py\n",
    "test_patch": "diff --git a/tests/test_x.py b/tests/test_x.py\n",
    "problem_statement": "add() subtracts\n",
    "FAIL_TO_PASS": '["tests/test_x.py::test_add"]',
    "PASS_TO_PASS": "[]",
}


def test_a_numeric_version_and_no_date_read(tmp_path: Path) -> None:
    path = tmp_path / "made-elsewhere.jsonl"
    path.write_text(json.dumps({**LINE, "version": 3.0}) + "\n" + json.dumps(LINE) + "\n")
    numbered, undated = read_instances(path)
    assert numbered.version == "3.0"
    assert undated.created_at is None
    assert undated.pull_number == 12
    again = json.loads(instance_line(undated))
    assert again["created_at"] is None
    assert again["FAIL_TO_PASS"] == ["tests/test_x.py::test_add"]
