"""`HeldCall`: a model whose Nth call waits until the test lets it go.

A test that stops a run "during the model call" must know that a call is in flight,
without sleeping and hoping: `HeldCall` plays its inner model (a `ScriptedModel`), and
its call number `at` sets `reached` and then waits for `release`. Served with
`serve_chat_model`, that is a request the agent's process is blocked on, so the test can
signal the process at exactly that moment.

```python
held = HeldCall(ScriptedModel([...]), at=1)
with serve_chat_model(held) as api_base, held:   # leaving the block releases it
    proc = subprocess.Popen([...agent-loop run builder...])
    assert held.reached.wait(120)
    proc.send_signal(signal.SIGINT)
```
"""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType
from typing import Any

from flyte.ai.agents import LLMCallable, LLMMessage

__all__ = ["HeldCall"]


class HeldCall:
    """A `call_llm` that holds its call number `at` until `release` is set.

    Args:
        model: The model that answers every call (the held one too, once released).
        at: Which call (1-based) to hold.
    """

    def __init__(self, model: LLMCallable, *, at: int = 1) -> None:
        self.model = model
        self.at = at
        self.calls = 0
        self.reached = threading.Event()
        """Set when the held call arrived (the caller is now waiting on it)."""
        self.release = threading.Event()
        """Set to let the held call go on (leaving the `with` block sets it)."""

    async def __call__(
        self,
        model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
    ) -> LLMMessage:
        self.calls += 1
        if self.calls == self.at:
            self.reached.set()
            await asyncio.to_thread(self.release.wait)
        return await self.model(model, system, messages, tools)

    def __enter__(self) -> HeldCall:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release.set()
