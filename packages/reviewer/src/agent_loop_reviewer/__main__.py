"""`python -m agent_loop_reviewer [--pr N] [--remote]`: run one reviewer tick and print it."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from agent_loop_common.runtime import agent_main
from agent_loop_reviewer import run_once


def main(argv: Sequence[str] | None = None) -> int:
    """Run one tick and print its summary; 2 on a configuration error."""
    return agent_main(
        run_once,
        prog="python -m agent_loop_reviewer",
        description="Run one reviewer tick: review the first agent PR that needs a pass.",
        target_flag="--pr",
        target_help="only consider this pull request",
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
