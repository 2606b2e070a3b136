"""What a benchmark run leaves: one result per instance, and the files made of them.

`results.json` is a JSON list with one object per instance (`instance_id`, `resolved`,
then everything else), `predictions.jsonl` is SWE-bench's predictions format
(`instance_id`, `model_name_or_path`, `model_patch`), so SWE-bench's own harness can score
the same changes again, and `report.html` is the run for a person (`_report`).

A run stopped early (Ctrl-C) keeps what it finished, and says so in the file itself, not
beside it (a sidecar is lost when `results.json` is copied alone): its `results.json` is
an object, `{"complete": false, "instances": M, "finished": N, "unfinished": [ids],
"results": [...]}`, which a reader expecting a complete run's list refuses rather than
taking for one; `read_results` returns either as a `RunResults` that says which.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, Field, ValidationError

from agent_loop_common.records import Attempt, TestEvidence
from agent_loop_eval._problems import read_text, validation_line
from agent_loop_eval._stats import wilson

__all__ = [
    "GoldCheck",
    "InstanceResult",
    "RunResults",
    "RunSummary",
    "TestStatus",
    "partial_line",
    "read_results",
    "summarize_results",
    "write_results",
]

TestStatus = Literal["passed", "failed", "error", "skipped", "missing"]
"""A hidden test's outcome in the scoring run; `missing`: the run did not report it."""

RESULTS = "results.json"
PREDICTIONS = "predictions.jsonl"
REPORT = "report.html"


class GoldCheck(BaseModel):
    """Whether an instance can judge a change at all (`eval score --gold`), SWE-bench's
    sanity check of a dataset: its own reference fix must resolve it, and no change at
    all must not."""

    valid: bool
    problems: list[str] = Field(default_factory=list[str])
    """Why it is broken: the gold patch does not resolve it, a `FAIL_TO_PASS` test
    passes with no change (the list says it fails there), it names no `FAIL_TO_PASS`
    test (no change could fail it), or it could not be scored."""
    empty_failing: list[str] = Field(default_factory=list[str])
    """The `FAIL_TO_PASS` tests that did not pass with the empty patch (all of them,
    for a valid instance)."""
    empty_scoring: str = ""
    """The empty patch's scoring run in one line: command and result."""
    empty_seconds: float = 0.0


class InstanceResult(BaseModel):
    """One instance replayed and scored."""

    instance_id: str
    resolved: bool
    """Every `FAIL_TO_PASS` and `PASS_TO_PASS` test passed with the produced change."""
    repo: str = ""
    base_commit: str = ""
    outcome: str = "error"
    """How the build ended (`change`, `rejected`, `declined`, `decomposition`,
    `budget_exceeded`, `error`: see `agent_loop_builder.ReplayOutcome`); for a
    prediction made elsewhere (`eval score`): `change` (scored), `unapplied` (its patch
    does not apply at the base), `empty` (no patch) or `missing` (no prediction), each
    of the last three never resolved, or `error`."""
    reason: str = ""
    """Why it is not resolved, when it is not: the build's reason, or the scoring's."""
    tampered: list[str] = Field(default_factory=list[str])
    """Why the change's test results cannot be trusted: its code reaches into the test
    runner (the scan of the change, `path: shape`; the pytest guard, `pytest guard:
    ...`), found in the scoring run or in the build's own checks of it. Never resolved
    when any (the reason starts `tampered:`)."""
    failing_tests: list[str] = Field(default_factory=list[str])
    """The hidden tests that did not pass (a test the run did not report counts)."""
    tests: dict[str, TestStatus] = Field(default_factory=dict[str, TestStatus])
    """Each hidden test's outcome in the scoring run (empty when nothing was scored)."""
    tries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    llm_calls: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    """Wall time of the instance: the base download, the build and the scoring."""
    build_seconds: float = 0.0
    score_seconds: float = 0.0
    diff: str = ""
    """The produced change as a git diff against `base_commit` (empty: none)."""
    model: str = ""
    lessons: str = ""
    """The lessons option the run was made with (`on`, `off`, ids)."""
    lesson_ids: list[str] = Field(default_factory=list[str])
    """The lessons that reached the prompt."""
    verdicts: list[Attempt] = Field(default_factory=list[Attempt])
    """Each try: the verifier's verdict and notes, the visible tests' line."""
    visible_tests: TestEvidence | None = None
    """What the repository's own tests (at the base) said of the last change checked."""
    scoring: str = ""
    """The scoring run in one line: command and result."""
    github_requests: int = 0
    """Requests the build asked of GitHub (0: it had only the snapshot)."""
    error: str = ""
    """An error of the eval itself (the download, a test patch that does not apply)."""
    gold_check: GoldCheck | None = None
    """`eval score --gold`: whether the instance itself is sound (`None`: not checked)."""


class RunSummary(BaseModel):
    """A run's figures over its results."""

    instances: int
    resolved: int
    rate: float
    low: float
    """Lower end of the resolved rate's 95% Wilson interval."""
    high: float
    tokens_in: int
    tokens_out: int
    cost_usd: float
    cost_per_resolved: float | None
    """Total cost over resolved instances; `None` when none was resolved."""
    seconds: float
    """Sum of the instances' wall times (instances run K at a time take less)."""
    errors: int
    """Instances whose result is an error of the eval or the build."""
    tampered: int = 0
    """Instances whose change reached into the test runner (`InstanceResult.tampered`)."""


class RunResults(BaseModel):
    """A run's `results.json` as read: its results, and whether the run is complete."""

    results: list[InstanceResult]
    complete: bool = True
    """`False`: the run was interrupted; `results` are the instances it finished."""
    instances: int = 0
    """How many instances the run was asked for (a complete run: `len(results)`)."""
    unfinished: list[str] = Field(default_factory=list[str])
    """The instances an interrupted run did not finish (not run, or stopped mid-way)."""

    @property
    def note(self) -> str:
        """`interrupted after N of M instances; not a complete run`, or "" when complete."""
        return "" if self.complete else partial_line(len(self.results), self.instances)


def partial_line(finished: int, instances: int) -> str:
    """What marks an interrupted run wherever it is shown (its summary, report, a
    comparison): how far it got, and that it is not a complete run."""
    return f"interrupted after {finished} of {instances} instances; not a complete run"


def summarize_results(results: Sequence[InstanceResult]) -> RunSummary:
    """The figures of `results` (resolved rate with its interval, tokens, cost)."""
    n = len(results)
    resolved = sum(r.resolved for r in results)
    low, high = wilson(resolved, n)
    cost = sum(r.cost_usd for r in results)
    return RunSummary(
        instances=n,
        resolved=resolved,
        rate=resolved / n if n else 0.0,
        low=low,
        high=high,
        tokens_in=sum(r.tokens_in for r in results),
        tokens_out=sum(r.tokens_out for r in results),
        cost_usd=cost,
        cost_per_resolved=cost / resolved if resolved else None,
        seconds=sum(r.seconds for r in results),
        errors=sum(r.outcome == "error" for r in results),
        tampered=sum(bool(r.tampered) for r in results),
    )


def write_results(
    out: Path,
    results: Sequence[InstanceResult],
    *,
    model: str,
    report: str | None = None,
    unfinished: Sequence[str] | None = None,
) -> dict[str, Path]:
    """Write `results.json`, `predictions.jsonl` and (given its HTML) `report.html` into
    `out` (created); their paths by name.

    Args:
        out: The run's folder.
        results: One per instance, in the order they were asked for.
        model: `model_name_or_path` of every prediction.
        report: The report's HTML (`report_html`), or `None` for none.
        unfinished: An interrupted run's instances that did not finish: `results.json`
            is then marked partial (`"complete": false`); `None` for a complete run.
    """
    out.mkdir(parents=True, exist_ok=True)
    paths = {"results": out / RESULTS, "predictions": out / PREDICTIONS}
    rows = [r.model_dump(mode="json") for r in results]
    data: Any = rows
    if unfinished is not None:
        data = {
            "complete": False,
            "instances": len(results) + len(unfinished),
            "finished": len(results),
            "unfinished": list(unfinished),
            "results": rows,
        }
    paths["results"].write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    lines = [
        json.dumps(
            {"instance_id": r.instance_id, "model_name_or_path": model, "model_patch": r.diff},
            ensure_ascii=False,
        )
        for r in results
    ]
    paths["predictions"].write_text("".join(f"{line}\n" for line in lines))
    if report is not None:
        paths["report"] = out / REPORT
        paths["report"].write_text(report, encoding="utf-8")
    return paths


def read_results(path: Path) -> RunResults:
    """The results of a run: its `results.json`, or a run folder holding one; an
    interrupted run's (`"complete": false`) says so (`RunResults.complete`).

    Raises:
        OSError: The file cannot be read.
        ValueError: It is not a list of results.
    """
    file = path / RESULTS if path.is_dir() else path
    expected = f"not a run's {RESULTS} (a JSON list of results, one per instance)"
    try:
        text = read_text(file, "")
    except ValueError:  # not text: the caller names the file
        raise ValueError(f"{expected}: not UTF-8 text") from None
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{expected}: {exc}") from None
    partial: dict[str, Any] = {}
    if isinstance(data, dict) and cast("dict[str, Any]", data).get("complete") is False:
        partial = cast("dict[str, Any]", data)
        data = partial.get("results")
    if not isinstance(data, list):
        raise ValueError(expected)
    try:
        results = [InstanceResult.model_validate(item) for item in cast("list[Any]", data)]
        if not partial:
            return RunResults(results=results, instances=len(results))
        return RunResults(
            results=results,
            complete=False,
            instances=partial.get("instances", len(results)),
            unfinished=partial.get("unfinished", []),
        )
    except ValidationError as exc:
        raise ValueError(f"{expected}: {validation_line(exc)}") from None
    except ValueError as exc:
        raise ValueError(f"{expected}: {exc}") from None
