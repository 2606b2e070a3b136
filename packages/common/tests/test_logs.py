"""Logging configured at an entry point follows `sys.stderr` instead of binding it."""

from __future__ import annotations

import io
import sys
from collections.abc import Generator

import pytest
import structlog

from agent_loop_common.logs import configure_logging


@pytest.fixture(autouse=True)
def _restore() -> Generator[None]:
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def test_logs_go_to_the_stderr_of_the_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging("json", "INFO")
    first.close()  # e.g. a capture that ended after an in-process CLI call
    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    structlog.get_logger("t").info("hello", n=1)
    assert '"event": "hello"' in second.getvalue()
    assert '"n": 1' in second.getvalue()


def test_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown log level"):
        configure_logging("console", "LOUD")
