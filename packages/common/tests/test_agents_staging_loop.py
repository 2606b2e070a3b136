"""A real flyte Agent loop, driven by a scripted model, stages and submits a change."""

from __future__ import annotations

from flyte.ai.agents import Agent

from agent_loop_common.agents import run_agent
from agent_loop_common.staging import (
    ChangePlan,
    ChangeStage,
    DecompositionStage,
    Reply,
    StagingPolicy,
    decomposition_tools,
    fix_tools,
    implementation_tools,
)
from agent_loop_testing import ScriptedModel, call, turn

BASE = {"README.md": "# Demo\n", "src/demo/old.py": "OLD = 1\n"}


async def exists_at_base(path: str) -> bool:
    return path in BASE


def builder(model: ScriptedModel, stage: ChangeStage) -> Agent:
    return Agent(
        name="builder",
        instructions="Implement the issue.",
        model="m",
        tools=implementation_tools(stage, StagingPolicy(), exists_at_base=exists_at_base),
        call_llm=model,
        parallel_tool_calls=False,
        max_turns=10,
    )


async def test_agent_stages_files_and_submits_an_implementation() -> None:
    stage = ChangeStage()
    model = ScriptedModel(
        [
            turn(
                tool_calls=[
                    call(
                        "stage_file",
                        path="./src/demo/greet.py",
                        content="def greet():\n    return 'hi'\n",
                    ).expecting("Staged src/demo/greet.py")
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "stage_file", path=".github/workflows/ci.yml", content="on: push\n"
                    ).expecting("Refused: ", "workflow")
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "stage_file",
                        path="tests/test_greet.py",
                        content="from demo.greet import greet\n",
                    )
                ]
            ),
            turn(
                tool_calls=[
                    call("delete_file", path="src/demo/old.py").expecting("Staged deletion")
                ]
            ),
            turn(
                tool_calls=[
                    call("delete_file", path="src/demo/missing.py").expecting(
                        "does not exist on the base branch"
                    )
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title="Add greet()",
                        body="Adds greet.\n\nFixes the issue.",
                        summary="New greet function with a test.",
                    ).expecting("Submitted 3 path(s)")
                ]
            ),
            turn("Implemented greet() with a test and removed old.py."),
        ]
    )
    run = await run_agent(builder(model, stage), "Implement issue #5: add greet().")
    assert run.result.error == ""
    model.assert_finished()
    assert stage.submitted
    assert stage.to_plan() == ChangePlan(
        files={
            "src/demo/greet.py": "def greet():\n    return 'hi'\n",
            "tests/test_greet.py": "from demo.greet import greet\n",
            "src/demo/old.py": None,
        },
        title="Add greet()",
        body="Adds greet.\n\nFixes the issue.",
        summary="New greet function with a test.",
    )
    assert [(s.tool, s.ok) for s in run.tool_steps] == [
        ("stage_file", True),
        ("stage_file", False),
        ("stage_file", True),
        ("delete_file", True),
        ("delete_file", False),
        ("submit_implementation", True),
    ]


async def test_a_retry_starts_from_the_previous_stage() -> None:
    stage = ChangeStage()
    first = ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="src/a.py", content="v1")]),
            turn(tool_calls=[call("stage_file", path="src/b.py", content="b")]),
            turn(tool_calls=[call("submit_implementation", title="A", body="", summary="s")]),
            turn("done"),
        ]
    )
    assert (await run_agent(builder(first, stage), "try 1")).result.error == ""
    first.assert_finished()
    stage.reopen()  # the verifier rejected try 1
    second = ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="src/a.py", content="v2")]),
            turn(tool_calls=[call("submit_implementation", title="A", body="", summary="s2")]),
            turn("done"),
        ]
    )
    assert (await run_agent(builder(second, stage), "try 2 with notes")).result.error == ""
    second.assert_finished()
    assert stage.to_plan().files == {"src/a.py": "v2", "src/b.py": "b"}
    assert stage.to_plan().summary == "s2"


async def test_an_agent_that_never_submits_leaves_the_stage_open() -> None:
    stage = ChangeStage()
    model = ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="a.py", content="x")]),
            turn("I think I am done."),
        ]
    )
    run = await run_agent(builder(model, stage), "go")
    assert run.result.error == ""
    assert stage.status == "open"  # the pipeline reads the stage, not the text


async def test_agent_decomposes_a_spec_in_dependency_order() -> None:
    stage = DecompositionStage()
    model = ScriptedModel(
        [
            turn(
                tool_calls=[
                    call(
                        "stage_issue",
                        key="cli",
                        title="Add the CLI",
                        body="CLI over the API.",
                        depends_on=["api"],
                    )
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "stage_issue",
                        key="api",
                        title="Add the API",
                        body="The API.",
                        depends_on=[],
                    )
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "stage_issue",
                        key="docs",
                        title="Document it",
                        body="Docs.",
                        depends_on=["cli", "api"],
                    )
                ]
            ),
            turn(
                tool_calls=[
                    call("submit_decomposition", summary="API, then CLI, then docs.").expecting(
                        "api; cli (after api); docs (after cli, api)"
                    )
                ]
            ),
            turn("Split into three."),
        ]
    )
    agent = Agent(
        name="builder",
        model="m",
        tools=decomposition_tools(stage, StagingPolicy()),
        call_llm=model,
        parallel_tool_calls=False,
    )
    run = await run_agent(agent, "Decompose spec #9")
    assert run.result.error == ""
    model.assert_finished()
    plan = stage.to_plan()
    assert [item.key for item in plan.items] == ["api", "cli", "docs"]
    assert plan.items[2].depends_on == ("cli", "api")


async def test_agent_submits_a_fix_with_replies_from_model_json() -> None:
    stage = ChangeStage()
    model = ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="src/a.py", content="fixed\n")]),
            # a malformed reply fails argument conversion: the model is told and may retry
            turn(
                tool_calls=[
                    call(
                        "submit_fix", summary="s", replies=[{"comment_id": "abc", "reply": "x"}]
                    ).expecting("Error executing tool `submit_fix`", "comment_id")
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "submit_fix", summary="s", replies=[{"comment_id": 99, "reply": "x"}]
                    ).expecting("not one of the feedback comments")
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "submit_fix",
                        summary="Renamed the helper.",
                        replies=[{"comment_id": 11, "reply": "Renamed as asked."}],
                    ).expecting("with 1 reply(ies)")
                ]
            ),
            turn("Fixed."),
        ]
    )
    agent = Agent(
        name="reviewer",
        model="m",
        tools=fix_tools(stage, StagingPolicy(), known_comment_ids={11}),
        call_llm=model,
        parallel_tool_calls=False,
    )
    run = await run_agent(agent, "Address the feedback on PR #4")
    assert run.result.error == ""
    model.assert_finished()
    assert stage.to_plan().replies == (Reply(comment_id=11, reply="Renamed as asked."),)
    assert [s.ok for s in run.tool_steps] == [True, False, False, True]
