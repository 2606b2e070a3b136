"""Which Flyte cluster a remote run or a deploy talks to, decided before anything runs.

Without a config naming an endpoint, `flyte.init_from_config()` initialises nothing
remote and `flyte.run` then runs the task in this process: `agent-loop run builder
--remote` said "on the Flyte cluster" and ran locally, against the user's repository.
So a remote run (and a deploy) first finds its config the way the `flyte` CLI does (an
explicit file, else flyte's own discovery), checks that it names a real endpoint, and
otherwise stops with `FlyteConfigError` (the CLI's exit 2) naming what to pass. The run
itself is then started in Flyte's `remote` mode, which fails rather than falls back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent_loop_common.settings import ConfigError

__all__ = ["CONFIG_TEMPLATE", "FlyteConfigError", "RemoteConfig", "remote_flyte_config"]

CONFIG_TEMPLATE = "infra/flyte/remote.yaml"
"""The repository's template of a remote cluster's Flyte config."""

_SEARCHED = (
    "./config.yaml, ./.flyte/config.yaml, <git root>/.flyte/config.yaml, $UCTL_CONFIG, "
    "$FLYTECTL_CONFIG, ~/.union/config.yaml, ~/.flyte/config.yaml"
)
_PLACEHOLDER = "your-"
"""What every value of the template that must be replaced starts with."""


class FlyteConfigError(ConfigError):
    """No usable Flyte config for a remote run or a deploy; nothing was started.

    Attributes:
        problems: The one problem, as for every `ConfigError`.
    """

    def __init__(self, problem: str, *, purpose: str) -> None:
        self.problems = (problem,)
        hint = (
            f"{purpose} needs a Flyte config naming your cluster's endpoint: pass "
            f"--config {CONFIG_TEMPLATE} (a copy with your endpoint, org and project), "
            "or set AGENT_LOOP_FLYTE_CONFIG or FLYTECTL_CONFIG to its path. See docs/deploy.md."
        )
        ValueError.__init__(self, f"{problem}\n{hint}")


@dataclass(frozen=True)
class RemoteConfig:
    """A Flyte config that names a cluster."""

    path: Path
    """The config file (absolute). flyte reads no config from the environment alone."""
    endpoint: str
    """The control plane's endpoint (`admin.endpoint`; `FLYTE_ADMIN_ENDPOINT` overrides it)."""

    def describe(self) -> str:
        """`<endpoint> (config <path>)`, for the line a command prints before it starts."""
        return f"{self.endpoint} (config {self.path})"


def remote_flyte_config(explicit: Path | None = None, *, purpose: str = "--remote") -> RemoteConfig:
    """The Flyte config a remote run or a deploy uses, checked before anything runs.

    Args:
        explicit: The config file given (`--config`, `AGENT_LOOP_FLYTE_CONFIG`); `None`
            searches where the `flyte` CLI does.
        purpose: What needs it, for the message (`--remote`, `agent-loop deploy builder`).

    Raises:
        FlyteConfigError: The file does not exist, no config was found, or it names no
            endpoint (or still the template's placeholder).
    """
    import flyte.config

    if explicit is not None:
        path = explicit.expanduser().resolve()
        if not path.is_file():
            raise FlyteConfigError(f"Flyte config {explicit} does not exist.", purpose=purpose)
        config = flyte.config.auto(path)
    else:
        # flyte caches what its search found once per process; search again each time.
        flyte.config.get_config_file.cache_clear()
        config = flyte.config.auto()
    if config.source is None:  # then flyte would run the task right here
        raise FlyteConfigError(f"No Flyte config found (searched {_SEARCHED}).", purpose=purpose)
    source = Path(config.source).resolve()
    endpoint = (config.platform.endpoint or "").strip()
    where = f"Flyte config {source}"
    if not endpoint:
        raise FlyteConfigError(f"{where} names no admin.endpoint.", purpose=purpose)
    if _PLACEHOLDER in endpoint:
        raise FlyteConfigError(
            f"{where} still has the template's endpoint {endpoint!r}: replace every "
            f"'{_PLACEHOLDER}...' value with your cluster's.",
            purpose=purpose,
        )
    return RemoteConfig(source, endpoint)
