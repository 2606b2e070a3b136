"""`python -m agent_loop_distiller [--remote]`: one distiller tick, its summary printed.

Configuration comes from the environment (see docs/configuration.md); a configuration
error prints what is wrong with each variable and exits with status 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from agent_loop_common.runtime import agent_main
from agent_loop_distiller import run_once

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one tick and print its summary; 2 on a configuration error."""
    return agent_main(
        run_once,
        prog="python -m agent_loop_distiller",
        description="Run one distiller tick: ingest new run records, grade outcomes on "
        "GitHub, update the lessons and digest, and write the report.",
        target_flag=None,
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
