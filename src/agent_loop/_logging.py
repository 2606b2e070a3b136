"""Logging set for the length of one command, then put back as it was.

`configure_logging` binds its output to the `sys.stderr` of the moment. The CLI's
`main()` and `run_demo()` are also called in process (tests, scripts), where that stream
may be a capture that is closed later; and an agent task that configures logging itself
runs in this process in Flyte local mode. So each command restores the structlog
configuration and the root logger's handlers it found, and leaves nothing bound behind.

structlog (with its console renderer, rich: a fifth of a second) is imported only when a
command configures logging: an idle tick proven by the lean path never does.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Generator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, TextIO

__all__ = ["configure_cli_logging", "preserved_logging"]

_CHATTY = ("httpx", "httpcore")
"""Libraries that log every request at INFO: a tick makes dozens."""

ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]


def _one_line(sio: TextIO, exc_info: ExcInfo) -> None:
    """Render an exception as its last line: the run's record and summary hold the rest."""
    kind, value, _ = exc_info
    sio.write(f"\n{kind.__name__}: {value}")


def configure_cli_logging(fmt: str, level: str) -> None:
    """`configure_logging` for a person at a terminal.

    Below DEBUG, a logged exception is one line instead of a traceback with locals (a
    failed run is recorded with its error and printed in the summary), and per-request
    lines of the HTTP libraries are hidden. At DEBUG everything is shown.
    """
    import structlog

    from agent_loop_common.logs import configure_logging

    configure_logging("json" if fmt == "json" else "console", level)
    debug = level.upper() == "DEBUG"
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.NOTSET if debug else logging.WARNING)
    if debug or fmt == "json":
        return
    processors = list(structlog.get_config()["processors"])
    if processors and isinstance(processors[-1], structlog.dev.ConsoleRenderer):
        processors[-1] = structlog.dev.ConsoleRenderer(
            colors=sys.stderr.isatty(), exception_formatter=_one_line
        )
        structlog.configure(processors=processors)


@contextmanager
def preserved_logging() -> Generator[None]:
    """Restore structlog's configuration and the root (and HTTP) loggers on exit."""
    saved = _structlog_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    chatty = {name: logging.getLogger(name).level for name in _CHATTY}
    try:
        yield
    finally:
        if "structlog" in sys.modules:  # imported by the command, or before it
            import structlog

            if saved is None:
                structlog.reset_defaults()
            else:
                structlog.configure(**saved)
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
        for name, chatty_level in chatty.items():
            logging.getLogger(name).setLevel(chatty_level)


def _structlog_config() -> dict[str, Any] | None:
    """structlog's configuration, or `None` when nothing imported it yet (its defaults)."""
    if "structlog" not in sys.modules:
        return None
    import structlog

    return structlog.get_config()
