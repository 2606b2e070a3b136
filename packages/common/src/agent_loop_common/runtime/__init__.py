"""The spine every pipeline shares: a run's effects (`Runtime`) and its record (`RunScope`).

```python
async with open_runtime(settings, Role.BUILDER) as rt:
    record = await run_scoped(rt, body)   # body(scope) claims, works, scope.finish(...)
```

`use_model(provider, label=...)` installs an in-process model (scripted, replayed) for
Flyte local mode: the offline demo and the end-to-end tests; records and reports name
it by its label. `use_sandbox(sandbox)` does the same for the sandbox the builder's and
reviewer's tests run in. `preflight_model`, `probe_model` (one cheap request: the model endpoint
answers and takes the key) and `preflight_sandbox` refuse, before any claim, a run that
could not finish its work; `check_reserve` holds new work back while
the GitHub rate limit is down to `AGENT_LOOP_RATE_LIMIT_RESERVE` (the tick ends
`paused`).

Each agent declares its durable writes once in a `WriteBook`; the pipeline calls them
through a `Writer` (in process, or as Flyte actions whose `Receipt`s bring their
request counts home). Every tick returns a `TickSummary`; `run_entry` is the shared
body of `python -m agent_loop_<role>`. `stop_on_signals` turns SIGINT and SIGTERM into a
stop request (`request_stop`) that `run_scoped` honours at the run's next safe point:
the claim released, the run recorded `interrupted`.
"""

from typing import TYPE_CHECKING

from agent_loop_common._lazy import lazy_exports

if TYPE_CHECKING:
    from agent_loop_common.runtime._by_name import (
        TaskNotFound,
        call_task_by_name,
        environment_module,
        plain_output,
        typed_inputs,
    )
    from agent_loop_common.runtime._entry import agent_main, run_entry
    from agent_loop_common.runtime._fast_idle import fast_idle_tick
    from agent_loop_common.runtime._faults import operator_fault
    from agent_loop_common.runtime._fleet import (
        Scout,
        Slot,
        Work,
        WorkTask,
        fair_order,
        fleet_tick,
        plan_slots,
        resolve_repos,
    )
    from agent_loop_common.runtime._holders import (
        LocalHolder,
        drop_holder,
        local_holder,
        note_holder,
    )
    from agent_loop_common.runtime._home import local_raw_data_path
    from agent_loop_common.runtime._idle_proof import PROOF_MAX_AGE, IdleProof, ProvenRead
    from agent_loop_common.runtime._interrupt import (
        Interrupt,
        StopGate,
        left_behind,
        request_stop,
        reset_stop,
        stop_on_signals,
        stop_requested,
    )
    from agent_loop_common.runtime._local import (
        github_from_settings,
        local_memory,
        run_task,
        run_tick,
    )
    from agent_loop_common.runtime._models import (
        ModelProvider,
        installed_model,
        installed_model_label,
        model_for,
        model_label,
        use_model,
    )
    from agent_loop_common.runtime._pause import Pause, ReserveReached, check_reserve
    from agent_loop_common.runtime._preflight import preflight_model
    from agent_loop_common.runtime._probe import (
        PROBE_TTL_SECONDS,
        PROVIDER_MODEL_LISTS,
        ModelUnavailable,
        forget_probes,
        probe_model,
    )
    from agent_loop_common.runtime._remote import (
        CONFIG_TEMPLATE,
        FlyteConfigError,
        RemoteConfig,
        remote_flyte_config,
    )
    from agent_loop_common.runtime._runtime import Runtime, open_runtime
    from agent_loop_common.runtime._sandbox import (
        TESTING_ROLES,
        InstalledSandbox,
        installed_sandbox,
        preflight_sandbox,
        sandbox_for,
        use_flyte_tests_task,
        use_sandbox,
    )
    from agent_loop_common.runtime._scope import RunScope, record_failure, run_scoped
    from agent_loop_common.runtime._summary import (
        IDLE,
        PAUSED,
        AgentEntry,
        TickOutcome,
        TickSummary,
        summarize,
        summarize_many,
    )
    from agent_loop_common.runtime._tick import Pipeline, leave_idle_proof, tick_body, work_body
    from agent_loop_common.runtime._writes import (
        DirectWriter,
        Posted,
        Receipt,
        TaskWrites,
        WriteBook,
        Writer,
        write_with_receipt,
    )

__all__ = [
    "CONFIG_TEMPLATE",
    "IDLE",
    "PAUSED",
    "PROBE_TTL_SECONDS",
    "PROOF_MAX_AGE",
    "PROVIDER_MODEL_LISTS",
    "TESTING_ROLES",
    "AgentEntry",
    "DirectWriter",
    "FlyteConfigError",
    "IdleProof",
    "InstalledSandbox",
    "Interrupt",
    "LocalHolder",
    "ModelProvider",
    "ModelUnavailable",
    "Pause",
    "Pipeline",
    "Posted",
    "ProvenRead",
    "Receipt",
    "RemoteConfig",
    "ReserveReached",
    "RunScope",
    "Runtime",
    "Scout",
    "Slot",
    "StopGate",
    "TaskNotFound",
    "TaskWrites",
    "TickOutcome",
    "TickSummary",
    "Work",
    "WorkTask",
    "WriteBook",
    "Writer",
    "agent_main",
    "call_task_by_name",
    "check_reserve",
    "drop_holder",
    "environment_module",
    "fair_order",
    "fast_idle_tick",
    "fleet_tick",
    "forget_probes",
    "github_from_settings",
    "installed_model",
    "installed_model_label",
    "installed_sandbox",
    "leave_idle_proof",
    "left_behind",
    "local_holder",
    "local_memory",
    "local_raw_data_path",
    "model_for",
    "model_label",
    "note_holder",
    "open_runtime",
    "operator_fault",
    "plain_output",
    "plan_slots",
    "preflight_model",
    "preflight_sandbox",
    "probe_model",
    "record_failure",
    "remote_flyte_config",
    "request_stop",
    "reset_stop",
    "resolve_repos",
    "run_entry",
    "run_scoped",
    "run_task",
    "run_tick",
    "sandbox_for",
    "stop_on_signals",
    "stop_requested",
    "summarize",
    "summarize_many",
    "tick_body",
    "typed_inputs",
    "use_flyte_tests_task",
    "use_model",
    "use_sandbox",
    "work_body",
    "write_with_receipt",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
