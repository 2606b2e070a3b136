"""`python -m agent_loop_reviewer [--pr N] [--remote]`: run one reviewer tick and print it."""

from __future__ import annotations

import argparse
import json
import sys

from agent_loop_common.logs import configure_logging
from agent_loop_common.settings import ConfigError, load_settings


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run one tick, print its summary; 2 on a configuration error."""
    parser = argparse.ArgumentParser(
        prog="python -m agent_loop_reviewer",
        description="Run one reviewer tick: review the first agent PR that needs a pass.",
    )
    parser.add_argument("--pr", type=int, default=None, help="only consider this pull request")
    parser.add_argument("--remote", action="store_true", help="run on the configured Flyte cluster")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    configure_logging("console", settings.log_level)
    from agent_loop_reviewer import run_once

    result = run_once(pr=args.pr, remote=args.remote, settings=settings)
    print(json.dumps(result or {"outcome": "idle"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
