"""structlog configuration, applied only by entry points (CLI, tasks), never on import.

Library modules call `structlog.get_logger(__name__)` and stay silent about format;
the process that owns stdout decides: JSON lines inside Flyte tasks (machine-read by the
cluster's log pipeline), a readable console renderer for the CLI.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO, cast

import structlog

__all__ = ["FLYTE_LOGGERS", "configure_logging", "route_to_root"]

FLYTE_LOGGERS = ("flyte", "flyte.user")
"""The Flyte SDK's loggers: `flyte.init` gives them a rich handler writing to stdout."""

LogFormat = Literal["json", "console"]


class _CurrentStderr:
    """A stream that writes to whatever `sys.stderr` is at write time.

    Binding loggers to the `sys.stderr` of the moment of configuration leaves them
    writing to a closed stream once a caller (pytest's capture, an in-process CLI call)
    swaps it back; resolving it per write cannot go stale.
    """

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _stderr_logger(*_args: object) -> structlog.PrintLogger:
    return structlog.PrintLogger(cast("TextIO", _CurrentStderr()))


def configure_logging(fmt: LogFormat = "console", level: str | int = "INFO") -> None:
    """Configure structlog and the stdlib root logger for this process.

    Args:
        fmt: `"json"` for tasks (one JSON object per line), `"console"` for humans.
        level: minimum level, a name such as `"INFO"` or a `logging` constant.
    """
    numeric = logging.getLevelNamesMapping().get(level.upper()) if isinstance(level, str) else level
    if numeric is None:
        raise ValueError(f"unknown log level {level!r}")
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.typing.Processor
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer()
        shared.append(structlog.processors.format_exc_info)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(
        level=numeric,
        stream=_CurrentStderr(),
        format="%(levelname)s %(name)s: %(message)s",
    )


def route_to_root(names: tuple[str, ...], level: int = logging.WARNING) -> None:
    """Make library loggers write through the process's own logging, once, on stderr.

    Libraries that attach handlers of their own (litellm's writes below WARNING to
    stdout, the Flyte SDK's rich handler writes to stdout) would print next to, and
    twice with, what the entry point configured; stdout belongs to a command's result
    (`agent-loop run --json`). Each named logger loses its handlers, keeps records from
    `level` up, and propagates to the root logger's handlers. Idempotent.

    Args:
        names: The library loggers.
        level: Least severe level they pass on.
    """
    for name in names:
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = True
