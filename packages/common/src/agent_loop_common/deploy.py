"""Pieces every agent's `env.py` uses to declare its own Flyte environment.

`common` never defines a `TaskEnvironment` (each agent's deploy would pick it up). It
only builds the image spec and the secret list, so the three agents declare them the
same way while each keeps its own image (from its own exported lock) and its own deploy.
"""

from __future__ import annotations

import os
import pathlib

import flyte

__all__ = [
    "MODEL_KEY_ENV_DEFAULT",
    "PYTHON_VERSION",
    "agent_image",
    "agent_secrets",
    "requirements_lock",
]

PYTHON_VERSION = (3, 11)
"""Pinned interpreter of every agent image (the version CI checks here)."""

MODEL_KEY_ENV_DEFAULT = "ANTHROPIC_API_KEY"
"""Env var the model key is injected as; set `AGENT_LOOP_MODEL_KEY_ENV` for other providers."""


def requirements_lock(package_dir: pathlib.Path) -> pathlib.Path:
    """The package's exported lock (`uv export --package ...`), committed next to it."""
    return package_dir / "requirements.lock.txt"


def agent_image(agent: str, package_dir: pathlib.Path) -> flyte.Image:
    """The image of one agent: Debian base, pinned Python, that agent's locked deps only.

    The workspace code (the agent and `common`) travels in Flyte's code bundle, so a
    change to one agent's dependencies changes only that agent's image identity.
    """
    return flyte.Image.from_debian_base(
        python_version=PYTHON_VERSION, name=f"agent-loop-{agent}"
    ).with_requirements(requirements_lock(package_dir))


def agent_secrets() -> list[flyte.Secret]:
    """GitHub credentials and the model key, injected as the env vars settings read.

    The model key's variable depends on the provider (`ANTHROPIC_API_KEY`,
    `OPENAI_API_KEY`, ...): read from `AGENT_LOOP_MODEL_KEY_ENV` at deploy time.
    """
    model_key_env = os.environ.get("AGENT_LOOP_MODEL_KEY_ENV", MODEL_KEY_ENV_DEFAULT)
    return [
        flyte.Secret(key="github-token", as_env_var="GITHUB_TOKEN"),
        flyte.Secret(key="model-api-key", as_env_var=model_key_env),
    ]
