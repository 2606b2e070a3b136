"""`python -m agent_loop_distiller [--remote]`: one distiller tick, its summary printed.

Configuration comes from the environment (see docs/configuration.md); a configuration
error prints what is wrong with each variable and exits with status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from agent_loop_common.runtime import run_entry
from agent_loop_distiller import run_once

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one tick; returns the process exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m agent_loop_distiller",
        description="Run one distiller tick: ingest new run records, grade outcomes on "
        "GitHub, update the lessons and digest, and write the report.",
    )
    parser.add_argument(
        "--remote",
        action="store_true",
        help="fire the deployed task on the configured Flyte cluster instead of local mode",
    )
    return run_entry(
        parser, lambda args, settings: run_once(remote=args.remote, settings=settings), argv=argv
    )


if __name__ == "__main__":
    sys.exit(main())
