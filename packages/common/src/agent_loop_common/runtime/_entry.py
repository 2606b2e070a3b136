"""The shared body of every agent's `python -m agent_loop_<role>` entry point.

Each agent names its own flags and how one tick runs; what happens around that is the
same for all of them and lives here once: flags are parsed before anything else (so
`--help` works without configuration), a configuration error prints every problem
`ConfigError` names and exits 2, logging goes to the console at the configured level,
and the tick's `TickSummary` is printed as JSON.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from agent_loop_common.logs import configure_logging
from agent_loop_common.runtime._summary import TickSummary
from agent_loop_common.settings import ConfigError, Settings, load_settings

__all__ = ["run_entry"]


def run_entry(
    parser: argparse.ArgumentParser,
    tick: Callable[[argparse.Namespace, Settings], TickSummary],
    *,
    argv: Sequence[str] | None = None,
) -> int:
    """Parse `argv`, run one tick, print its summary; returns the process exit status.

    Args:
        parser: The agent's flags.
        tick: Runs one tick with the parsed flags and loaded settings; returns its
            summary.
        argv: The arguments (default: the process's).

    Returns:
        0 after a tick (whatever its outcome), 2 on a configuration error.
    """
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    configure_logging("console", settings.log_level)
    summary = tick(args, settings)
    print(summary.model_dump_json(indent=2))
    return 0
