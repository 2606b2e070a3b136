"""RunRecord and friends: the JSON shape (snapshot) and reading across versions."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from agent_loop_common._fielddocs import field_docs
from agent_loop_common.records import (
    SCHEMA_VERSION,
    Attempt,
    GitHubUsage,
    Grade,
    GradeState,
    InvalidRecord,
    Lesson,
    LessonBook,
    Links,
    Outcome,
    ParsedRecord,
    Role,
    RunRecord,
    Target,
    TargetKind,
    TestEvidence,
    TraceStep,
    UnknownMajor,
    Usage,
    parse_record,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def full_record() -> RunRecord:
    return RunRecord(
        run_id="b-20260301-abc",
        role=Role.BUILDER,
        agent_id="builder@v3",
        deployment="local",
        target=Target(
            kind=TargetKind.ISSUE,
            number=12,
            title="Add --json",
            url="https://github.com/o/r/issues/12",
            created_at=T0 - timedelta(hours=5),
        ),
        outcome=Outcome.OPENED_PR,
        started_at=T0,
        finished_at=T0 + timedelta(minutes=4),
        attempts=[
            Attempt(
                number=1,
                verified=False,
                notes="tests missing",
                staged_paths=["a.py"],
                tokens=900,
                tests="failed: 1 failed, 3 passed (base: 3 passed)",
            ),
            Attempt(
                number=2,
                verified=True,
                staged_paths=["a.py", "test_a.py"],
                tokens=1100,
                tests="passed: 4 passed (base: 3 passed)",
            ),
        ],
        model="anthropic/claude-sonnet-4-5",
        usage=Usage(
            tokens_in=1500,
            tokens_out=500,
            llm_calls=9,
            cost_usd=0.0123,
            tokens_cache_read=1200,
            tokens_cache_write=200,
        ),
        github=GitHubUsage(requests=14, not_modified=3, by_route={"GET /repos/{owner}/{repo}": 2}),
        stage_seconds={"claim": 0.4, "build": 180.5},
        trace=[TraceStep(tool="read_file", args="a.py", ok=True, ms=12)],
        links=Links(pr_url="https://github.com/o/r/pull/13"),
        lesson_ids=["L-1"],
        tests=TestEvidence(
            command="python -m pytest -q",
            source="pyproject.toml",
            backend="bwrap",
            status="passed",
            summary="4 passed (base: 3 passed)",
            base="exit 0: 3 passed (0.4 s)",
            after="exit 0: 4 passed (0.5 s)",
            fail_to_pass=["test_a.py::test_new"],
            runs=3,
        ),
        diff="diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
    )


EXPECTED_JSON: dict[str, Any] = {
    "schema_version": "3.0",
    "run_id": "b-20260301-abc",
    "role": "builder",
    "agent_id": "builder@v3",
    "deployment": "local",
    "repo": "",
    "target": {
        "kind": "issue",
        "number": 12,
        "title": "Add --json",
        "url": "https://github.com/o/r/issues/12",
        "created_at": "2026-03-01T07:00:00Z",
    },
    "outcome": "opened_pr",
    "started_at": "2026-03-01T12:00:00Z",
    "finished_at": "2026-03-01T12:04:00Z",
    "attempts": [
        {
            "number": 1,
            "verified": False,
            "notes": "tests missing",
            "staged_paths": ["a.py"],
            "tokens": 900,
            "tests": "failed: 1 failed, 3 passed (base: 3 passed)",
        },
        {
            "number": 2,
            "verified": True,
            "notes": "",
            "staged_paths": ["a.py", "test_a.py"],
            "tokens": 1100,
            "tests": "passed: 4 passed (base: 3 passed)",
        },
    ],
    "model": "anthropic/claude-sonnet-4-5",
    "usage": {
        "tokens_in": 1500,
        "tokens_out": 500,
        "llm_calls": 9,
        "cost_usd": 0.0123,
        "tokens_cache_read": 1200,
        "tokens_cache_write": 200,
    },
    "github": {"requests": 14, "not_modified": 3, "by_route": {"GET /repos/{owner}/{repo}": 2}},
    "stage_seconds": {"claim": 0.4, "build": 180.5},
    "trace": [
        {"tool": "read_file", "args": "a.py", "ok": True, "ms": 12, "error": "", "agent": ""}
    ],
    "links": {"pr_url": "https://github.com/o/r/pull/13", "issue_urls": []},
    "error": "",
    "lesson_ids": ["L-1"],
    "exposures": [],
    "work_kind": None,
    "stale_lessons": [],
    "fault": "",
    "backoff_until": None,
    "problems": [],
    "tests": {
        "command": "python -m pytest -q",
        "source": "pyproject.toml",
        "setup": "",
        "backend": "bwrap",
        "isolated": True,
        "status": "passed",
        "summary": "4 passed (base: 3 passed)",
        "base": "exit 0: 3 passed (0.4 s)",
        "after": "exit 0: 4 passed (0.5 s)",
        "fail_to_pass": ["test_a.py::test_new"],
        "regressions": [],
        "failing": [],
        "tamper_flags": [],
        "inconsistent": [],
        "not_shown_fixed": [],
        "tampered": [],
        "guard_failing": [],
        "runs": 3,
        "per_process_limits": False,
        "oom_kills": 0,
    },
    "diff": "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
}


def test_record_json_shape_is_stable() -> None:
    assert json.loads(full_record().model_dump_json()) == EXPECTED_JSON


def test_minimal_record_fills_documented_defaults() -> None:
    record = RunRecord(
        run_id="r1",
        role=Role.REVIEWER,
        target=Target(kind=TargetKind.PR, number=3),
        outcome=Outcome.SKIPPED,
        started_at=T0,
        finished_at=T0,
    )
    dumped = json.loads(record.model_dump_json())
    assert dumped["schema_version"] == SCHEMA_VERSION
    assert dumped["attempts"] == []
    assert dumped["trace"] == []
    assert dumped["lesson_ids"] == []
    assert dumped["usage"] == {
        "tokens_in": 0,
        "tokens_out": 0,
        "llm_calls": 0,
        "cost_usd": 0.0,
        "tokens_cache_read": 0,
        "tokens_cache_write": 0,
    }
    assert dumped["target"] == {
        "kind": "pr",
        "number": 3,
        "title": "",
        "url": "",
        "created_at": None,
    }


def test_every_field_is_documented() -> None:
    models = [
        RunRecord,
        Target,
        Attempt,
        Usage,
        GitHubUsage,
        TraceStep,
        Links,
        Grade,
        Lesson,
        TestEvidence,
    ]
    undocumented = [
        f"{m.__name__}.{name}"
        for m in models
        for name in m.model_fields
        if not field_docs(m).get(name)
    ]
    assert undocumented == []


def test_trace_step_keeps_the_agreed_field_names() -> None:
    assert list(TraceStep.model_fields) == ["tool", "args", "ok", "ms", "error", "agent"]


def test_round_trip_and_derived_properties() -> None:
    record = full_record()
    again = RunRecord.model_validate_json(record.model_dump_json())
    assert again == record
    assert record.verified
    assert not record.first_try_verified
    assert record.duration_seconds == 240.0
    assert record.usage.tokens == 2000
    assert record.target.ref == "issue-12"
    assert Target(kind=TargetKind.REPO).ref == "repo"


def test_naive_datetimes_and_unsafe_run_ids_are_rejected() -> None:
    data = full_record().model_dump(mode="json")
    with pytest.raises(ValidationError):
        RunRecord.model_validate({**data, "started_at": "2026-03-01T12:00:00"})
    for bad in ("../x", "a/b", "", ".hidden", "x" * 200):
        with pytest.raises(ValidationError):
            RunRecord.model_validate({**data, "run_id": bad})


def test_other_time_zones_are_kept_exact() -> None:
    data = full_record().model_dump(mode="json")
    plus2 = timezone(timedelta(hours=2))
    record = RunRecord.model_validate({**data, "finished_at": "2026-03-01T14:04:00+02:00"})
    assert record.finished_at == datetime(2026, 3, 1, 14, 4, tzinfo=plus2)


def test_newer_minor_with_unknown_fields_is_read_by_this_reader() -> None:
    data = full_record().model_dump(mode="json")
    newer = {
        **data,
        "schema_version": "1.9",
        "sandbox": {"image": "x"},
        "usage": {**data["usage"], "cache_read_tokens": 77},
        "trace": [{**data["trace"][0], "span_id": "s1"}],
    }
    parsed = parse_record(json.dumps(newer))
    assert isinstance(parsed, ParsedRecord)
    assert parsed.record.schema_version == "1.9"
    assert parsed.record.usage.tokens_in == 1500
    assert "sandbox" not in parsed.record.model_dump()


@pytest.mark.parametrize("version", ["4.0", "10.1", "v2", "x"])
def test_unknown_major_is_classified_not_parsed(version: str) -> None:
    data = {**full_record().model_dump(mode="json"), "schema_version": version, "role": "triager"}
    assert parse_record(json.dumps(data)) == UnknownMajor(
        schema_version=version, run_id="b-20260301-abc"
    )


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"run_id": "r"}', "missing schema_version"),
        ('{"schema_version": "1.0", "run_id": "r"}', "role: Field required"),
    ],
)
def test_invalid_input_is_classified_never_raised(raw: str, reason: str) -> None:
    parsed = parse_record(raw)
    assert isinstance(parsed, InvalidRecord)
    assert reason in parsed.reason


def test_a_tampered_verdict_is_schema_3_and_older_records_still_read() -> None:
    """3.0 added `tampered` to the tests' status (a new enum member, so a new major: a
    2.x reader leaves these records for a newer one); every 1.x and 2.x record reads as
    before."""
    tampered = full_record().model_copy(
        update={
            "tests": TestEvidence(
                status="tampered",
                tampered=["src/calc.py: walks every live object (gc.get_objects) (line 3)"],
                guard_failing=["tests/test_calc.py::test_subtract"],
            )
        }
    )
    parsed = parse_record(tampered.model_dump_json())
    assert isinstance(parsed, ParsedRecord)
    assert parsed.record.schema_version == "3.0"
    assert parsed.record.tests is not None
    assert parsed.record.tests.status == "tampered"
    for version in ("1.4", "2.1"):
        older = {**EXPECTED_JSON, "schema_version": version}
        older["tests"] = {
            k: v
            for k, v in EXPECTED_JSON["tests"].items()
            if k not in ("not_shown_fixed", "tampered", "guard_failing")
        }
        parsed_older = parse_record(json.dumps(older))
        assert isinstance(parsed_older, ParsedRecord), version
        assert parsed_older.record.tests is not None
        assert parsed_older.record.tests.tampered == []


def test_new_enum_member_in_same_major_is_invalid_not_guessed() -> None:
    data = {
        **full_record().model_dump(mode="json"),
        "schema_version": "1.5",
        "outcome": "escalated",
    }
    parsed = parse_record(json.dumps(data))
    assert isinstance(parsed, InvalidRecord)
    assert parsed.run_id == "b-20260301-abc"


def test_grade_and_lessons_round_trip_and_filter() -> None:
    grade = Grade(
        target=Target(kind=TargetKind.PR, number=13),
        state=GradeState.MERGED,
        review_rounds=2,
        graded_at=T0,
    )
    assert Grade.model_validate_json(grade.model_dump_json()) == grade
    book = LessonBook(
        lessons=[
            Lesson(id="L-1", text="run tests", created_at=T0, updated_at=T0),
            Lesson(
                id="L-2", text="small diffs", roles=[Role.REVIEWER], created_at=T0, updated_at=T0
            ),
        ]
    )
    assert [x.id for x in book.for_role(Role.BUILDER)] == ["L-1"]
    assert [x.id for x in book.for_role(Role.REVIEWER)] == ["L-1", "L-2"]


def test_loading_records_parses_no_source() -> None:
    # The docstrings are read only by `field_docs`: pydantic must not copy them at import
    # (`use_attribute_docstrings` reads every model's source file, on every tick).
    assert RunRecord.model_fields["run_id"].description is None
    assert field_docs(RunRecord)["run_id"]


@pytest.mark.parametrize("outcome", ["interrupted", "preflight_failed"])
def test_schema_2_outcomes_are_read_and_every_1_x_record_still_is(outcome: str) -> None:
    new = {**full_record().model_dump(mode="json"), "outcome": outcome}
    parsed = parse_record(json.dumps(new))
    assert isinstance(parsed, ParsedRecord)
    assert parsed.record.outcome.value == outcome
    assert parsed.record.schema_version == SCHEMA_VERSION
    assert int(SCHEMA_VERSION.split(".")[0]) >= 2
    old = {**full_record().model_dump(mode="json"), "schema_version": "1.4"}
    parsed_old = parse_record(json.dumps(old))
    assert isinstance(parsed_old, ParsedRecord)
    assert parsed_old.record.schema_version == "1.4"
