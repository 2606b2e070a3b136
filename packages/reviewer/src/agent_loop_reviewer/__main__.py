"""`python -m agent_loop_reviewer [--pr N] [--remote]`: run one reviewer tick and print it."""

from __future__ import annotations

import argparse
import json
import sys

from agent_loop_common.runtime import run_entry
from agent_loop_common.settings import Settings


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run one tick, print its summary; 2 on a configuration error."""
    parser = argparse.ArgumentParser(
        prog="python -m agent_loop_reviewer",
        description="Run one reviewer tick: review the first agent PR that needs a pass.",
    )
    parser.add_argument("--pr", type=int, default=None, help="only consider this pull request")
    parser.add_argument("--remote", action="store_true", help="run on the configured Flyte cluster")
    return run_entry(parser, _tick, idle=json.dumps({"outcome": "idle"}, indent=2), argv=argv)


def _tick(args: argparse.Namespace, settings: Settings) -> dict[str, str]:
    from agent_loop_reviewer import run_once

    return run_once(pr=args.pr, remote=args.remote, settings=settings)


if __name__ == "__main__":
    sys.exit(main())
