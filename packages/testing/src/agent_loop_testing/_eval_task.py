"""`ScriptedEvalTask`: the eval's per-instance task, answered from a table.

The distiller calls the eval's task by name for lesson replays (`eval.eval_instance`:
an instance and a lessons choice in, the instance's result out). Its selection, pairing
and budget are tested against this double, which answers each (instance, lessons) call
as the table says, with a result shaped like the eval's (`InstanceResult` as JSON), and
records every call; an unexpected call fails the test. The real task is driven end to
end in Flyte local mode (`tests/test_e2e_lesson_replay.py`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from agent_loop_testing._scripted import ScriptMismatch

__all__ = ["ScriptedEvalTask"]


class ScriptedEvalTask:
    """Answers `(instance, lessons)` calls from `resolved`.

    Args:
        resolved: `(instance id, lessons choice)` -> resolved; a choice is `off` or a
            lesson id. A call not in it raises `ScriptMismatch`.
        llm_calls: Model calls each build reports.
        unshown: Instance ids where the lesson named does not reach the prompt (its
            result lists no lesson), as a citation missing at the base would do.
        errors: Instance ids whose builds end in an error result.
        raises: Instance ids whose call fails outright (the task itself).
    """

    def __init__(
        self,
        resolved: Mapping[tuple[str, str], bool],
        *,
        llm_calls: int = 4,
        unshown: Collection[str] = (),
        errors: Collection[str] = (),
        raises: Collection[str] = (),
    ) -> None:
        self.resolved = dict(resolved)
        self.llm_calls = llm_calls
        self.unshown = set(unshown)
        self.errors = set(errors)
        self.raises = set(raises)
        self.calls: list[tuple[str, str]] = []
        """Every call's (instance id, lessons choice), in order."""

    async def __call__(self, instance: Mapping[str, Any], lessons: str) -> dict[str, Any]:
        """The `ReplayCall` shape: one instance replayed with `lessons`."""
        key = (str(instance["instance_id"]), lessons)
        self.calls.append(key)
        if key[0] in self.raises:
            raise RuntimeError(f"the task failed on {key[0]}")
        if key not in self.resolved:
            raise ScriptMismatch(f"ScriptedEvalTask: unexpected call {key}")
        shown = [] if lessons in ("off", "on") or key[0] in self.unshown else [lessons]
        error = key[0] in self.errors
        return {
            "instance_id": key[0],
            "resolved": self.resolved[key] and not error,
            "outcome": "error" if error else "change",
            "lesson_ids": shown,
            "llm_calls": self.llm_calls,
            "tokens_in": 100 * self.llm_calls,
            "tokens_out": 10 * self.llm_calls,
            "cost_usd": 0.001 * self.llm_calls,
            "error": "ModelFailed: the model is down" if error else "",
        }
