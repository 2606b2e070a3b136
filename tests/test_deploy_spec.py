"""The rules of one agent's deploy, on reports shaped like the driver's (no process)."""

from __future__ import annotations

import copy
import pathlib
from typing import Any

import pytest

from agent_loop.deploy import DeploySpec, Workspace, check_spec, is_test_path

WS = Workspace(pathlib.Path("/ws"))
TRIGGER = {"name": "builder_schedule", "automation_spec": {"type": "TYPE_SCHEDULE"}}


def _report(**changes: Any) -> dict[str, Any]:
    files = [
        "packages/builder/src/agent_loop_builder/__init__.py",
        "packages/builder/src/agent_loop_builder/env.py",
        "packages/common/src/agent_loop_common/deploy.py",
    ]
    report: dict[str, Any] = {
        "agent": "builder",
        "load_errors": [],
        "modules": list(files),
        "bundle": {"files": [{"path": p, "sha256": "0" * 64} for p in files], "digest": "d"},
        "envs": [
            {
                "name": "builder",
                "image": {
                    "identity": "agent-loop-builder:abc",
                    "name": "agent-loop-builder",
                    "python": "3.11",
                    "locks": [
                        {
                            "path": "packages/builder/requirements.lock.txt",
                            "sha256": "1" * 64,
                            "testing_packages": [],
                        }
                    ],
                },
                "secrets": [],
                "tasks": [
                    {
                        "name": "builder.builder_tick",
                        "inputs": ["trigger_time"],
                        "triggers": [TRIGGER],
                        "trigger_errors": [],
                    }
                ],
            }
        ],
        "dry_run": {"tasks": [], "bundle_members": list(files)},
        "version": "v1",
    }
    report.update(changes)
    return report


def _with_file(path: str) -> dict[str, Any]:
    report = _report()
    report["modules"].append(path)
    report["bundle"]["files"].append({"path": path, "sha256": "2" * 64})
    report["dry_run"]["bundle_members"].append(path)
    return report


def test_a_clean_report_has_no_findings() -> None:
    assert check_spec(WS, DeploySpec("builder", _report())) == []


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("packages/reviewer/src/agent_loop_reviewer/_select.py", "code of the reviewer agent"),
        ("packages/distiller/src/agent_loop_distiller/lessons.py", "code of the distiller agent"),
        ("packages/builder/tests/test_select.py", "test code"),
        ("packages/builder/tests/helpers.py", "test code"),
        ("packages/common/src/agent_loop_common/testing/_emulator.py", "test code"),
        (
            "packages/testing/src/agent_loop_testing/_emulator.py",
            "the test doubles (agent-loop-testing)",
        ),
        ("packages/builder/src/agent_loop_builder/conftest.py", "test code"),
        ("src/agent_loop/cli.py", "outside builder and common"),
        ("bench/memory_io.py", "outside builder and common"),
    ],
)
def test_a_bundle_beyond_the_agent_and_common_is_refused(path: str, reason: str) -> None:
    findings = check_spec(WS, DeploySpec("builder", _with_file(path)))
    assert f"bundle holds {path}: {reason}" in findings
    assert f"deploy imports {path}: {reason}" in findings


def test_is_test_path() -> None:
    assert is_test_path("packages/x/tests/a.py")
    assert is_test_path("a/test_b.py")
    assert is_test_path("a/b_test.py")
    assert not is_test_path("packages/builder/src/agent_loop_builder/attest.py")
    assert not is_test_path("packages/builder/src/agent_loop_builder/contest_rules.py")


def test_every_environment_but_the_agents_own_is_refused() -> None:
    report = _report()
    report["envs"].append(copy.deepcopy(report["envs"][0]) | {"name": "reviewer"})
    findings = check_spec(WS, DeploySpec("builder", report))
    assert "declares environments ['builder', 'reviewer'], expected only ['builder']" in findings


def test_trigger_errors_and_a_missing_trigger_are_findings() -> None:
    report = _report()
    task = report["envs"][0]["tasks"][0]
    task["triggers"], task["trigger_errors"] = [], ["builder.builder_tick: trigger 'x': missing"]
    assert check_spec(WS, DeploySpec("builder", report)) == [
        "builder.builder_tick: trigger 'x': missing"
    ]
    task["trigger_errors"] = []
    assert check_spec(WS, DeploySpec("builder", report)) == [
        "no task declares a trigger: the agent would never run on its own"
    ]


def test_the_image_must_be_the_agents_own_pinned_and_test_free() -> None:
    report = _report()
    image = report["envs"][0]["image"]
    image.update(name="agent-loop-reviewer", identity="agent-loop-reviewer:abc", python="3.12")
    image["locks"] = [
        {
            "path": "packages/reviewer/requirements.lock.txt",
            "sha256": "x",
            "testing_packages": ["dulwich"],
        }
    ]
    assert check_spec(WS, DeploySpec("builder", report)) == [
        "env builder: image agent-loop-reviewer:abc is not agent-loop-builder",
        "env builder: image Python 3.12 is not the pinned 3.11",
        "env builder: image does not install exactly packages/builder/requirements.lock.txt",
        "packages/reviewer/requirements.lock.txt pins test-only dulwich",
    ]


def test_a_failed_import_is_not_buried_under_its_consequences() -> None:
    report = _report(
        load_errors=[{"module": "agent_loop_builder.env", "error": "ValueError: bad cron"}],
        envs=[],
    )
    report["dry_run"]["bundle_members"].pop()
    assert check_spec(WS, DeploySpec("builder", report)) == [
        "cannot import agent_loop_builder.env: ValueError: bad cron"
    ]


def test_image_errors_and_a_diverging_dry_run_are_findings() -> None:
    report = _report()
    report["envs"][0]["image"] = {"name": "agent-loop-builder", "error": "FileNotFoundError: lock"}
    report["dry_run"]["bundle_members"].pop()
    report["error"] = "DeploymentError: boom"
    assert check_spec(WS, DeploySpec("builder", report)) == [
        "env builder: image agent-loop-builder cannot be described: FileNotFoundError: lock",
        "the dry-run's code bundle differs from the listed bundle files",
        "deploy failed: DeploymentError: boom",
    ]


def test_identity_is_what_another_agents_change_must_not_move() -> None:
    spec = DeploySpec("builder", _report())
    identity = spec.identity()
    assert identity["version"] == "v1"
    assert identity["images"] == {"builder": "agent-loop-builder:abc"}
    assert set(identity["bundle"]) == {f["path"] for f in spec.report["bundle"]["files"]}
    assert identity["triggers"] == {"builder.builder_tick": [TRIGGER]}


def test_unknown_agents_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown agent 'planner'"):
        WS.check_agent("planner")


def test_settings_of_the_deploying_shell_must_reach_the_tasks() -> None:
    report = _report()
    report["envs"][0]["env_vars"] = {"AGENT_LOOP_REPO": "acme/widgets", "GITHUB_API_URL": "old"}
    spec = DeploySpec("builder", report)
    expected = {"AGENT_LOOP_REPO": "acme/widgets", "GITHUB_API_URL": "new", "AGENT_LOOP_MODEL": "m"}
    assert check_spec(WS, spec, expected_env=expected) == [
        "env builder does not forward AGENT_LOOP_MODEL, GITHUB_API_URL to its tasks "
        "(declare TaskEnvironment(env_vars=agent_env_vars()))"
    ]
    assert check_spec(WS, spec, expected_env={"AGENT_LOOP_REPO": "acme/widgets"}) == []
