"""The gateway deploys like an agent, as an app: its own env, image, lock, bundle, secrets.

The pure rules run on reports shaped like the driver's; the slow test loads the real
gateway package in the driver (offline dry run) and checks that no agent's deploy holds
gateway code and the gateway's holds no agent's.
"""

from __future__ import annotations

import pathlib
from typing import Any

import flyte
import pytest

from agent_loop.deploy import ROOT, DeploySpec, Workspace, check_spec, validate_agent
from agent_loop_common.deploy import gateway_secrets

WS = Workspace(ROOT)


def _report(**app: Any) -> dict[str, Any]:
    files = [
        "packages/gateway/src/agent_loop_gateway/__init__.py",
        "packages/gateway/src/agent_loop_gateway/env.py",
        "packages/common/src/agent_loop_common/deploy.py",
    ]
    return {
        "agent": "gateway",
        "load_errors": [],
        "modules": list(files),
        "bundle": {"files": [{"path": p, "sha256": "0" * 64} for p in files], "digest": "d"},
        "envs": [
            {
                "name": "gateway",
                "image": {
                    "identity": "agent-loop-gateway:abc",
                    "name": "agent-loop-gateway",
                    "python": "3.11",
                    "locks": [
                        {
                            "path": "packages/gateway/requirements.lock.txt",
                            "sha256": "1" * 64,
                            "testing_packages": ["starlette", "uvicorn"],
                        }
                    ],
                },
                "secrets": [],
                "tasks": [],
                "app": {"port": 8080, "requires_auth": False, "server": "env.serve", **app},
            }
        ],
        "dry_run": {"tasks": [], "apps": [], "bundle_members": list(files)},
        "version": "v1",
    }


def test_an_app_needs_no_trigger_and_may_declare_its_web_stack() -> None:
    assert check_spec(WS, DeploySpec("gateway", _report())) == []


def test_an_app_serves_and_has_no_tasks() -> None:
    report = _report(server=None)
    report["envs"][0]["tasks"] = [{"name": "gateway.t", "triggers": [], "trigger_errors": []}]
    report["envs"][0]["image"]["locks"][0]["testing_packages"].append("dulwich")
    assert check_spec(WS, DeploySpec("gateway", report)) == [
        "packages/gateway/requirements.lock.txt pins test-only dulwich",
        "env gateway declares tasks: an app only serves",
        "env gateway has no server function or command",
    ]
    del report["envs"][0]["app"]
    assert "env gateway is not an AppEnvironment" in check_spec(WS, DeploySpec("gateway", report))


def test_agents_may_not_pin_the_web_stack() -> None:
    report = _report()
    report["agent"] = "builder"
    env = report["envs"][0]
    env["name"] = "builder"
    env["image"].update(name="agent-loop-builder", identity="agent-loop-builder:abc")
    env["image"]["locks"][0]["path"] = "packages/builder/requirements.lock.txt"
    findings = check_spec(WS, DeploySpec("builder", report))
    assert "packages/builder/requirements.lock.txt pins test-only starlette, uvicorn" in findings


def test_the_gateway_gets_github_credentials_and_the_webhook_secret_only() -> None:
    def pairs(environ: dict[str, str]) -> list[tuple[str, str | None]]:
        return [
            (s.key, s.as_env_var) for s in gateway_secrets(environ) if isinstance(s, flyte.Secret)
        ]

    assert pairs({"AGENT_LOOP_MODEL": "openai/gpt-5"}) == [
        ("github-token", "GITHUB_TOKEN"),
        ("agent-loop-webhook-secret", "AGENT_LOOP_WEBHOOK_SECRET"),
    ]
    assert pairs({"AGENT_LOOP_GITHUB_AUTH": "app"}) == [
        ("github-app-id", "GITHUB_APP_ID"),
        ("github-app-private-key", "GITHUB_APP_PRIVATE_KEY"),
        ("agent-loop-webhook-secret", "AGENT_LOOP_WEBHOOK_SECRET"),
    ]


@pytest.mark.slow
def test_the_real_gateway_validates_offline_on_its_own() -> None:
    result = validate_agent("gateway")
    assert result.findings == []
    spec = result.spec
    assert spec is not None
    [env] = spec.report["envs"]
    assert env["app"]["requires_auth"] is False
    assert env["app"]["server"] == "agent_loop_gateway.env.serve"
    assert env["image"]["name"] == "agent-loop-gateway"
    assert [s["as_env_var"] for s in env["secrets"]] == [
        "GITHUB_TOKEN",
        "AGENT_LOOP_WEBHOOK_SECRET",
    ]
    bundle = set(spec.bundle)
    assert any(p.startswith("packages/gateway/src/") for p in bundle)
    assert all(p.startswith(("packages/gateway/src/", "packages/common/src/")) for p in bundle)
    [app] = spec.report["dry_run"]["apps"]
    assert app["command"][0] == "fserve"
    assert app["ports"] == [8080]


def test_the_gateway_lock_is_committed() -> None:
    lock = pathlib.Path(ROOT / "packages" / "gateway" / "requirements.lock.txt")
    pinned = {line.split("==")[0] for line in lock.read_text().splitlines() if "==" in line}
    assert {"starlette", "uvicorn", "githubkit", "flyte"} <= pinned
    assert "dulwich" not in pinned
    assert "pytest" not in pinned
