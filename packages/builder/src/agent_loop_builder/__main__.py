"""`python -m agent_loop_builder [--issue N] [--remote]`: run one builder tick now."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from agent_loop_builder import run_once
from agent_loop_common.runtime import agent_main


def main(argv: Sequence[str] | None = None) -> int:
    """Run one tick and print its summary; 2 on a configuration error."""
    return agent_main(
        run_once,
        prog="python -m agent_loop_builder",
        description="Run one builder tick: the oldest eligible issue (or --issue) to a verified PR.",
        target_flag="--issue",
        target_help="work on this issue only",
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
