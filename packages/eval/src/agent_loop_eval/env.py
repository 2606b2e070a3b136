"""The eval's Flyte environment: its own image, secrets and settings, no schedule.

The eval is not an agent: nothing triggers it on a schedule. Its tasks are called by
name (by `agent-loop eval`, and by the distiller for lesson replays, which never imports
this package), one task per instance, fanned out with Flyte's own means. It runs the
repository's tests like the builder, so with `AGENT_LOOP_SANDBOX=flyte` (a deploy's
default) it depends on the tests' own environment (`agent-loop-tests`, no secrets).
Deployed alone: its bundle holds the eval, the builder (whose pipeline it replays
through the builder's public API) and `common`.
"""

from __future__ import annotations

import pathlib

import flyte
import flyte.report

from agent_loop_builder import LessonChoice
from agent_loop_common.deploy import (
    agent_env_vars,
    agent_image,
    agent_secrets,
    agent_tests_environments,
)
from agent_loop_common.settings import load_settings
from agent_loop_eval._baselines import shared_baselines
from agent_loop_eval._evaluate import evaluate, score_prediction
from agent_loop_eval._fanout import fan_out
from agent_loop_eval._instance import Instance
from agent_loop_eval._predictions import Prediction, missing_result, pair_predictions
from agent_loop_eval._report import report_html
from agent_loop_eval._results import InstanceResult

__all__ = ["PACKAGE_DIR", "env", "eval_instance", "eval_run", "eval_score", "eval_score_instance"]

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
"""`packages/eval`: where the image's exported lock lives."""

env = flyte.TaskEnvironment(
    name="eval",
    image=agent_image("eval", PACKAGE_DIR),
    # Mining reads GitHub; a replay calls the model: the same credentials as the builder.
    secrets=agent_secrets(),
    # A task started by name has no shell: the deploying shell's settings travel with it.
    env_vars=agent_env_vars(),
    depends_on=agent_tests_environments(),
)


@env.task
async def eval_instance(instance: Instance, lessons: str = "on", model: str = "") -> InstanceResult:
    """One instance: its base commit's tarball, the builder replayed on it offline, and
    the score with its hidden tests (`evaluate`). Never fails for the instance's sake:
    every failure is the result's `outcome` and `error`.

    Args:
        instance: The task instance (SWE-bench's fields).
        lessons: `on`, `off` or lesson ids, comma separated.
        model: A litellm model string for the builder and its verifier; "" for the
            deployment's `AGENT_LOOP_MODEL`.
    """
    return await evaluate(
        instance, load_settings(), lessons=LessonChoice.parse(lessons), model=model
    )


@env.task(report=True)
async def eval_run(
    instances: list[Instance], lessons: str = "on", model: str = "", parallel: int = 1
) -> list[InstanceResult]:
    """A benchmark run: `eval_instance` on every instance, `parallel` at a time, and the
    run's report (resolved rate with its interval, cost, each instance with its diff).
    In local mode the instances share their base commits' baselines
    (`shared_baselines`); on a cluster each instance's container has its own."""
    with shared_baselines():
        results = await fan_out(
            eval_instance,
            instances,
            parallel=parallel,
            inputs=lambda _: {"lessons": lessons, "model": model},
        )
    shown = next((r.model for r in results if r.model), model or load_settings().model)
    html = report_html(results, title="agent-loop eval run", model=shown, lessons=lessons)
    await flyte.report.log.aio(html, do_flush=True)
    return results


@env.task
async def eval_score_instance(
    instance: Instance, prediction: Prediction, check_gold: bool = False
) -> InstanceResult:
    """One prediction made elsewhere, scored as `eval_instance` scores a build's change:
    its base commit's tarball, the patch applied there, the test patch over it and the
    hidden tests in the sandbox (`score_prediction`). With `check_gold` (the prediction
    is the instance's own fix) the empty patch is run too and the instance judged."""
    return await score_prediction(instance, load_settings(), prediction, check_gold=check_gold)


@env.task(report=True)
async def eval_score(
    instances: list[Instance],
    predictions: list[Prediction],
    parallel: int = 1,
    check_gold: bool = False,
) -> list[InstanceResult]:
    """Score predictions made elsewhere: `eval_score_instance` on every instance that has
    one, `parallel` at a time, sharing baselines as `eval_run` does; an instance without
    one is `missing` (never resolved). Results in the instances' order, and the run's
    report."""
    pairs, missing, _ = pair_predictions(instances, predictions)
    by_id = {i.instance_id: p for i, p in pairs}
    with shared_baselines():
        scored = await fan_out(
            eval_score_instance,
            [i for i, _ in pairs],
            parallel=parallel,
            inputs=lambda i: {"prediction": by_id[i.instance_id], "check_gold": check_gold},
        )
    found = {r.instance_id: r for r in scored} | {i.instance_id: missing_result(i) for i in missing}
    results = [found[i.instance_id] for i in instances]
    shown = next((p.model_name_or_path for p in predictions if p.model_name_or_path), "")
    html = report_html(results, title="agent-loop eval score", model=shown, lessons="")
    await flyte.report.log.aio(html, do_flush=True)
    return results
