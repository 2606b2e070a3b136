"""Where local runs keep their state under `AGENT_LOOP_HOME` (no Flyte needed to say so)."""

from __future__ import annotations

import pathlib

from agent_loop_common.settings import Settings

__all__ = ["local_raw_data_path"]


def local_raw_data_path(settings: Settings) -> pathlib.Path:
    """Where local runs keep Flyte's raw data, and with it the memory stores."""
    return (settings.home / "flyte-data").resolve()
