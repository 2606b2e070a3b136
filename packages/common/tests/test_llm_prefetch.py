"""litellm's import can start in the background once a tick has work; the first call joins it."""

from __future__ import annotations

import sys
import threading
import time
from types import ModuleType

import pytest

from agent_loop_common.llm import _litellm
from agent_loop_common.runtime import Runtime, _runtime, use_model
from agent_loop_testing import ScriptedModel


@pytest.fixture
def fake_import(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the real import (seconds) by a slow fake that says which thread ran it."""
    threads: list[str] = []
    module = ModuleType("litellm")

    def slow_import() -> ModuleType:
        time.sleep(0.05)
        threads.append(threading.current_thread().name)
        return module

    monkeypatch.setattr(_litellm, "_import_litellm", slow_import)
    monkeypatch.setattr(_litellm, "_prefetch", None)
    monkeypatch.delitem(sys.modules, "litellm", raising=False)  # as in a fresh tick
    return threads


def test_the_first_call_joins_the_import_started_in_the_background(fake_import: list[str]) -> None:
    _litellm.prefetch_litellm()
    _litellm.prefetch_litellm()  # once only
    _litellm.load_litellm()  # waits for the background import instead of racing it
    assert fake_import[0] == "litellm-import"
    assert len(fake_import) == 2  # the background import, then the (cached) one that returns it


def test_without_a_prefetch_the_first_call_imports_itself(fake_import: list[str]) -> None:
    _litellm.load_litellm()
    assert fake_import == [threading.current_thread().name]


def test_only_a_litellm_model_is_warmed(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[bool] = []
    monkeypatch.setattr(_runtime, "prefetch_litellm", lambda: started.append(True))
    runtime = object.__new__(Runtime)  # warm_model reads no field of the run
    with use_model(ScriptedModel([])):
        runtime.warm_model()  # an in-process model needs no library
    assert started == []
    runtime.warm_model()
    assert started == [True]
