"""The deployed shape: the app's declaration, and the runner that starts deployed ticks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import flyte
import pytest

from agent_loop_gateway import TICK_TASKS, FlyteRunner


def test_the_app_environment() -> None:
    from agent_loop_gateway.env import PORT, env

    assert isinstance(env, flyte.app.AppEnvironment)
    assert env.name == "gateway"
    assert env.get_port().port == PORT
    assert env.requires_auth is False  # GitHub cannot log in; the signature authenticates
    assert isinstance(env.image, flyte.Image)
    assert env.image.name == "agent-loop-gateway"
    secrets = [(s.key, s.as_env_var) for s in env.secrets or [] if isinstance(s, flyte.Secret)]
    assert ("agent-loop-webhook-secret", "AGENT_LOOP_WEBHOOK_SECRET") in secrets
    assert not any(var.endswith("_API_KEY") for _, var in secrets if var)  # no model key


@dataclass
class FakeRun:
    name: str = "r-1"
    url: str = "https://flyte.test/runs/r-1"
    waited: bool = False

    @property
    def wait(self) -> Any:
        run = self

        class Wait:
            async def aio(self, quiet: bool = False) -> None:
                run.waited = True

        return Wait()


@dataclass
class FakeFlyteRun:
    """`flyte.run` at the SDK boundary: records the task and inputs of each start."""

    started: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    run: FakeRun = field(default_factory=FakeRun)

    async def aio(self, task: Any, **inputs: Any) -> FakeRun:
        self.started.append((task, inputs))
        return self.run


@pytest.mark.parametrize(
    ("agent", "target", "inputs"),
    [("builder", 7, {"target": 7}), ("reviewer", 9, {"target": 9}), ("distiller", None, {})],
)
async def test_the_remote_runner_starts_the_deployed_tick_by_name(
    monkeypatch: pytest.MonkeyPatch, agent: Any, target: int | None, inputs: dict[str, Any]
) -> None:
    import flyte.remote

    asked: list[dict[str, Any]] = []

    def get(**kwargs: Any) -> str:
        asked.append(kwargs)
        return f"lazy:{kwargs['name']}"

    fake = FakeFlyteRun()
    monkeypatch.setattr(flyte.remote.Task, "get", get)
    monkeypatch.setattr(flyte, "run", fake)
    await FlyteRunner(project="p", domain="d")(agent, target)
    assert asked == [
        {"name": TICK_TASKS[agent], "project": "p", "domain": "d", "auto_version": "latest"}
    ]
    assert fake.started == [(f"lazy:{agent}.{agent}_tick", inputs)]
    assert fake.run.waited
