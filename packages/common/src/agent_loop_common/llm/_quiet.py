"""litellm's logging, routed through ours: WARNING and above, once, on stderr.

On import litellm attaches its own handler to its loggers (`LiteLLM`, `LiteLLM Router`,
`LiteLLM Proxy`). That handler writes records below WARNING to **stdout** and the rest
to stderr in litellm's own format, while the same records also propagate to the root
logger the CLI and the tasks configure: every call printed `LiteLLM completion()
model=...` on stdout (where `agent-loop run --json` prints its one JSON line) and each
warning twice, in two formats. So, around the import: the loggers stop at WARNING, their
own handlers are removed, and they propagate to whatever the entry point configured
(structlog's console or JSON renderer on stderr). Warnings litellm logs while it is
being imported, before its handler can be removed (a failed price-table download), are
handed to the root logger's handlers by a filter that keeps them from litellm's own.
"""

from __future__ import annotations

import logging
from types import ModuleType

from agent_loop_common.logs import route_to_root

__all__ = ["LITELLM_LOGGERS", "after_import", "before_import"]

LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
"""The loggers litellm attaches its own handler to."""


class _ToRootOnly(logging.Filter):
    """Hand a record to the root logger's handlers, never to the logger's own."""

    def filter(self, record: logging.LogRecord) -> bool:
        logging.getLogger().handle(record)
        return False


_TO_ROOT = _ToRootOnly()


def before_import() -> None:
    """Before the first `import litellm`: nothing below WARNING, the rest only to ours."""
    for name in LITELLM_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(logging.WARNING)
        logger.addFilter(_TO_ROOT)


def after_import(litellm: ModuleType) -> None:
    """After `import litellm` (idempotent): its loggers feed ours, and it prints nothing.

    Also switches off litellm's own `print` paths: the "Give Feedback / Get Help" banner
    it prints to stdout on errors (`suppress_debug_info`) and its deprecated verbose mode.
    """
    route_to_root(LITELLM_LOGGERS)
    for name in LITELLM_LOGGERS:
        logging.getLogger(name).removeFilter(_TO_ROOT)
    setattr(litellm, "suppress_debug_info", True)  # noqa: B010 - untyped module attribute
    setattr(litellm, "set_verbose", False)  # noqa: B010 - untyped module attribute
