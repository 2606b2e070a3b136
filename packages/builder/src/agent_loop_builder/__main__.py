"""`python -m agent_loop_builder [--issue N] [--remote]`: run one builder tick now."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from agent_loop_builder import run_once
from agent_loop_common.runtime import run_entry


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the flags, run one tick, print its summary; 2 on a configuration error."""
    parser = argparse.ArgumentParser(
        prog="python -m agent_loop_builder",
        description="Run one builder tick: the oldest eligible issue (or --issue) to a verified PR.",
    )
    parser.add_argument("--issue", type=int, default=None, help="work on this issue only")
    parser.add_argument(
        "--remote", action="store_true", help="run the deployed task on the configured cluster"
    )
    return run_entry(
        parser,
        lambda args, settings: run_once(target=args.issue, remote=args.remote, settings=settings),
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
