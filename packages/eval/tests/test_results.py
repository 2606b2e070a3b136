"""What a run leaves on disk (results, SWE-bench predictions, the report) and how its
instance tasks are fanned out (K at a time, in order, a failing task still a result)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_loop_eval import (
    Instance,
    InstanceResult,
    fan_out,
    read_results,
    report_html,
    summarize_results,
    watch_results,
    write_results,
)

HOSTILE = "<script>alert(1)</script>"


def _results() -> list[InstanceResult]:
    return [
        InstanceResult(
            instance_id="acme__calc-11",
            resolved=True,
            outcome="change",
            diff=f"diff --git a/x.py b/x.py\n+{HOSTILE}\n",
            cost_usd=0.02,
            tokens_in=1000,
            tokens_out=100,
        ),
        InstanceResult(
            instance_id="acme__calc-12",
            resolved=False,
            outcome="rejected",
            reason=f"no try was verified: {HOSTILE}",
            failing_tests=[f"tests/test_x.py::test_{HOSTILE}"],
            cost_usd=0.01,
        ),
    ]


def test_a_run_writes_results_predictions_and_an_escaped_report(tmp_path: Path) -> None:
    results = _results()
    html = report_html(results, title=f"run {HOSTILE}", model="m", lessons="on")
    paths = write_results(tmp_path / "run", results, model="anthropic/claude", report=html)

    rows = json.loads(paths["results"].read_text())
    assert [list(r)[:2] for r in rows] == [["instance_id", "resolved"]] * 2
    predictions = [json.loads(x) for x in paths["predictions"].read_text().splitlines()]
    assert predictions == [
        {
            "instance_id": "acme__calc-11",
            "model_name_or_path": "anthropic/claude",
            "model_patch": results[0].diff,
        },
        {
            "instance_id": "acme__calc-12",
            "model_name_or_path": "anthropic/claude",
            "model_patch": "",
        },
    ]
    page = paths["report"].read_text()
    assert HOSTILE not in page
    assert "&lt;script&gt;" in page
    assert "1 of 2: <b>50.0%</b>" in page
    assert "$0.0300 in all, $0.0300 per resolved" in page
    assert read_results(tmp_path / "run").results == results
    assert read_results(paths["results"]).complete
    assert read_results(paths["results"]).results == results


def test_the_summary_has_the_wilson_interval_and_no_cost_per_resolved_without_any() -> None:
    s = summarize_results(_results())
    assert (s.instances, s.resolved, s.rate) == (2, 1, 0.5)
    assert s.low == pytest.approx(0.0945, abs=1e-4)
    assert s.high == pytest.approx(0.9055, abs=1e-4)
    none = summarize_results([_results()[1]])
    assert none.cost_per_resolved is None


def _instance(n: int) -> Instance:
    return Instance(
        instance_id=f"acme__calc-{n}",
        repo="acme/calc",
        base_commit="a" * 40,
        problem_statement="p",
        created_at=datetime.now(UTC),
    )


async def test_instances_run_k_at_a_time_in_order_and_a_failing_task_is_a_result() -> None:
    in_flight = 0
    most = 0

    async def task(*, instance: Instance, lessons: str, model: str) -> InstanceResult:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.01 * (5 - int(instance.instance_id.rsplit("-", 1)[1])))
        in_flight -= 1
        if instance.instance_id.endswith("-3"):
            raise RuntimeError("the container died")
        return InstanceResult(instance_id=instance.instance_id, resolved=True, lessons=lessons)

    seen: list[tuple[str, int, int]] = []
    with watch_results(lambda r, done, total: seen.append((r.instance_id, done, total))):
        results = await fan_out(
            task,
            [_instance(n) for n in range(1, 5)],
            parallel=2,
            inputs=lambda _: {"lessons": "off", "model": ""},
        )
    assert most == 2
    assert [r.instance_id for r in results] == [f"acme__calc-{n}" for n in range(1, 5)]
    failed = results[2]
    assert (failed.resolved, failed.outcome) == (False, "error")
    assert "the container died" in failed.error
    assert failed.lessons == "off"
    assert sorted(s[0] for s in seen) == [r.instance_id for r in results]
    assert [s[1] for s in seen] == [1, 2, 3, 4]
    assert {s[2] for s in seen} == {4}
