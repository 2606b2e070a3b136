"""The eval's Flyte environment: its own image, secrets and settings, no schedule.

The eval is not an agent: nothing triggers it on a schedule. Its tasks are called by
name (by `agent-loop eval`, and by the distiller for lesson replays, which never imports
this package), one task per instance, fanned out with Flyte's own means. It runs the
repository's tests like the builder, so with `AGENT_LOOP_SANDBOX=flyte` (a deploy's
default) it depends on the tests' own environment (`agent-loop-tests`, no secrets).
Deployed alone: its bundle holds the eval, the builder (whose pipeline it replays
through the builder's public API) and `common`.
"""

from __future__ import annotations

import pathlib

import flyte

from agent_loop_common.deploy import (
    agent_env_vars,
    agent_image,
    agent_secrets,
    agent_tests_environments,
)

__all__ = ["PACKAGE_DIR", "env"]

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
"""`packages/eval`: where the image's exported lock lives."""

env = flyte.TaskEnvironment(
    name="eval",
    image=agent_image("eval", PACKAGE_DIR),
    # Mining reads GitHub; a replay calls the model: the same credentials as the builder.
    secrets=agent_secrets(),
    # A task started by name has no shell: the deploying shell's settings travel with it.
    env_vars=agent_env_vars(),
    depends_on=agent_tests_environments(),
)
