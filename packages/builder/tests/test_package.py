"""The package imports on its own, with only its declared dependencies installed."""

import importlib


def test_package_imports() -> None:
    module = importlib.import_module("agent_loop_builder")
    assert module.__name__ == "agent_loop_builder"
