"""Firing one agent task: in Flyte's local mode on this machine, or on a deployed cluster.

Local mode runs the very task a cluster runs, in this process, with durable local
persistence under `AGENT_LOOP_HOME`, so `agent-loop run`, `python -m agent_loop_<role>`,
the offline demo and the end-to-end tests all go through the same code path. A remote
run never falls back to local mode: without a Flyte config naming a cluster it stops
before anything runs (`FlyteConfigError`), and with one it runs in Flyte's `remote` mode.
"""

from __future__ import annotations

import pathlib
from typing import Any

import flyte

from agent_loop_common.github import GitHub, github_auth
from agent_loop_common.logs import FLYTE_LOGGERS, route_to_root
from agent_loop_common.memory import MemoryLocation
from agent_loop_common.runtime._home import local_raw_data_path
from agent_loop_common.runtime._remote import remote_flyte_config
from agent_loop_common.runtime._reports import keep_report, remove_run_metadata
from agent_loop_common.runtime._summary import TickSummary
from agent_loop_common.settings import Settings

__all__ = ["github_from_settings", "local_memory", "run_task", "run_tick"]


def local_memory(settings: Settings) -> MemoryLocation:
    """The memory of local runs, for reading outside a task (`agent-loop status`)."""
    return MemoryLocation.from_settings(settings, str(local_raw_data_path(settings)))


def github_from_settings(settings: Settings) -> GitHub:
    """A GitHub facade for a write action (a durable sub-task builds its own client)."""
    return GitHub(
        settings.repo,
        auth=github_auth(settings),
        base_url=settings.github_api_url,
        timeout=settings.github_timeout_seconds,
    )


def run_task(settings: Settings, task: Any, *, remote: bool = False, **inputs: Any) -> Any:
    """Run `task` once and return its output.

    In local mode Flyte's metadata folder of the run (its actions' reports) is removed
    once the output is read, as after a tick: the caller keeps what a user needs (`eval
    run` writes its results, predictions and report into its own folder).

    Args:
        settings: Supplies the Flyte org/project/domain and the local home.
        task: A task of an agent's `TaskEnvironment`.
        remote: Fire the deployed task on the cluster of `settings.flyte_config`, or of
            the config the `flyte` CLI finds, wait for it, and return its output.
        **inputs: The task's inputs.

    Raises:
        FlyteConfigError: `remote` without a Flyte config naming a cluster (nothing ran).
    """
    if remote:
        config = remote_flyte_config(settings.flyte_config)
        flyte.init_from_config(str(config.path))
        route_to_root(FLYTE_LOGGERS)
        run = flyte.with_runcontext(mode="remote").run(task, **inputs)
        run.wait()
        return _single(run.outputs())
    output, run_dir = _run_local(settings, task, **inputs)
    remove_run_metadata(run_dir)
    return output


def _run_local(settings: Settings, task: Any, **inputs: Any) -> tuple[Any, pathlib.Path]:
    """Run `task` in Flyte local mode; its output and the run's metadata folder."""
    raw = local_raw_data_path(settings)
    raw.mkdir(parents=True, exist_ok=True)
    flyte.init(
        org=settings.flyte_org,
        project=settings.flyte_project,
        domain=settings.flyte_domain,
        local_persistence=True,
    )
    route_to_root(FLYTE_LOGGERS)
    run = flyte.with_runcontext(mode="local", raw_data_path=str(raw)).run(task, **inputs)
    return _single(run.outputs()), pathlib.Path(run.url)


def run_tick(
    settings: Settings,
    task: Any,
    *,
    target: int | None = None,
    remote: bool = False,
    retry_now: bool = False,
) -> TickSummary:
    """Run one agent tick task (inputs `target`, `retry_now`) and return its typed summary.

    A local tick's report is kept as `<AGENT_LOOP_HOME>/reports/<role>-<run id>.html`
    (its path in `TickSummary.report`), and Flyte's metadata folder of the run removed.
    """
    inputs: dict[str, Any] = {"target": target, "retry_now": retry_now}
    if remote:
        return TickSummary.model_validate(run_task(settings, task, remote=True, **inputs))
    output, run_dir = _run_local(settings, task, **inputs)
    summary = TickSummary.model_validate(output)
    report = keep_report(settings, summary, run_dir)
    return summary.model_copy(update={"report": str(report)}) if report else summary


def _single(outputs: tuple[Any, ...]) -> Any:
    """A one-output task's value (the SDK wraps outputs in a tuple-like object)."""
    return outputs[0] if len(outputs) == 1 else outputs
