"""agent_loop_gateway: GitHub webhooks and maintainer commands in, one-target agent runs out.

The agents poll on cron; the gateway lets them answer in seconds. GitHub (an App's or a
repository's webhook) posts each event to `POST /webhook`; the gateway checks the
signature, refuses replays, maps the event to the agent and target it concerns, checks
trust against the repository's permissions, acknowledges `/agent-loop` commands, and
starts the run through an injected `Runner`: in Flyte local mode for `agent-loop serve`,
or the deployed task by name on a cluster (`FlyteRunner`, see `env.py`). Cron stays the
safety net, and the claim protocol keeps a webhook run and a cron tick off one target.

```python
gateway = create_gateway(settings, runner=my_runner)   # settings need AGENT_LOOP_WEBHOOK_SECRET
app = build_app(gateway)                                # Starlette: POST /webhook, GET /healthz
uvicorn.Server(server_config(app, settings, host="127.0.0.1", port=8080)).run()
```

It imports no agent package: it names agents, and the runner starts them.
"""

from __future__ import annotations

from starlette.applications import Starlette

from agent_loop_common.github import GitHub, github_auth
from agent_loop_common.settings import Settings
from agent_loop_gateway._app import build_app
from agent_loop_gateway._clock import Clock, SystemClock
from agent_loop_gateway._dedup import DeliveryMemory
from agent_loop_gateway._dispatch import (
    Dispatcher,
    DispatchStats,
    Gate,
    RunKey,
    Runner,
    RunStart,
)
from agent_loop_gateway._events import (
    AgentName,
    CommandRef,
    Intent,
    RouteContext,
    Routed,
    route_event,
)
from agent_loop_gateway._gateway import Gateway, GatewayConfig
from agent_loop_gateway._remote import TICK_TASKS, FlyteRunner
from agent_loop_gateway._server import KEEP_ALIVE_SECONDS, server_config
from agent_loop_gateway._signature import signature_for, verify_signature
from agent_loop_gateway._trust import PermissionTrust, TrustChecker, permission_at_least

__all__ = [
    "KEEP_ALIVE_SECONDS",
    "TICK_TASKS",
    "AgentName",
    "Clock",
    "CommandRef",
    "DeliveryMemory",
    "DispatchStats",
    "Dispatcher",
    "FlyteRunner",
    "Gate",
    "Gateway",
    "GatewayConfig",
    "Intent",
    "PermissionTrust",
    "RouteContext",
    "Routed",
    "RunKey",
    "RunStart",
    "Runner",
    "SystemClock",
    "TrustChecker",
    "build_app",
    "create_app",
    "create_gateway",
    "permission_at_least",
    "route_event",
    "server_config",
    "signature_for",
    "verify_signature",
]


def create_gateway(
    settings: Settings,
    *,
    runner: Runner,
    github: GitHub | None = None,
    trust: TrustChecker | None = None,
    clock: Clock | None = None,
) -> Gateway:
    """The gateway for `settings`' repository, starting runs through `runner`.

    Args:
        settings: Needs `AGENT_LOOP_WEBHOOK_SECRET`; the gateway's other settings and the
            trust rule (`AGENT_LOOP_TRUSTED_MIN_PERMISSION`, `AGENT_LOOP_TRUSTED_LABEL`,
            `AGENT_LOOP_BOT_LOGIN`, `AGENT_LOOP_BRANCH_PREFIX`) are the agents' own.
        runner: Starts one run of an agent on a target.
        github: The facade for trust lookups and acknowledgements; built from settings
            by default.
        trust: Who is trusted; the repository's permissions by default.
        clock: Time; the system clock by default.

    Raises:
        ValueError: `AGENT_LOOP_WEBHOOK_SECRET` is not set.
    """
    config = GatewayConfig.from_settings(settings)
    if github is None:
        github = GitHub(
            settings.repo,
            auth=github_auth(settings),
            base_url=settings.github_api_url,
            timeout=settings.github_timeout_seconds,
        )
    return Gateway(config, github=github, runner=runner, clock=clock or SystemClock(), trust=trust)


def create_app(
    settings: Settings,
    *,
    runner: Runner,
    github: GitHub | None = None,
    trust: TrustChecker | None = None,
    clock: Clock | None = None,
) -> Starlette:
    """`build_app(create_gateway(...))`: the ASGI app, its gateway at `app.state.gateway`."""
    gateway = create_gateway(settings, runner=runner, github=github, trust=trust, clock=clock)
    app = build_app(gateway)
    app.state.gateway = gateway
    return app
