"""`python -m agent_loop_builder [--issue N] [--remote]`: run one builder tick now."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from agent_loop_builder import run_once
from agent_loop_common.logs import configure_logging
from agent_loop_common.settings import ConfigError, load_settings


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
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    configure_logging("console", settings.log_level)
    summary = run_once(issue=args.issue, remote=args.remote, settings=settings)
    print(json.dumps(summary, indent=2) if summary else "Idle: no eligible issue.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
