"""Logging set for the length of one command, then put back as it was.

`configure_logging` binds its output to the `sys.stderr` of the moment. The CLI's
`main()` and `run_demo()` are also called in process (tests, scripts), where that stream
may be a capture that is closed later; and an agent task that configures logging itself
runs in this process in Flyte local mode. So each command restores the structlog
configuration and the root logger's handlers it found, and leaves nothing bound behind.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from contextlib import contextmanager

import structlog

__all__ = ["preserved_logging"]


@contextmanager
def preserved_logging() -> Generator[None]:
    """Restore structlog's configuration and the root logger's handlers and level on exit."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        structlog.configure(**saved)
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
