"""`python -m agent_loop_reviewer [--pr N] [--remote]`: run one reviewer tick and print it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from agent_loop_common.runtime import run_entry
from agent_loop_reviewer import run_once


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the flags, run one tick, print its summary; 2 on a configuration error."""
    parser = argparse.ArgumentParser(
        prog="python -m agent_loop_reviewer",
        description="Run one reviewer tick: review the first agent PR that needs a pass.",
    )
    parser.add_argument("--pr", type=int, default=None, help="only consider this pull request")
    parser.add_argument(
        "--remote", action="store_true", help="run the deployed task on the configured cluster"
    )
    return run_entry(
        parser,
        lambda args, settings: run_once(target=args.pr, remote=args.remote, settings=settings),
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
