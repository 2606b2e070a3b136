"""The tests' baseline runs beside the conversation, not after it (issue 33, item 4).

The environment and the run on the base commit do not depend on the change, so the
build starts them as soon as its checks are open; only the change's own run waits for
the change. Proved with the real pipeline and a real sandbox backend: the model's first
answer waits until the baseline has run, which it would wait for in vain if the
baseline only started once the change was submitted.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from flyte.ai.agents import LLMMessage

from agent_loop_common.records import Outcome, RunRecord
from agent_loop_common.runtime import use_sandbox
from agent_loop_common.sandbox import PlainSubprocessSandbox, SandboxLimits
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import GitHubEmulator, ScriptedModel, call, turn
from agent_loop_testing.pytest_plugin import Install

CHECKER = """\
import sys
sys.path.insert(0, "src")
from calc import add
assert add(2, 3) == 5
print("1 passed")
"""
CALC = "def add(a, b):\n    return a + b\n"
CALC_SUB = CALC + "\n\ndef subtract(a, b):\n    return a - b\n"


async def test_the_baseline_runs_while_the_agent_works(
    emulator: GitHubEmulator, tick: Callable[..., Awaitable[RunRecord | None]], install: Install
) -> None:
    emulator.seed_files(
        {
            "AGENTS.md": f"# Agents\n\nTest command: `{sys.executable} check.py`\n",
            "check.py": CHECKER,
            "src/calc.py": CALC,
        }
    )
    emulator.add_issue("Add subtract()", "We need `subtract(a, b)` in calc.")
    model = ScriptedModel(
        [
            turn(tool_calls=[call("read_file", path="src/calc.py")]),
            turn(tool_calls=[call("stage_file", path="src/calc.py", content=CALC_SUB)]),
            turn(
                tool_calls=[
                    call("submit_implementation", title="Add subtract()", body="b", summary="s")
                ]
            ),
            turn("Submitted."),
        ],
        routes={VERIFIER_MARKER: [turn('{"verified": true, "notes": "ok"}')]},
    )
    with use_sandbox(PlainSubprocessSandbox(SandboxLimits(wall_seconds=30))) as baselines:
        first: list[float] = []

        async def waiting_for_the_baseline(
            name: str, system: str, messages: list[dict[str, Any]], tools: Any
        ) -> LLMMessage:
            if not first:  # the conversation's first turn: has the baseline run already?
                deadline = time.monotonic() + 20
                while baselines.runs == 0 and time.monotonic() < deadline:  # noqa: ASYNC110 - the store has no event to wait on
                    await asyncio.sleep(0.02)
                first.append(baselines.runs)
            return await model(name, system, messages, tools)

        install(model, via=waiting_for_the_baseline)
        record = await tick()

    model.assert_finished()
    assert first == [1]  # started before the conversation's first answer
    assert baselines.runs == 1  # and the change's check joined it, not ran it again
    assert record is not None
    assert record.outcome is Outcome.OPENED_PR
    assert record.tests is not None
    assert record.tests.status == "passed"
    assert {"baseline", "build", "test"} <= set(record.stage_seconds)
