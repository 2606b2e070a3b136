"""Warm ticks on a cluster: each agent's environment is reusable unless switched off."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agent_loop_common.deploy import REUSE_PACKAGE, agent_image, agent_reuse


def _installs(image: object) -> list[str]:
    """Every pip package an image's layers name (its lock is a separate layer)."""
    return [
        p for layer in getattr(image, "_layers", ()) for p in getattr(layer, "packages", ()) or ()
    ]


def test_the_default_keeps_a_warm_replica_for_half_an_hour_and_room_for_the_writes() -> None:
    policy = agent_reuse({})
    assert policy is not None
    assert (policy.min_replicas, policy.max_replicas, policy.concurrency) == (1, 2, 1)
    assert policy.idle_ttl == timedelta(minutes=30)
    assert policy.get_scaledown_ttl() == timedelta(minutes=30)
    assert agent_reuse({"AGENT_LOOP_REUSE_IDLE_MINUTES": "90"}) is not None


def test_zero_means_a_fresh_container_per_tick_and_no_reuse_runtime() -> None:
    assert agent_reuse({"AGENT_LOOP_REUSE_IDLE_MINUTES": "0"}) is None


@pytest.mark.parametrize("raw", ["ten", "-1", "1441", "1.5"])
def test_a_bad_value_is_refused_naming_the_variable(raw: str) -> None:
    with pytest.raises(ValueError, match="AGENT_LOOP_REUSE_IDLE_MINUTES"):
        agent_reuse({"AGENT_LOOP_REUSE_IDLE_MINUTES": raw})


def test_only_a_reusable_environments_image_installs_the_reuse_runtime() -> None:
    from agent_loop_builder.env import PACKAGE_DIR, REUSE, env

    assert env.reusable == REUSE
    warm = agent_image("builder", PACKAGE_DIR, reuse=agent_reuse({}))
    cold = agent_image("builder", PACKAGE_DIR)
    assert REUSE_PACKAGE in _installs(warm)
    assert REUSE_PACKAGE not in _installs(cold)
    assert warm.uri != cold.uri
