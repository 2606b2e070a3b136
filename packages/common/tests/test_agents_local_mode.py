"""Staging, tracing and verifying inside a Flyte task in local mode, as the pipelines do."""

from __future__ import annotations

import pathlib

import flyte
import pytest
from flyte.ai.agents import Agent

from agent_loop_common.agents import run_agent
from agent_loop_common.staging import ChangePlan, ChangeStage, StagingPolicy, implementation_tools
from agent_loop_common.verify import VERIFIER_MARKER, make_verifier_agent, run_verifier
from agent_loop_testing import ScriptedModel, call, turn

pytestmark = pytest.mark.slow

env = flyte.TaskEnvironment(name="test-agents-local")

MODEL = ScriptedModel(
    [
        turn(tool_calls=[call("stage_file", path="src/a.py", content="A = 1\n")]),
        turn(
            tool_calls=[call("submit_implementation", title="Add A", body="b", summary="Adds A.")]
        ),
        turn("Done."),
    ],
    routes={
        VERIFIER_MARKER: [
            turn(tool_calls=[call("read_file", path="src/a.py")]),
            turn('{"verified": true, "notes": "A is defined."}'),
        ]
    },
)


async def read_file(path: str) -> str:
    """Read a file at the base branch."""
    return f"(no file {path})"


@env.task
async def build_and_verify(issue: str) -> tuple[str, list[str], bool, str]:
    stage = ChangeStage()
    builder = Agent(
        name="builder",
        instructions="Implement the issue.",
        model="m",
        tools=[read_file, *implementation_tools(stage, StagingPolicy())],
        call_llm=MODEL,
        parallel_tool_calls=False,
    )
    with flyte.group("build"):
        run = await run_agent(builder, issue)
    assert run.result.error == "", run.result.error
    plan = stage.to_plan()
    with flyte.group("verify"):
        verdict = await run_verifier(
            make_verifier_agent(MODEL, "m", [read_file]), plan, request=issue
        )
    return plan.model_dump_json(), run.tools_called, verdict.verified, verdict.notes


async def test_pipeline_shape_runs_in_local_mode(tmp_path: pathlib.Path) -> None:
    flyte.init(org="testorg", project="agent-loop", domain="development")
    run = await flyte.with_runcontext(mode="local", raw_data_path=str(tmp_path)).run.aio(
        build_and_verify, "Add A to src/a.py"
    )
    plan_json, tools_called, verified, notes = run.outputs()
    MODEL.assert_finished()
    assert ChangePlan.model_validate_json(plan_json).files == {"src/a.py": "A = 1\n"}
    assert tools_called == ["stage_file", "submit_implementation"]
    assert verified
    assert notes == "A is defined."
