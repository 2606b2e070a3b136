"""What `agent-loop deploy` checks before it loads an agent: the root cause, first.

A deploy ships the deploying shell's settings with the agent (a scheduled run has no
shell of its own). A bad setting used to surface as the agent failing to import, then
as every finding that followed from that ("declares environments []", "no task declares
a trigger", "the bundle differs"), exit 1. Now the settings are checked first, as the
tasks will load them, and a problem stops the deploy with the settings' own message
(exit 2 in the CLI). The GitHub credentials and the model key are not needed here:
they reach the tasks as Flyte secrets. A real deploy also needs the repository and a
Flyte config naming a cluster; a dry run needs neither (it validates offline).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_loop_common.deploy import agent_secrets
from agent_loop_common.runtime import remote_flyte_config
from agent_loop_common.settings import ConfigError, Settings, load_settings

__all__ = ["ClusterUnavailable", "deploy_preflight", "deploy_settings"]

_PLACEHOLDER_REPO = "dry-run/unset"
_SECRETS_FROM_FLYTE: dict[str, Any] = {
    # Overrides win over the environment: the deploying shell's credentials (or their
    # absence) do not matter, the tasks get theirs from Flyte secrets.
    "github_token": "from-a-flyte-secret",
    "github_app_id": None,
    "github_app_private_key": None,
    "github_app_private_key_path": None,
}


def deploy_settings(*, dry_run: bool, environ: Mapping[str, str] | None = None) -> Settings:
    """The settings the deployed tasks will load, checked now.

    Raises:
        ConfigError: A setting is invalid (every problem named), the repository is not
            set for a real deploy, or `AGENT_LOOP_GITHUB_AUTH` names no known method.
    """
    env = os.environ if environ is None else environ
    overrides = dict(_SECRETS_FROM_FLYTE)
    targets = ("AGENT_LOOP_REPO", "AGENT_LOOP_REPOS")
    if dry_run and not any(env.get(name, "").strip() for name in targets):
        overrides["repo"] = _PLACEHOLDER_REPO
    settings = load_settings(**overrides)
    try:
        agent_secrets(env)
    except ValueError as exc:
        raise ConfigError([str(exc)]) from None
    return settings


def deploy_preflight(agent: str, *, dry_run: bool, config: Path | None) -> Path | None:
    """Check a deploy's settings and Flyte config; the config file the deploy should use.

    Args:
        agent: The agent to deploy.
        dry_run: Validate offline only (no cluster needed).
        config: `--config`, if given.

    Returns:
        The Flyte config file (absolute); `None` for a dry run's offline config.

    Raises:
        ConfigError: A bad setting (see `deploy_settings`), no usable Flyte config for
            a real deploy (`FlyteConfigError`), or a cluster whose endpoint does not
            answer (`ClusterUnavailable`: a devbox not started).
    """
    settings = deploy_settings(dry_run=dry_run)
    if dry_run and config is None:
        return None
    purpose = f"agent-loop deploy {agent}" + (" --dry-run" if dry_run else "")
    remote = remote_flyte_config(config or settings.flyte_config, purpose=purpose)
    if not dry_run:  # before half a minute of validation, and naming the endpoint
        from agent_loop.cluster import cluster_problem

        problem = cluster_problem(remote.endpoint, remote.path, purpose=purpose)
        if problem is not None:
            raise ClusterUnavailable(problem)
    return remote.path


class ClusterUnavailable(ConfigError):
    """The Flyte cluster of a deploy does not answer; nothing was deployed."""

    def __init__(self, problem: str) -> None:
        super().__init__([problem])
        self.args = (problem,)
