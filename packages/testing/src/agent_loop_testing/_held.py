"""`HeldCall`: a model whose Nth call waits until the test lets it go (`HeldProgram`:
the same for a host program such as `bwrap`).

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
import os
import shlex
import shutil
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from flyte.ai.agents import LLMCallable, LLMMessage

__all__ = ["HeldCall", "HeldProgram"]


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


class HeldProgram:
    """A host program on `PATH` (e.g. `bwrap`) whose first run waits until the test lets
    it go, then runs the real one: a process provably inside its preflight (the sandbox
    probe runs it before any claim), to be signalled there.

    ```python
    with HeldProgram("bwrap") as held:
        proc = subprocess.Popen([...], env={**env, "PATH": held.path(env["PATH"])})
        wait_until(held.reached)
        proc.send_signal(signal.SIGINT)
        held.release()
    ```

    Its folder is a fresh one in the system's temporary folder, readable and writable
    by every user: the sandbox runs `bwrap` as an unprivileged uid when it is root.

    Args:
        name: The program, found on `PATH` now (its real path is run after the hold).
    """

    def __init__(self, name: str) -> None:
        real = shutil.which(name)
        if real is None:
            raise FileNotFoundError(f"{name} is not on PATH")
        self.folder = Path(tempfile.mkdtemp(prefix="agent-loop-held-"))
        self.folder.chmod(0o777)
        self.bin = self.folder / "bin"
        self.bin.mkdir(mode=0o755)
        self._reached = self.folder / f"{name}.reached"
        self._go = self.folder / f"{name}.go"
        go, reached = shlex.quote(str(self._go)), shlex.quote(str(self._reached))
        program = self.bin / name
        program.write_text(
            "#!/bin/sh\n"
            f"if [ ! -e {go} ]; then\n"
            f"  : > {reached}\n"
            f"  while [ ! -e {go} ]; do sleep 0.05; done\n"
            "fi\n"
            f'exec {shlex.quote(real)} "$@"\n',
            encoding="utf-8",
        )
        program.chmod(0o755)

    def path(self, search_path: str) -> str:
        """`search_path` with the held program's folder first."""
        return f"{self.bin}{os.pathsep}{search_path}"

    def reached(self) -> bool:
        """Whether the program ran and is waiting now (or was let go since)."""
        return self._reached.exists()

    def release(self) -> None:
        """Let it (and every later run of it) go on to the real program."""
        self._go.touch()

    def __enter__(self) -> HeldProgram:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
        shutil.rmtree(self.folder, ignore_errors=True)
