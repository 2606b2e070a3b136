"""The eval deploys alone, as a worker: its own env and image, tasks called by name (no
trigger), a bundle that may hold the builder it replays and nothing else of an agent."""

from __future__ import annotations

import copy
import io
import pathlib
from typing import Any

import pytest

from agent_loop.deploy import (
    DEPLOYABLES,
    WORKERS,
    DeploySpec,
    Validation,
    Workspace,
    check_spec,
    deploy_agent,
    validate_agent,
)
from agent_loop_common.deploy import TESTS_ENV

pytestmark = pytest.mark.slow

WS = Workspace(pathlib.Path("/ws"))


@pytest.fixture(scope="module")
def evaluation() -> Validation:
    """The real eval package, validated offline as `infra/ci/validate-deploy eval` does."""
    return validate_agent("eval")


def test_the_eval_is_a_worker_that_deploys_alone(evaluation: Validation) -> None:
    assert "eval" in WORKERS
    assert "eval" in DEPLOYABLES
    assert evaluation.findings == []
    assert evaluation.spec is not None
    assert sorted(evaluation.spec.env_names) == sorted(["eval", TESTS_ENV])
    image = evaluation.spec.images["eval"]
    assert image["name"] == "agent-loop-eval"
    assert [lock["path"] for lock in image["locks"]] == ["packages/eval/requirements.lock.txt"]
    bundle = evaluation.spec.bundle
    assert any(p.startswith("packages/eval/src/agent_loop_eval/") for p in bundle)
    allowed = ("packages/eval/src/", "packages/builder/src/", "packages/common/src/")
    assert all(p.startswith(allowed) for p in bundle), sorted(bundle)
    # The builder's env module is never loaded by the eval's deploy (no builder env is
    # registered: `env_names` above). Its file can still be in the bundle: flyte 2.12.1
    # adds ruff's static import graph to the loaded modules, and the builder's `run_once`
    # imports its env lazily. Its module must not be among the loaded ones.
    assert not any(
        p.startswith("packages/builder/src/agent_loop_builder/env")
        for p in evaluation.spec.report["modules"]
    )


def _worker_report(spec: DeploySpec) -> dict[str, Any]:
    return copy.deepcopy(spec.report)


def test_a_trigger_on_the_eval_is_a_finding(evaluation: Validation) -> None:
    assert evaluation.spec is not None
    report = _worker_report(evaluation.spec)
    (env,) = [e for e in report["envs"] if e["name"] == "eval"]
    env["tasks"].append(
        {"name": "eval.nightly", "inputs": [], "triggers": [{"name": "x"}], "trigger_errors": []}
    )
    findings = check_spec(Workspace(WS.root), DeploySpec("eval", report), dict(env["env_vars"]))
    assert (
        "task eval.nightly: a trigger on a worker, whose tasks run only when called by name"
        in findings
    )


def test_only_the_eval_may_bundle_the_builder(evaluation: Validation) -> None:
    assert evaluation.spec is not None
    builder_file = "packages/builder/src/agent_loop_builder/_pipeline.py"
    reviewer_file = "packages/reviewer/src/agent_loop_reviewer/_select.py"
    report = _worker_report(evaluation.spec)
    for path in (builder_file, reviewer_file):
        report["modules"].append(path)
        report["bundle"]["files"].append({"path": path, "sha256": "2" * 64})
    (env,) = [e for e in report["envs"] if e["name"] == "eval"]
    findings = check_spec(Workspace(WS.root), DeploySpec("eval", report), dict(env["env_vars"]))
    assert not any(builder_file in f for f in findings)
    assert f"deploy imports {reviewer_file}: code of the reviewer agent" in findings
    assert Workspace(WS.root).bundled_members("distiller") == ("distiller", "common")


def test_agent_loop_deploy_eval_dry_run() -> None:
    out = io.StringIO()
    assert deploy_agent("eval", dry_run=True, config=None, out=out) == 0, out.getvalue()
    text = out.getvalue()
    assert "env eval: image agent-loop-eval:" in text
    assert text.rstrip().splitlines()[-1].startswith("eval: dry run ok in ")
