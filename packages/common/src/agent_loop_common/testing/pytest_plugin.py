"""pytest plugin (auto-loaded through the ``pytest11`` entry point of agent-loop-common).

Every test session in an environment where ``agent_loop_common`` is installed is hermetic
by construction: no connection leaves loopback, litellm never downloads its cost map, and
real model calls are refused by :mod:`agent_loop_common.llm`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from agent_loop_common.testing._hermetic import block_network

# Set before any test module can import litellm (which reads it at import time).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ["AGENT_LOOP_ALLOW_MODEL_REQUESTS"] = "0"


@pytest.fixture(autouse=True)
def _agent_loop_hermetic(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail any test that opens a non-loopback connection (opt out: ``@pytest.mark.network``)."""
    if request.node.get_closest_marker("network") is not None:
        yield
        return
    with block_network():
        yield


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "network: the test may open non-loopback connections (manual runs only)"
    )
