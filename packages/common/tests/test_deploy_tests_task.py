"""With `AGENT_LOOP_SANDBOX=flyte` a deployed agent gets the tests' own task spec (no
secrets, the configured image and limits); otherwise no extra task is deployed."""

from __future__ import annotations

import pytest

from agent_loop_common.deploy import agent_tests_spec


def test_no_tests_task_unless_the_sandbox_is_flyte() -> None:
    assert agent_tests_spec({}) is None
    assert agent_tests_spec({"AGENT_LOOP_SANDBOX": "bwrap"}) is None


def test_the_tests_task_takes_the_image_and_limits_and_no_secrets() -> None:
    spec = agent_tests_spec(
        {
            "AGENT_LOOP_SANDBOX": "flyte",
            "AGENT_LOOP_SANDBOX_IMAGE": "ghcr.io/acme/tests:1",
            "AGENT_LOOP_SANDBOX_MEMORY_MB": "2048",
            "AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS": "300",
        }
    )
    assert spec is not None
    assert spec.image == "ghcr.io/acme/tests:1"
    assert spec.memory == "2048Mi"
    assert spec.timeout_seconds == 900
    assert set(spec.env_vars) == {"HOME", "LANG", "SANDBOX_JUNIT"}


def test_a_bad_limit_names_the_variables() -> None:
    with pytest.raises(ValueError, match="AGENT_LOOP_SANDBOX_"):
        agent_tests_spec({"AGENT_LOOP_SANDBOX": "flyte", "AGENT_LOOP_SANDBOX_MEMORY_MB": "lots"})
