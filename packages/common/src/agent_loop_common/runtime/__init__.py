"""The spine every pipeline shares: a run's effects (`Runtime`) and its record (`RunScope`).

```python
async with open_runtime(settings, Role.BUILDER) as rt:
    record = await run_scoped(rt, body)   # body(scope) claims, works, scope.finish(...)
```

`use_model(provider)` installs an in-process model (scripted, replayed) for Flyte local
mode: the offline demo and the end-to-end tests.

Durable writes (`@env.task` actions with a facade of their own) return a `Receipt` via
`write_with_receipt`, and the tick's `CountedWrites` bundle merges its request counts into
the run's. `run_entry` is the shared body of `python -m agent_loop_<role>`.
"""

from agent_loop_common.runtime._entry import run_entry
from agent_loop_common.runtime._local import (
    github_from_settings,
    local_memory,
    local_raw_data_path,
    run_task,
)
from agent_loop_common.runtime._models import ModelProvider, installed_model, model_for, use_model
from agent_loop_common.runtime._runtime import Runtime, open_runtime
from agent_loop_common.runtime._scope import RunScope, run_scoped
from agent_loop_common.runtime._writes import CountedWrites, Receipt, write_with_receipt

__all__ = [
    "CountedWrites",
    "ModelProvider",
    "Receipt",
    "RunScope",
    "Runtime",
    "github_from_settings",
    "installed_model",
    "local_memory",
    "local_raw_data_path",
    "model_for",
    "open_runtime",
    "run_entry",
    "run_scoped",
    "run_task",
    "use_model",
    "write_with_receipt",
]
