"""Another package's task called by its name (`call_task_by_name`), locally and across
the cluster's boundary.

Locally the name is found where the workspace declares it (`agent_loop_eval/env.py`)
and the task runs: an instance whose base cannot be downloaded comes back as the
eval's own error result, as plain data. On a cluster the caller knows the deployed
task only by the interface Flyte guesses from the registry: the instance, given as the
instances file holds it, is validated into the guessed type, becomes the literal Flyte
sends, and the eval's task reads it as its own `Instance`; its `InstanceResult` comes
back through the guessed output type as the same plain data. That round trip is run
here with Flyte's own type engine on the eval task's real interface (no cluster).
"""

from __future__ import annotations

import json
import pathlib
from datetime import UTC, datetime
from typing import Any

import pytest
from flyte.types import TypeEngine, guess_interface

from agent_loop_common.runtime import (
    TaskNotFound,
    call_task_by_name,
    environment_module,
    plain_output,
    typed_inputs,
)
from agent_loop_distiller import ReplayInstance
from agent_loop_eval import Instance, InstanceResult
from agent_loop_eval.env import eval_instance
from agent_loop_testing import GitHubEmulator, serve_for_cli

LINE = {
    "instance_id": "acme__widgets-7",
    "repo": "acme/widgets",
    "base_commit": "0" * 40,
    "problem_statement": "Add names()\n\nList the names.",
    "FAIL_TO_PASS": '["tests/test_names.py::test_names"]',  # SWE-bench's JSON text
    "PASS_TO_PASS": "[]",
    "created_at": "2026-11-30T10:00:00Z",
    "environment_setup_commit": "ignored",
}


def test_names_are_environment_dot_task() -> None:
    assert environment_module("eval.eval_instance") == "agent_loop_eval.env"
    for bad in ("eval", "Eval.x", "eval.", ".x", "eval.x.y", "../x.y"):
        with pytest.raises(ValueError, match=r"<environment>\.<task>"):
            environment_module(bad)


async def test_a_name_nothing_declares_is_not_found() -> None:
    with pytest.raises(TaskNotFound, match=r"agent_loop_nosuch\.env is not installed"):
        await call_task_by_name("nosuch.run")
    with pytest.raises(TaskNotFound, match="declares no such task"):
        await call_task_by_name("eval.nope")


async def test_the_local_task_runs_by_name_and_answers_plain_data(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    emulator = GitHubEmulator()  # acme/widgets, without the instance's base commit
    emulator.seed_files({"README.md": "# widgets\n"})
    with serve_for_cli(monkeypatch, emulator, tmp_path / "home", AGENT_LOOP_SANDBOX="off"):
        result = await call_task_by_name("eval.eval_instance", instance=LINE, lessons="off")
    assert isinstance(result, dict)
    data: dict[str, Any] = result
    json.dumps(data)  # plain data all the way down
    assert data["instance_id"] == "acme__widgets-7"
    assert (data["resolved"], data["outcome"], data["lessons"]) == (False, "error", "off")
    assert data["error"].startswith("NotFound: GET ")
    assert f"/tarball/{'0' * 40} failed; GitHub answered 404" in data["error"]


async def test_across_the_cluster_boundary_only_plain_data_is_shared() -> None:
    from flyte._internal.runtime.types_serde import transform_native_to_typed_interface

    # What the registry tells a caller that has none of the eval's types.
    registered = transform_native_to_typed_interface(eval_instance.native_interface)
    assert registered is not None
    deployed = guess_interface(registered)
    guessed = deployed.inputs["instance"][0]
    assert guessed is not Instance
    # The instance as the distiller sends it: the file's line, its test lists decoded.
    sent = ReplayInstance.model_validate(LINE).model_dump(mode="json")
    assert sent["environment_setup_commit"] == "ignored"  # carried through unread
    inputs = typed_inputs({"instance": sent, "lessons": "L-1"}, dict(deployed.inputs))
    assert isinstance(inputs["instance"], guessed)
    assert inputs["lessons"] == "L-1"
    # Sent as Flyte sends it, read by the eval's task as its own type.
    literal = await TypeEngine.to_literal(
        inputs["instance"], guessed, TypeEngine.to_literal_type(guessed)
    )
    received = await TypeEngine.to_python_value(literal, Instance)
    assert received == Instance.model_validate(LINE)
    assert received.FAIL_TO_PASS == ["tests/test_names.py::test_names"]
    # The result comes back through the guessed output type as the same data.
    result = InstanceResult(
        instance_id=received.instance_id,
        resolved=True,
        outcome="change",
        lesson_ids=["L-1"],
        llm_calls=4,
        cost_usd=0.01,
    )
    out_type = deployed.outputs["o0"]
    back = await TypeEngine.to_python_value(
        await TypeEngine.to_literal(
            result, InstanceResult, TypeEngine.to_literal_type(InstanceResult)
        ),
        out_type,
    )
    assert InstanceResult.model_validate(plain_output(back)) == result
    assert plain_output([back])[0]["lesson_ids"] == ["L-1"]
    assert datetime.fromisoformat(plain_output(received)["created_at"]) == datetime(
        2026, 11, 30, 10, tzinfo=UTC
    )
