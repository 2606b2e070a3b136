"""The gateway's Flyte app: its image, secrets and the ASGI server it runs.

An `AppEnvironment`, not a `TaskEnvironment`: a small always-on web service GitHub
posts to, which starts the agents' deployed tasks by name (`FlyteRunner`). It has its
own image (from `packages/gateway/requirements.lock.txt`), its own secrets (the GitHub
credentials, for trust lookups and acknowledgements, and `AGENT_LOOP_WEBHOOK_SECRET`),
and imports no agent package, so deploying it changes no agent's image or bundle.

One replica, always on: the coalescing window and the replay memory live in the
process, and a cold start could outlast GitHub's ten seconds. `requires_auth=False`
because GitHub cannot authenticate to Flyte; every delivery is authenticated by its
HMAC signature instead.
"""

from __future__ import annotations

import pathlib

import flyte
import flyte.app

from agent_loop_common.deploy import agent_env_vars, agent_image, gateway_secrets
from agent_loop_common.settings import GATEWAY_MEMORY_MIB

__all__ = ["PACKAGE_DIR", "PORT", "env", "serve"]

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
"""`packages/gateway`: where the image's exported lock lives."""

PORT = 8080

env = flyte.app.AppEnvironment(
    name="gateway",
    image=agent_image("gateway", PACKAGE_DIR),
    secrets=gateway_secrets(),
    env_vars=agent_env_vars(),
    port=PORT,
    requires_auth=False,
    scaling=flyte.app.Scaling(replicas=(1, 1)),
    # The gateway's default byte budget (AGENT_LOOP_WEBHOOK_BUFFER_BYTES) is derived from
    # this figure: change them together (settings._rules.GATEWAY_MEMORY_MIB).
    resources=flyte.Resources(cpu=1, memory=f"{GATEWAY_MEMORY_MIB}Mi"),
)


@env.server
async def serve() -> None:
    """Start Flyte's in-cluster client, then serve the gateway on `PORT`."""
    import uvicorn

    from agent_loop_common.logs import configure_logging
    from agent_loop_common.settings import load_settings
    from agent_loop_gateway import FlyteRunner, create_app, server_config

    settings = load_settings()
    configure_logging(settings.log_format, settings.log_level)
    await flyte.init_in_cluster.aio()
    app = create_app(settings, runner=FlyteRunner())
    config = server_config(app, settings, host="0.0.0.0", port=PORT)  # noqa: S104
    await uvicorn.Server(config).serve()
