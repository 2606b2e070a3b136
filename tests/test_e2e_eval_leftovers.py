"""What `agent-loop eval run` leaves behind: its results, predictions and report, and
nothing of Flyte's.

Flyte's local mode keeps each run's metadata (and the run task's Flyte report) under
`/tmp/flyte/metadata/<run>/`, the SDK's fixed path. An agent's tick copies its report
out and removes that folder (`keep_report`); `eval run` went through `run_task`, which
did not, so every run left a folder there that nothing ever cleaned. Now the run's
folder is removed once its output is read, and what a user needs is in `--out`.

Through the CLI: Flyte local mode, the emulator served on loopback, the builder
replayed with an instant model, the real bubblewrap sandbox. Other processes may run
Flyte at the same time, so the run is recognised by an instance id no other run has.
"""

from __future__ import annotations

import json
import os
import pathlib
import time
from datetime import UTC, datetime

import pytest

from agent_loop import cli
from agent_loop_common.runtime import use_model
from agent_loop_common.runtime._reports import LOCAL_METADATA_ROOT
from agent_loop_eval import Instance, diff_files, instance_id
from agent_loop_testing import (
    GitHubEmulator,
    InstantModel,
    bwrap_e2e_marks,
    seed_calc_history,
    serve_for_cli,
)
from calc_instances import TEST_COMMAND

pytestmark = bwrap_e2e_marks()


def _mentioning(text: str) -> list[pathlib.Path]:
    """Files under Flyte's local metadata folder that mention `text`."""
    if not LOCAL_METADATA_ROOT.is_dir():
        return []
    found: list[pathlib.Path] = []
    for path in LOCAL_METADATA_ROOT.rglob("*"):
        try:
            if path.is_file() and text in path.read_text(errors="replace"):
                found.append(path)
        except OSError:  # another process's run folder, removed meanwhile
            continue
    return found


def test_a_run_leaves_its_files_in_out_and_no_flyte_metadata(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator = GitHubEmulator()
    fix = seed_calc_history(emulator).fixes[0]
    unique = instance_id(emulator.full_name, os.getpid() * 1_000 + time.time_ns() % 1_000)
    instance = Instance(
        instance_id=unique,
        repo=emulator.full_name,
        base_commit=fix.base,
        problem_statement=f"{fix.title}\n\n{fix.body}",
        patch=diff_files(fix.before, fix.code, fix.code),
        test_patch=diff_files(fix.before, fix.tests, fix.tests),
        FAIL_TO_PASS=fix.fail_to_pass,
        PASS_TO_PASS=fix.pass_to_pass,
        created_at=datetime.now(UTC),
        issue_numbers=[fix.issue],
        test_command=TEST_COMMAND,
    )
    file = tmp_path / "instances.jsonl"
    file.write_text(instance.model_dump_json() + "\n")
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
        code = cli.main(["eval", "run", str(file), "--out", str(out)])
    printed, err = capsys.readouterr()
    assert code == 0, err

    assert sorted(p.name for p in out.iterdir()) == [
        "predictions.jsonl",
        "report.html",
        "results.json",
    ]
    assert [r["instance_id"] for r in json.loads((out / "results.json").read_text())] == [unique]
    assert unique in (out / "report.html").read_text()
    assert f"report:      {out / 'report.html'}" in printed
    # Flyte's own copy of the run (its report names the instance) is gone.
    assert _mentioning(unique) == []
