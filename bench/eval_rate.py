"""Instances per minute of `agent-loop eval run` on this machine, with an instant model.

The calc sample's three merged fixes (`seed_calc_history`), each repeated under REPEAT
(default 4) instance ids, are run through `agent-loop eval run` in Flyte local mode
against the GitHub emulator served on loopback, in the real bubblewrap sandbox (this
workspace's Python runs each instance's tests), answered by `InstantModel` (three model
turns and a verdict, in no time). What is measured is therefore the eval's own cost per
instance: the base tarball download, the builder's replay (agent loop, visible tests
on the base and on the change, verifier), the scoring run with the hidden tests, the
results and the report. Each instance runs the visible tests on its change and the
scoring run in the sandbox; the visible tests on the base (the baseline) run once per
base commit and command in a run, shared by the instances that have it (the REPEAT
copies of a fix). `sandbox runs` counts them from the results (`visible_tests.runs`,
plus one scoring run per scored change).

Each K of PARALLEL (default 1 2 4) runs all instances with `--parallel K` in a fresh
home and prints wall time and instances per minute (a Markdown table). Times move with
the load of a shared machine; compare rows of one run.

Run with `uv run --frozen python bench/eval_rate.py [REPEAT] [K ...]`; it needs
bubblewrap (`apt-get install bubblewrap`).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from agent_loop import cli
from agent_loop_common.runtime import use_model
from agent_loop_eval import Instance, diff_files, instance_id
from agent_loop_testing import (
    GitHubEmulator,
    InstantModel,
    bwrap_works,
    seed_calc_history,
)

TEST_COMMAND = (
    f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:agent_loop_hermetic "
    "--junitxml=$SANDBOX_JUNIT"
)


def _instances(emulator: GitHubEmulator, repeat: int) -> list[Instance]:
    history = seed_calc_history(emulator)
    return [
        Instance(
            instance_id=instance_id(emulator.full_name, 100 * copy + fix.pull),
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
        for copy in range(repeat)
        for fix in history.fixes
    ]


def _sandbox_runs(out: Path) -> int:
    """Sandbox runs of a run, from its results: each build's, and each scoring run."""
    results = json.loads((out / "results.json").read_text())
    return sum((r["visible_tests"] or {}).get("runs", 0) + bool(r["scoring"]) for r in results)


def _run(parallel: int, repeat: int, work: Path) -> tuple[int, float, int]:
    """One `eval run` of every instance at `--parallel K`; (instances, wall seconds,
    sandbox runs)."""
    emulator = GitHubEmulator()
    instances = _instances(emulator, repeat)
    file = work / f"instances-{parallel}.jsonl"
    file.write_text("".join(i.model_dump_json() + "\n" for i in instances))
    for key in [k for k in os.environ if k.startswith(("GITHUB_", "AGENT_LOOP_"))]:
        del os.environ[key]
    with emulator.serve() as url:
        os.environ.update(
            {
                "GITHUB_API_URL": url,
                "GITHUB_TOKEN": emulator.bot_token,
                "AGENT_LOOP_REPO": emulator.full_name,
                "AGENT_LOOP_HOME": str(work / f"home-{parallel}"),
                "AGENT_LOOP_SANDBOX": "bwrap",
                "AGENT_LOOP_MAX_TRIES": "1",
            }
        )
        with use_model(InstantModel()):
            started = time.perf_counter()
            code = cli.main(
                [
                    "eval",
                    "run",
                    str(file),
                    "--parallel",
                    str(parallel),
                    "--out",
                    str(work / f"out-{parallel}"),
                ]
            )
            seconds = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"eval run --parallel {parallel} exited {code}")
    return len(instances), seconds, _sandbox_runs(work / f"out-{parallel}")


def main(argv: list[str]) -> None:
    works, why = bwrap_works()
    if not works:
        raise SystemExit(f"bubblewrap cannot run here: {why}")
    repeat = int(argv[0]) if argv else 4
    ks = [int(k) for k in argv[1:]] or [1, 2, 4]
    with tempfile.TemporaryDirectory(prefix="eval-rate-") as tmp:
        rows = [(k, *_run(k, repeat, Path(tmp))) for k in ks]
    print()
    print("| parallel K | instances | sandbox runs | wall s | instances / min | s / instance |")
    print("|---:|---:|---:|---:|---:|---:|")
    for k, n, seconds, runs in rows:
        print(
            f"| {k} | {n} | {runs} | {seconds:.1f} | {60 * n / seconds:.1f} | {seconds / n:.2f} |"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
