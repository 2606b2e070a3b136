"""A deployed builder or reviewer runs the repository's tests in a task of its own.

Before: `AGENT_LOOP_SANDBOX=flyte agent-loop deploy builder --dry-run` ended "not
deployable (4 findings)" (the checks knew nothing of the tests' environment), and with
the default `auto` a deployed agent's image had neither bubblewrap nor Docker, so its
ticks could not test anything. Now `flyte` is a deploy's default for them, the checks
hold `agent-loop-tests` to its spec (image as it is, resources, no secrets, no
settings), and a backend that cannot work in the agent's image is refused, naming the fix.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest

from agent_loop import deploy
from agent_loop.deploy import ROOT, DeploySpec, Validation, Workspace, check_spec, validate_agent
from agent_loop_common.deploy import TESTS_ENV, agent_env_vars, agent_tests_spec

REPOS = "acme/api,acme/web"


def _shell(**extra: str) -> dict[str, str]:
    """This process's environment without a target or sandbox, plus `extra`."""
    drop = {"AGENT_LOOP_REPO", "AGENT_LOOP_REPOS", "AGENT_LOOP_SANDBOX"}
    return {k: v for k, v in os.environ.items() if k not in drop} | extra


@pytest.fixture(scope="module")
def builder() -> Validation:
    """The real builder, validated as an operator of many repositories deploys it."""
    return validate_agent("builder", environ=_shell(AGENT_LOOP_REPOS=REPOS))


def _env(spec: DeploySpec, name: str) -> dict[str, Any]:
    return next(e for e in spec.report["envs"] if e["name"] == name)


def test_a_deployed_builder_tests_in_an_environment_of_its_own(builder: Validation) -> None:
    assert builder.findings == []
    assert builder.spec is not None
    assert sorted(builder.spec.env_names) == [TESTS_ENV, "builder"]
    agent = _env(builder.spec, "builder")
    assert agent["env_vars"]["AGENT_LOOP_SANDBOX"] == "flyte"  # the deploy's default
    assert agent["env_vars"]["AGENT_LOOP_REPOS"] == REPOS
    assert "AGENT_LOOP_REPO" not in agent["env_vars"]  # no placeholder
    tests = _env(builder.spec, TESTS_ENV)
    assert tests["secrets"] == []
    assert tests["env_vars"] == {}
    (task,) = tests["tasks"]
    assert task["secrets"] == []
    assert task["resources"] == {"cpu": "1", "memory": "4096Mi"}
    assert task["image"] == "python:3.11-slim"
    serialized = next(
        t for t in builder.spec.report["dry_run"]["tasks"] if t["name"] == task["name"]
    )
    assert not {"GITHUB_TOKEN", "ANTHROPIC_API_KEY"} & set(serialized["env"])


def _check(spec: DeploySpec, *, sandbox: str = "flyte") -> list[str]:
    environ = _shell(AGENT_LOOP_REPOS=REPOS, AGENT_LOOP_SANDBOX="flyte")
    return check_spec(
        Workspace(ROOT),
        spec,
        agent_env_vars(environ),
        tests=agent_tests_spec(environ),
        sandbox=sandbox,
    )


def test_the_tests_environment_is_held_to_its_spec(builder: Validation) -> None:
    assert builder.spec is not None
    report = copy.deepcopy(builder.spec.report)
    tests = next(e for e in report["envs"] if e["name"] == TESTS_ENV)
    tests["image"]["uri"] = "attacker/image:latest"
    tests["env_vars"] = {"AGENT_LOOP_REPOS": REPOS}
    tests["tasks"][0]["secrets"] = ["github-token"]
    tests["tasks"][0]["resources"] = {"cpu": "1", "memory": "64Gi"}
    findings = _check(DeploySpec("builder", report))
    assert findings == [
        f"env {TESTS_ENV}: image attacker/image:latest is not the sandbox image "
        "python:3.11-slim (AGENT_LOOP_SANDBOX_IMAGE) as it is",
        f"env {TESTS_ENV} receives settings AGENT_LOOP_REPOS: the tests see none",
        "task agent-loop-run-tests declares secrets ['github-token']: the tests never receive one",
        "task agent-loop-run-tests: resources {'cpu': '1', 'memory': '64Gi'}, expected "
        "{'cpu': '1', 'memory': '4096Mi'} (AGENT_LOOP_SANDBOX_MEMORY_MB)",
    ]


def test_without_the_flyte_sandbox_a_tests_environment_is_a_finding(builder: Validation) -> None:
    assert builder.spec is not None
    findings = check_spec(Workspace(ROOT), builder.spec, None, tests=None, sandbox="off")
    assert findings[0] == (
        f"declares environments {builder.spec.env_names}, expected only ['builder']"
    )


@pytest.mark.parametrize(
    ("sandbox", "missing"),
    [
        ("bwrap", "bubblewrap"),
        ("docker", "a Docker engine"),
        ("auto", "bubblewrap or a Docker engine"),
    ],
)
def test_a_backend_the_image_cannot_run_is_refused_naming_the_fix(
    builder: Validation, sandbox: str, missing: str
) -> None:
    assert builder.spec is not None
    assert _check(builder.spec, sandbox=sandbox) == [
        f"AGENT_LOOP_SANDBOX={sandbox}: the builder's image has no {missing}, so its deployed "
        "ticks could not run the repository's tests; deploy with AGENT_LOOP_SANDBOX=flyte (the "
        "default of a deploy: the tests run in a task of their own) or AGENT_LOOP_SANDBOX=off "
        "(no tests: pull requests open as drafts saying so)"
    ]
    assert _check(builder.spec, sandbox="off") == _check(builder.spec, sandbox="flyte") == []


def test_a_real_deploy_with_bwrap_is_refused_before_anything_is_uploaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    modes: list[str] = []
    run_driver = deploy._run_driver  # pyright: ignore[reportPrivateUsage]

    def recording(*args: Any, **kwargs: Any) -> dict[str, Any]:
        modes.append(kwargs["mode"])
        return run_driver(*args, **kwargs)

    monkeypatch.setattr(deploy, "_run_driver", recording)
    monkeypatch.setenv("AGENT_LOOP_SANDBOX", "bwrap")
    out = io.StringIO()
    assert deploy.deploy_agent("reviewer", dry_run=False, config=None, out=out) == 1
    assert modes == ["dry-run"]  # validated offline, never deployed
    assert "AGENT_LOOP_SANDBOX=bwrap: the reviewer's image has no bubblewrap" in out.getvalue()
    assert out.getvalue().rstrip().endswith("reviewer: not deployable (1 finding(s))")
