"""Every agent's `python -m agent_loop_<role>` entry point, written once.

Each agent names its description, its target flag (`--issue`, `--pr`, or none) and its
`run_once`; what happens around that is the same for all of them: flags are parsed
before anything else (so `--help` works without configuration), a configuration error
prints every problem `ConfigError` names and exits 2, logging goes to the console at the
configured level, and the tick's `TickSummary` is printed as JSON.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext

from agent_loop_common.logs import configure_logging
from agent_loop_common.runtime._interrupt import reset_stop, stop_on_signals, stop_requested
from agent_loop_common.runtime._summary import AgentEntry, TickSummary
from agent_loop_common.settings import ConfigError, Settings, load_settings

__all__ = ["agent_main", "run_entry"]


def agent_main(
    run_once: AgentEntry,
    *,
    prog: str,
    description: str,
    target_flag: str | None,
    target_help: str = "",
    argv: Sequence[str] | None = None,
) -> int:
    """`python -m agent_loop_<role>`: one tick of `run_once`, its summary printed.

    Args:
        run_once: The agent's entry point.
        prog: The command's name in `--help`.
        description: What one tick does.
        target_flag: The flag naming one target (`--issue`, `--pr`); `None`: no target.
        target_help: That flag's help.
        argv: The arguments (default: the process's).
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    if target_flag is not None:
        parser.add_argument(target_flag, dest="target", type=int, default=None, help=target_help)
    parser.add_argument(
        "--retry-now",
        action="store_true",
        help="retry now even if it rests in back-off after failures",
    )
    parser.add_argument(
        "--remote",
        action="store_true",
        help="fire the deployed task on the configured Flyte cluster instead of local mode",
    )
    return run_entry(
        parser,
        lambda args, settings: run_once(
            target=getattr(args, "target", None),
            remote=args.remote,
            settings=settings,
            retry_now=args.retry_now,
        ),
        argv=argv,
    )


def run_entry(
    parser: argparse.ArgumentParser,
    tick: Callable[[argparse.Namespace, Settings], TickSummary],
    *,
    argv: Sequence[str] | None = None,
) -> int:
    """Parse `argv`, run one tick, print its summary; returns the process exit status.

    Args:
        parser: The agent's flags.
        tick: Runs one tick with the parsed flags and loaded settings; returns its
            summary.
        argv: The arguments (default: the process's).

    Returns:
        0 after a tick that reached its target or found none (whatever its outcome), 2
        on a configuration error (also one found before the tick starts, e.g.
        `--remote` without a Flyte config) or a tick that never reached its target
        (`preflight_failed`), 128 + the signal's number after a local tick stopped by
        SIGINT or SIGTERM (130, 143).
    """
    args = parser.parse_args(argv)
    remote = bool(getattr(args, "remote", False))
    reset_stop()
    try:
        settings = load_settings()
        configure_logging("console", settings.log_level)
        # A local tick stops at its next safe point on SIGINT or SIGTERM (claim released,
        # run recorded `interrupted`); a remote one goes on on its cluster either way.
        with nullcontext() if remote else stop_on_signals():
            summary = tick(args, settings)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(summary.model_dump_json(indent=2))
    interrupt = stop_requested()
    if interrupt is not None:
        return interrupt.exit_code
    return 2 if summary.preflight_failed else 0
