"""Stages, plans and the dependency order of decompositions."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent_loop_common.staging import (
    ChangePlan,
    ChangeStage,
    DecompositionPlan,
    DecompositionStage,
    PlanError,
    PlannedIssue,
    Reply,
    order_issues,
)


def issue(key: str, *deps: str) -> PlannedIssue:
    return PlannedIssue(key=key, title=f"Do {key}", body=f"Body of {key}", depends_on=deps)


def test_change_stage_lifecycle_and_plan() -> None:
    stage = ChangeStage()
    assert stage.status == "open"
    with pytest.raises(PlanError, match="nothing is staged"):
        stage.submit(title="t", summary="s")
    stage.put("src/a.py", "print(1)\n")
    stage.delete("old.py")
    plan = stage.submit(
        title="Add a", body="b", summary="s", replies=[Reply(comment_id=1, reply="done")]
    )
    assert stage.submitted
    assert plan == stage.to_plan()
    assert plan.files == {"src/a.py": "print(1)\n", "old.py": None}
    assert plan.written == {"src/a.py": "print(1)\n"}
    assert plan.deleted == ["old.py"]
    assert plan.replies == (Reply(comment_id=1, reply="done"),)
    # the plan is a copy: later edits to the stage do not change it
    stage.put("src/b.py", "x")
    assert "src/b.py" not in plan.files
    with pytest.raises(ValidationError):
        plan.title = "changed"  # type: ignore[misc]


def test_edits_after_submission_reopen_the_stage() -> None:
    stage = ChangeStage()
    stage.put("a.py", "1")
    stage.submit(title="t", summary="s")
    stage.put("a.py", "2")
    assert stage.status == "open"
    with pytest.raises(PlanError, match="not submitted"):
        stage.to_plan()
    stage.decline("not needed")
    assert stage.status == "declined"
    assert stage.decline_reason == "not needed"
    assert stage.remove("a.py")
    assert not stage.remove("a.py")
    assert stage.status == "open"
    assert stage.decline_reason == ""


def test_retry_starts_from_the_previous_proposal() -> None:
    stage = ChangeStage()
    stage.put("src/a.py", "v1")
    first = stage.submit(title="t", summary="s")
    stage.reopen()  # the verifier rejected: same stage, next attempt
    assert stage.status == "open"
    assert dict(stage.files) == {"src/a.py": "v1"}
    rebuilt = ChangeStage.from_plan(first)  # or across a task boundary
    assert dict(rebuilt.files) == dict(first.files)
    assert rebuilt.status == "open"
    assert "src/a.py (2 bytes)" in rebuilt.describe()
    assert ChangeStage().describe() == "(nothing staged)"


def test_files_view_is_read_only() -> None:
    stage = ChangeStage({"a": "1"})
    with pytest.raises(TypeError):
        stage.files["b"] = "2"  # type: ignore[index]


def test_change_plan_round_trips_through_json() -> None:
    plan = ChangePlan(
        files={"a.py": "x", "gone.py": None},
        title="t",
        summary="s",
        replies=(Reply(comment_id=3, reply="ok"),),
    )
    assert ChangePlan.model_validate_json(plan.model_dump_json()) == plan


def test_topological_order_keeps_staging_order_among_ready_items() -> None:
    items = [
        issue("ui", "api"),
        issue("docs"),
        issue("api", "db"),
        issue("db"),
        issue("e2e", "ui", "api"),
    ]
    ordered = [i.key for i in order_issues(items)]
    assert ordered == ["docs", "db", "api", "ui", "e2e"]
    for position, item in enumerate(order_issues(items)):
        assert all(ordered.index(dep) < position for dep in item.depends_on)


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([issue("a", "b"), issue("b", "a")], "cycle (each depends on the next): a -> b -> a"),
        ([issue("a", "b"), issue("b", "c"), issue("c", "b"), issue("d")], "b -> c -> b"),
        ([issue("x"), issue("a", "b"), issue("b", "c"), issue("c", "a")], "a -> b -> c -> a"),
        ([issue("a", "missing")], "depends on 'missing', which is not staged"),
        ([issue("a"), issue("a")], "staged twice"),
    ],
)
def test_invalid_graphs_are_reported(items: list[PlannedIssue], message: str) -> None:
    with pytest.raises(PlanError) as info:
        order_issues(items)
    assert message in str(info.value)


def test_decomposition_stage_submits_in_dependency_order() -> None:
    stage = DecompositionStage()
    with pytest.raises(PlanError, match="no sub-issues"):
        stage.submit("s")
    assert not stage.put(issue("b", "a"))
    assert not stage.put(issue("a"))
    with pytest.raises(PlanError):
        DecompositionStage([issue("a", "b"), issue("b", "a")]).submit("s")
    plan = stage.submit("split in two")
    assert [i.key for i in plan.items] == ["a", "b"]
    assert plan.summary == "split in two"
    assert stage.to_plan() == plan
    # restaging a key replaces it and reopens the stage, keeping its position
    assert stage.put(PlannedIssue(key="b", title="Better b", body="x", depends_on=("a",)))
    assert stage.status == "open"
    assert [i.title for i in stage.items] == ["Better b", "Do a"]
    assert "b: Better b (depends on a)" in stage.describe()
    again = DecompositionStage.from_plan(plan)
    assert [i.key for i in again.items] == ["a", "b"]


def test_decomposition_plan_rejects_out_of_order_or_duplicate_items() -> None:
    with pytest.raises(ValidationError, match="do not come before it"):
        DecompositionPlan(items=(issue("b", "a"), issue("a")))
    with pytest.raises(ValidationError, match="duplicate key"):
        DecompositionPlan(items=(issue("a"), issue("a")))
    ok = DecompositionPlan(items=(issue("a"), issue("b", "a")), summary="s")
    assert DecompositionPlan.model_validate_json(ok.model_dump_json()) == ok
