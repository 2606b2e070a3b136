"""Another package's Flyte task, called by its name: the caller never imports it.

The distiller replays lessons with the eval's per-instance task, yet must not import the
eval (nor the builder it bundles): each package deploys alone, with its own image, and
the import contracts keep it so. The call goes through Flyte by name, as the gateway
starts the agents' ticks:

- **on a cluster**, the name is looked up in Flyte's registry of deployed tasks
  (`flyte.remote.Task.get(name, auto_version="latest")`); called inside a task it starts
  a sub-action there, in the callee's own image;
- **in Flyte's local mode** there is no registry (the SDK refuses remote tasks
  locally), so the workspace is the deployment: `<env>.<task>` is found where every
  deployable package declares its environment, `agent_loop_<env>/env.py` (the layout
  `agent-loop deploy` imports too), loaded on first use; called inside a local-mode
  task it runs as a sub-action in this process.

Data crosses as plain values: a pydantic input is validated into the type the task
declares (the real type locally, the type Flyte guessed from the deployed interface on
a cluster), and the output comes back JSON-ready (`model_dump(mode="json")`), so neither
side shares a Python type with the other.

```python
result = await call_task_by_name("eval.eval_instance", instance=data, lessons="off")
```
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from typing import Any, cast

from pydantic import BaseModel

from agent_loop_common.sandbox import in_flyte_cluster

__all__ = [
    "TaskNotFound",
    "call_task_by_name",
    "environment_module",
    "plain_output",
    "typed_inputs",
]

_NAME = re.compile(r"^(?P<env>[a-z][a-z0-9_]*)\.(?P<task>[A-Za-z_][A-Za-z0-9_]*)$")


class TaskNotFound(LookupError):
    """No task by that name here: not deployed (cluster), or not installed (local)."""


def environment_module(name: str) -> str:
    """The module that declares task `name` (`<env>.<task>`) in this workspace:
    `agent_loop_<env>.env`.

    Raises:
        ValueError: `name` is not `<env>.<task>`.
    """
    match = _NAME.match(name)
    if match is None:
        raise ValueError(f"a task name is <environment>.<task>, got {name!r}")
    return f"agent_loop_{match.group('env')}.env"


def _local_task(name: str) -> Any:
    """The task `name` as the workspace declares it (Flyte local mode)."""
    module_name = environment_module(name)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise TaskNotFound(f"{name}: {module_name} is not installed here ({exc})") from None
    env = getattr(module, "env", None)
    tasks = cast(Mapping[str, Any], getattr(env, "tasks", {}))
    task = tasks.get(name)
    if task is None:
        raise TaskNotFound(f"{name}: {module_name} declares no such task")
    return task


async def _deployed_task(name: str) -> tuple[Any, Mapping[str, Any]]:
    """The latest deployed version of task `name` and its (guessed) input types."""
    import flyte.errors
    import flyte.remote

    ref = flyte.remote.Task.get(name=name, auto_version="latest")
    try:
        details = await ref.fetch.aio()
    except flyte.errors.RemoteTaskNotFoundError as exc:
        raise TaskNotFound(f"{name}: not deployed ({exc})") from None
    inputs: Mapping[str, Any] = cast(Any, details.interface).inputs
    return ref, dict(inputs)


def typed_inputs(inputs: Mapping[str, Any], declared: Mapping[str, Any]) -> dict[str, Any]:
    """`inputs` with each plain value for a pydantic input validated into its type.

    `declared`: the task's inputs, name -> `(type, default)` (a local task's
    `native_interface.inputs`, or the interface Flyte guessed from a deployed one).
    """
    out: dict[str, Any] = {}
    for key, value in inputs.items():
        spec: Any = declared.get(key)
        kind: Any = cast("tuple[Any, ...]", spec)[0] if isinstance(spec, tuple) else spec
        if (
            isinstance(kind, type)
            and issubclass(kind, BaseModel)
            and not isinstance(value, BaseModel)
        ):
            value = kind.model_validate(value)
        out[key] = value
    return out


def plain_output(value: Any) -> Any:
    """A task's output as JSON-ready data (pydantic models dumped, containers walked)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [plain_output(v) for v in cast("list[Any]", value)]
    if isinstance(value, dict):
        return {k: plain_output(v) for k, v in cast("dict[Any, Any]", value).items()}
    return value


async def call_task_by_name(name: str, /, **inputs: Any) -> Any:
    """Call task `name` (`<env>.<task>`) with keyword `inputs`; its output as plain data.

    Inside a task the call is a sub-action (on the cluster, of the latest deployed
    version; in local mode, in this process); outside any task (a test calling a tick
    as a coroutine) the local task's function runs directly.

    Raises:
        TaskNotFound: No such task is deployed (cluster) or installed (local).
        ValueError: `name` is not `<env>.<task>`.
    """
    environment_module(name)  # the name's shape, before anything is looked up
    if in_flyte_cluster():
        task, declared = await _deployed_task(name)
    else:
        task = _local_task(name)
        declared = dict(task.native_interface.inputs)
    return plain_output(await task(**typed_inputs(inputs, declared)))
