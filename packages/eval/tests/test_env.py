"""The eval's own Flyte environment: its image, its secrets, no schedule."""

from __future__ import annotations

import flyte

from agent_loop_eval.env import PACKAGE_DIR, env


def test_the_environment_is_the_evals_own() -> None:
    assert env.name == "eval"
    assert isinstance(env.image, flyte.Image)
    assert env.image.name == "agent-loop-eval"
    assert (PACKAGE_DIR / "requirements.lock.txt").is_file()
    for task in env.tasks.values():
        assert not task.triggers, f"{task.name}: the eval's tasks run only when called"
