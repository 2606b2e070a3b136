"""`python -m agent_loop_distiller [--remote]`: one distiller pass, its summary printed.

Configuration comes from the environment (see docs/configuration.md); a configuration
error prints what is wrong with each variable and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from agent_loop_common.logs import configure_logging
from agent_loop_common.settings import ConfigError, load_settings
from agent_loop_distiller import run_once

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one pass; returns the process exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m agent_loop_distiller",
        description="Run one distiller pass: ingest new run records, grade outcomes on "
        "GitHub, update the lessons and digest, and write the report.",
    )
    parser.add_argument(
        "--remote",
        action="store_true",
        help="fire the deployed task on the configured Flyte cluster instead of local mode",
    )
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    configure_logging("console", settings.log_level)
    summary = run_once(remote=args.remote, settings=settings)
    print(json.dumps(summary or {"pass": "idle", "note": "nothing new"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
