"""The staging tools called directly: effects on the stage and the text the model gets back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agent_loop_common.staging import (
    REFUSAL_PREFIX,
    ChangeStage,
    DecompositionStage,
    Reply,
    StagingPolicy,
    StagingTool,
    decomposition_tools,
    fix_tools,
    implementation_tools,
)


def by_name(tools: list[StagingTool]) -> dict[str, Callable[..., Any]]:
    return {t.__name__: t for t in tools}


async def test_implementation_tools_stage_and_submit() -> None:
    stage = ChangeStage()
    tools = by_name(implementation_tools(stage, StagingPolicy()))
    assert list(tools) == [
        "stage_file",
        "edit_file",
        "unstage_file",
        "delete_file",
        "submit_implementation",
        "skip_issue",
    ]

    assert (await tools["stage_file"](path="./src/a.py", content="x = 1\n")).startswith(
        "Staged src/a.py (6 bytes)"
    )
    assert (await tools["stage_file"](path="notes.txt", content="n")).startswith("Staged notes.txt")
    assert (await tools["unstage_file"](path="notes.txt")).startswith("Unstaged notes.txt")
    missing = await tools["unstage_file"](path="notes.txt")
    assert missing.startswith(REFUSAL_PREFIX)
    assert "Staged paths: src/a.py" in missing
    assert (await tools["delete_file"](path="old.py")).startswith("Staged deletion of old.py")

    refused = await tools["submit_implementation"](title="  ", body="", summary="s")
    assert refused == f"{REFUSAL_PREFIX}title is empty: write a title."
    assert stage.status == "open"
    done = await tools["submit_implementation"](
        title="Add a\nmodule", body="Body", summary="Adds a."
    )
    assert done.startswith("Submitted 2 path(s): old.py, src/a.py.")
    plan = stage.to_plan()
    assert plan.title == "Add a module"
    assert plan.files == {"src/a.py": "x = 1\n", "old.py": None}

    # an edit after submitting withdraws the submission and says so
    again = await tools["stage_file"](path="src/a.py", content="x = 2\n")
    assert "withdrew your earlier submission" in again
    assert stage.status == "open"


async def test_policy_violations_come_back_as_text_and_leave_the_stage_alone() -> None:
    stage = ChangeStage()
    tools = by_name(implementation_tools(stage, StagingPolicy(max_file_bytes=100)))
    for kwargs in [
        {"path": "../escape.py", "content": "x"},
        {"path": ".git/config", "content": "x"},
        {"path": ".github/workflows/ci.yml", "content": "on: push"},
        {"path": "big.txt", "content": "x" * 101},
        {"path": "bin.dat", "content": "\x00\x01"},
        {"path": 7, "content": "x"},
        {"path": "a.py", "content": None},
    ]:
        result = await tools["stage_file"](**kwargs)
        assert result.startswith(REFUSAL_PREFIX), result
    assert (await tools["delete_file"](path=".github/workflows/ci.yml")).startswith(REFUSAL_PREFIX)
    assert dict(stage.files) == {}
    refused = await tools["submit_implementation"](title="t", body="", summary="s")
    assert refused.startswith(f"{REFUSAL_PREFIX}nothing is staged")


async def test_delete_file_consults_the_base_branch_when_it_can() -> None:
    base = {"README.md"}

    async def exists_at_base(path: str) -> bool:
        return path in base

    stage = ChangeStage()
    tools = by_name(implementation_tools(stage, StagingPolicy(), exists_at_base=exists_at_base))
    assert (await tools["delete_file"](path="README.md")).startswith("Staged deletion")
    assert (await tools["delete_file"](path="nope.md")).startswith(
        f"{REFUSAL_PREFIX}'nope.md' does not exist"
    )
    await tools["stage_file"](path="new.md", content="x")
    assert (await tools["delete_file"](path="new.md")).startswith("Unstaged new file new.md")
    assert dict(stage.files) == {"README.md": None}


async def test_skip_issue_declines_with_a_reason() -> None:
    stage = ChangeStage()
    tools = by_name(implementation_tools(stage, StagingPolicy()))
    assert (await tools["skip_issue"](reason="")).startswith(REFUSAL_PREFIX)
    assert stage.status == "open"
    assert (await tools["skip_issue"](reason="Already fixed in main.")).startswith("Recorded.")
    assert stage.decline_reason == "Already fixed in main."
    assert "skip_issue" not in by_name(
        implementation_tools(ChangeStage(), StagingPolicy(), include_skip=False)
    )


async def test_fix_tools_check_replies() -> None:
    stage = ChangeStage()
    tools = by_name(fix_tools(stage, StagingPolicy(), known_comment_ids={11, 12}))
    assert list(tools) == [
        "stage_file",
        "edit_file",
        "unstage_file",
        "delete_file",
        "submit_fix",
        "no_changes",
    ]
    await tools["stage_file"](path="src/a.py", content="fixed")
    for replies, needle in [
        (
            [{"comment_id": 99, "reply": "x"}],
            "not one of the feedback comments shown to you (ids: 11, 12)",
        ),
        ([{"comment_id": 11, "reply": "a"}, {"comment_id": 11, "reply": "b"}], "two replies"),
        ([{"comment_id": 11, "reply": "   "}], "reply to comment 11 is empty"),
        ([{"reply": "x"}], "integer comment_id"),
        ("not a list", "must be a list"),
    ]:
        result = await tools["submit_fix"](summary="s", replies=replies)
        assert result.startswith(REFUSAL_PREFIX), result
        assert needle in result
    assert stage.status == "open"
    result = await tools["submit_fix"](
        summary="Fixed the bug.", replies=[Reply(comment_id=12, reply=" Done. ")]
    )
    assert result.startswith("Submitted a fix touching 1 path(s) with 1 reply(ies).")
    assert stage.to_plan().replies == (Reply(comment_id=12, reply="Done."),)

    other = ChangeStage()
    no_change = by_name(fix_tools(other, StagingPolicy()))
    assert (await no_change["submit_fix"](summary="s", replies=[])).startswith(
        f"{REFUSAL_PREFIX}nothing is staged"
    )
    assert (await no_change["no_changes"](reason="Looks correct.")).startswith("Recorded.")
    assert other.status == "declined"


async def test_decomposition_tools() -> None:
    stage = DecompositionStage()
    tools = by_name(decomposition_tools(stage, StagingPolicy(max_issues=3)))
    assert list(tools) == ["stage_issue", "submit_decomposition", "skip_issue"]

    staged = await tools["stage_issue"](
        key="ui", title="UI", body="Build the UI.", depends_on=["api", "api"]
    )
    assert staged.startswith("Staged sub-issue 'ui'; 1 staged.")
    assert "depends_on names 'api', not staged yet" in staged
    refused = await tools["submit_decomposition"](summary="s")
    assert refused.startswith(REFUSAL_PREFIX)
    assert "not staged" in refused
    await tools["stage_issue"](key="api", title="API", body="Build the API.", depends_on=[])
    for kwargs, needle in [
        ({"key": "bad key!", "title": "t", "body": "b", "depends_on": []}, "is not valid"),
        ({"key": "x", "title": "t", "body": "b", "depends_on": ["x"]}, "cannot depend on itself"),
        ({"key": "x", "title": "api", "body": "b", "depends_on": []}, "already has the title"),
        ({"key": "x", "title": "t", "body": " ", "depends_on": []}, "body is empty"),
        ({"key": "x", "title": "t", "body": "b", "depends_on": "api"}, "must be a list"),
        ({"key": "x", "title": "t", "body": "b", "depends_on": [3]}, "must be keys"),
    ]:
        result = await tools["stage_issue"](**kwargs)
        assert result.startswith(REFUSAL_PREFIX), result
        assert needle in result
    await tools["stage_issue"](key="docs", title="Docs", body="Write docs.", depends_on=["ui"])
    capped = await tools["stage_issue"](key="more", title="More", body="b", depends_on=[])
    assert "3 sub-issues are staged, the limit" in capped

    # a cycle is refused at submission, with the cycle spelled out
    await tools["stage_issue"](key="api", title="API", body="Build the API.", depends_on=["docs"])
    cyclic = await tools["submit_decomposition"](summary="s")
    assert "ui -> api -> docs -> ui" in cyclic
    replaced = await tools["stage_issue"](
        key="api", title="API", body="Build the API.", depends_on=[]
    )
    assert replaced.startswith("Replaced sub-issue 'api'")
    done = await tools["submit_decomposition"](summary="Three steps.")
    assert done.startswith(
        "Submitted 3 sub-issue(s), to be filed in this order: api; ui (after api); docs (after ui)."
    )
    assert [i.key for i in stage.to_plan().items] == ["api", "ui", "docs"]


@pytest.mark.parametrize("name", ["stage_file", "submit_implementation", "skip_issue"])
def test_tools_are_not_flyte_traced(name: str) -> None:
    tool = by_name(implementation_tools(ChangeStage(), StagingPolicy()))[name]
    assert not hasattr(tool, "__wrapped__")


BASE = {"src/calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"}


async def _text_at_base(path: str) -> str | None:
    return BASE.get(path)


async def test_edit_file_stages_the_whole_file_with_one_exact_piece_replaced() -> None:
    stage = ChangeStage()
    tools = by_name(implementation_tools(stage, StagingPolicy(), text_at_base=_text_at_base))
    edited = await tools["edit_file"](
        path="./src/calc.py",
        old_text="def sub(a, b):\n    return a + b",
        new_text="def sub(a, b):\n    return a - b",
    )
    assert edited.startswith(
        "Edited src/calc.py (the base branch): 2 line(s) replaced by 2. Staged src/calc.py"
    )
    assert stage.files["src/calc.py"] == BASE["src/calc.py"][:-6] + "a - b\n"
    # a second edit applies to the staged version
    again = await tools["edit_file"](path="src/calc.py", old_text="add", new_text="plus")
    assert again.startswith("Edited src/calc.py (your staged version)")
    assert str(stage.files["src/calc.py"]).startswith("def plus(a, b):")


@pytest.mark.parametrize(
    ("path", "old", "needle"),
    [
        ("src/calc.py", "return a + b", "occurs 2 times in it; include more"),
        ("src/calc.py", "return a * b", "does not occur in it; read_file shows"),
        ("src/calc.py", "", "old_text is empty"),
        ("src/new.py", "x", "not a text file on the base branch or in your stage"),
        ("../etc/passwd", "x", "paths must stay inside the repository"),
    ],
)
async def test_edit_file_refuses_what_it_cannot_place_exactly(
    path: str, old: str, needle: str
) -> None:
    stage = ChangeStage()
    tools = by_name(implementation_tools(stage, StagingPolicy(), text_at_base=_text_at_base))
    refused = await tools["edit_file"](path=path, old_text=old, new_text="y")
    assert refused.startswith(REFUSAL_PREFIX)
    assert needle in refused
    assert stage.files == {}


async def test_edit_file_goes_through_the_policy_like_stage_file() -> None:
    stage = ChangeStage()
    policy = StagingPolicy(max_file_bytes=60)
    tools = by_name(implementation_tools(stage, policy, text_at_base=_text_at_base))
    grown = await tools["edit_file"](path="src/calc.py", old_text="add", new_text="add" * 20)
    assert grown.startswith(REFUSAL_PREFIX)
    assert stage.files == {}


async def test_a_submission_identical_to_the_base_is_refused() -> None:
    """Staging a file's base content unchanged and submitting it would commit nothing:
    the builder opened a pull request with no changed files (an issue already done on
    the base, a model that re-staged what it read). Submitting is refused while no staged
    file differs from the base; one real change among them is enough."""
    for make, submit, args in [
        (
            implementation_tools,
            "submit_implementation",
            {"title": "T", "body": "B", "summary": "S"},
        ),
        (fix_tools, "submit_fix", {"summary": "S", "replies": []}),
    ]:
        stage = ChangeStage()
        tools = by_name(make(stage, StagingPolicy(), text_at_base=_text_at_base))
        await tools["stage_file"]("src/calc.py", BASE["src/calc.py"])
        said = await tools[submit](**args)
        assert said.startswith(REFUSAL_PREFIX), said
        assert "identical to the base branch" in said
        assert stage.status == "open"
        fixed = BASE["src/calc.py"].replace("return a + b\n", "return a - b\n", 1)
        await tools["stage_file"]("src/new.py", "x = 1\n")  # a new file is a change
        assert not (await tools[submit](**args)).startswith(REFUSAL_PREFIX)
        await tools["unstage_file"]("src/new.py")
        await tools["stage_file"]("src/calc.py", fixed)
        assert not (await tools[submit](**args)).startswith(REFUSAL_PREFIX)
