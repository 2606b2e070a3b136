"""The Flyte declarations: tasks of the `builder` environment, its trigger, its report."""

from __future__ import annotations

from datetime import UTC, datetime

from flyte._internal.runtime.trigger_serde import to_task_trigger
from flyte._internal.runtime.types_serde import transform_native_to_typed_interface

from agent_loop_builder.env import IDLE_NOTE, PACKAGE_DIR, SCHEDULE, builder_tick, env
from agent_loop_common.records import (
    Attempt,
    Links,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
    TraceStep,
)
from agent_loop_common.report import run_report_html
from agent_loop_common.runtime import TickSummary, summarize


def test_the_environment_declares_the_tick_and_its_durable_writes() -> None:
    assert env.name == "builder"
    assert set(env.tasks) == {
        "builder.builder_tick",
        "builder.builder_work",
        "builder.open_pull_request",
        "builder.file_sub_issues",
        "builder.post_feedback",
    }
    assert builder_tick.report
    assert (PACKAGE_DIR / "pyproject.toml").is_file()
    assert SCHEDULE == "*/5 * * * *"


async def test_the_trigger_serializes_against_the_task_inputs() -> None:
    # `flyte deploy --dry-run` does not check triggers; this is the serialization deploy runs.
    interface = transform_native_to_typed_interface(builder_tick.interface)
    assert interface is not None
    (trigger,) = builder_tick.triggers
    wire = await to_task_trigger(trigger, builder_tick.name, interface.inputs, [])
    assert wire.name == "builder_schedule"
    assert wire.automation_spec.schedule.kickoff_time_input_arg == "trigger_time"
    assert wire.automation_spec.schedule.cron.expression == "*/5 * * * *"


def test_summary_and_report_escape_what_issues_and_models_wrote() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    record = RunRecord(
        run_id="r1",
        role=Role.BUILDER,
        target=Target(kind=TargetKind.ISSUE, number=4, title="<script>x</script>"),
        outcome=Outcome.OPENED_PR,
        started_at=now,
        finished_at=now,
        attempts=[Attempt(number=1, verified=True, notes="<b>ok</b>", staged_paths=["a.py"])],
        trace=[TraceStep(tool="stage_file", args='{"path": "<a>"}', ok=True, ms=1)],
        links=Links(pr_url="https://x/pull/5"),
    )
    assert summarize(Role.BUILDER, None, idle=IDLE_NOTE).idle
    assert summarize(Role.BUILDER, record, idle=IDLE_NOTE) == TickSummary(
        role=Role.BUILDER,
        run_id="r1",
        outcome=Outcome.OPENED_PR,
        target="issue#4",
        github_requests=0,
        pr_url="https://x/pull/5",
        tries=1,
    )
    html = run_report_html(record, heading="Builder tick", idle="Idle.")
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert "&lt;b&gt;ok&lt;/b&gt;" in html
    assert 'href="https://x/pull/5"' in html
    assert "Idle" in run_report_html(None, heading="Builder tick", idle="Idle.")
