"""litellm's loggers feed ours: WARNING and above, once, never through its own handler."""

from __future__ import annotations

import io
import logging
import types
from collections.abc import Iterator

import pytest

from agent_loop_common.llm import _quiet


@pytest.fixture
def root_stream() -> Iterator[io.StringIO]:
    """The root logger writes to a buffer (as the CLI's handler writes to stderr)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    saved = {
        name: (lg.level, lg.propagate, list(lg.handlers), list(lg.filters))
        for name in _quiet.LITELLM_LOGGERS
        for lg in [logging.getLogger(name)]
    }
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        for name, (level, propagate, handlers, filters) in saved.items():
            lg = logging.getLogger(name)
            lg.setLevel(level)
            lg.propagate = propagate
            lg.handlers[:] = handlers
            lg.filters[:] = filters


def test_records_during_the_import_reach_only_our_handlers(root_stream: io.StringIO) -> None:
    _quiet.before_import()
    own = io.StringIO()
    logger = logging.getLogger("LiteLLM")
    logger.addHandler(logging.StreamHandler(own))  # what `import litellm` attaches
    logger.info("LiteLLM completion() model=x")
    logger.warning("cost map fetch failed")
    assert own.getvalue() == ""
    assert root_stream.getvalue() == "WARNING LiteLLM: cost map fetch failed\n"


def test_after_the_import_its_handlers_are_gone_and_records_propagate_once(
    root_stream: io.StringIO,
) -> None:
    _quiet.before_import()
    own = io.StringIO()
    for name in _quiet.LITELLM_LOGGERS:
        logging.getLogger(name).addHandler(logging.StreamHandler(own))
    module = types.ModuleType("litellm")
    _quiet.after_import(module)
    _quiet.after_import(module)  # idempotent: every load_litellm() call runs it
    logging.getLogger("LiteLLM").info("LiteLLM completion() model=x")
    logging.getLogger("LiteLLM Router").warning("retrying")
    assert own.getvalue() == ""
    assert root_stream.getvalue() == "WARNING LiteLLM Router: retrying\n"
    assert module.suppress_debug_info is True
    assert module.set_verbose is False
