"""Instances of one `agent-loop eval run` share the base commit's visible-test baseline.

Every build checks its change against the repository's tests on the base commit (its
baseline). Instances that share a base commit, a test command and a setup (a SWE-bench
file with several issues at one commit, one instance under two ids) ran that baseline
once each. Now the run's instances share one baseline store, keyed as a live tick keys
it (base SHA, command, setup; the dependency files are the base commit's), so the
baseline runs once per key in a run, and nothing is reused across keys: an instance at
the same base with another test command gets its own.

Through the CLI: Flyte local mode (`--parallel 2`, so two instances wait on one
baseline in flight), the emulator on loopback, the builder replayed with an instant
model, the real bubblewrap sandbox. What each build ran is in its result
(`visible_tests.runs`: the baseline when it ran it, and each checked change).
"""

from __future__ import annotations

import json
import pathlib

import pytest

from agent_loop import cli
from agent_loop_common.runtime import use_model
from agent_loop_eval import Instance
from agent_loop_testing import (
    CalcFix,
    GitHubEmulator,
    InstantModel,
    bwrap_e2e_marks,
    seed_calc_history,
    serve_for_cli,
)
from calc_instances import TEST_COMMAND, calc_instance

pytestmark = bwrap_e2e_marks()


def _instance(emulator: GitHubEmulator, fix: CalcFix, number: int, command: str) -> Instance:
    """`fix` under another number (its own instance id and issue) and test command."""
    return calc_instance(emulator, fix, number=number, issue_numbers=[number], test_command=command)


def test_instances_at_one_base_share_its_baseline_and_no_other_key_reuses_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator = GitHubEmulator()
    subtract, multiply, _ = seed_calc_history(emulator).fixes
    instances = [
        _instance(emulator, subtract, 11, TEST_COMMAND),
        _instance(emulator, subtract, 111, TEST_COMMAND),
        # The same base, another command: a baseline of its own.
        _instance(emulator, subtract, 211, f"{TEST_COMMAND} -k test_add"),
        # Another base: a baseline of its own.
        _instance(emulator, multiply, 12, TEST_COMMAND),
    ]
    file = tmp_path / "instances.jsonl"
    file.write_text("".join(i.model_dump_json() + "\n" for i in instances))
    out = tmp_path / "out"
    with (
        serve_for_cli(
            monkeypatch,
            emulator,
            tmp_path / "home",
            AGENT_LOOP_SANDBOX="bwrap",
            AGENT_LOOP_MAX_TRIES="1",
            AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS="120",
        ),
        use_model(InstantModel()),
    ):
        code = cli.main(["eval", "run", str(file), "--parallel", "2", "--out", str(out)])
    _, err = capsys.readouterr()
    assert code == 0, err

    results = {r["instance_id"]: r for r in json.loads((out / "results.json").read_text())}
    same, again, other_command, other_base = (results[i.instance_id] for i in instances)
    for result in results.values():
        assert result["outcome"] == "change", result["reason"]
        assert result["tries"] == 1
    # One baseline for the two instances at one base and command: 3 runs, not 4.
    assert same["visible_tests"]["runs"] + again["visible_tests"]["runs"] == 3
    assert same["visible_tests"]["base"] == again["visible_tests"]["base"]
    # Another command or another base runs its own baseline, and says what it saw.
    assert other_command["visible_tests"]["runs"] == 2
    assert other_base["visible_tests"]["runs"] == 2
    assert "1 passed" in other_command["visible_tests"]["base"]
    assert "2 passed" in other_base["visible_tests"]["base"]
