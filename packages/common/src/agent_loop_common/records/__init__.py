"""Run records and friends: pure, versioned pydantic models (no I/O).

`RunRecord` is written once per run that claimed something; `Grade` and `LessonBook`
are written by the distiller. Every model ignores unknown fields; `parse_record`
classifies stored bytes so a record of an unknown major version is counted and kept,
never silently dropped.
"""

from typing import TYPE_CHECKING

from agent_loop_common._lazy import lazy_exports

if TYPE_CHECKING:
    from agent_loop_common.records._exposure import LessonExposure, WorkKind
    from agent_loop_common.records._grade import CheckResult, CloseReason, Grade, GradeState
    from agent_loop_common.records._lesson_edits import apply_operator_edits, with_event
    from agent_loop_common.records._lessons import (
        MAX_LESSON_EVENTS,
        Citation,
        CitationKind,
        CitationStatus,
        DiagnosisAction,
        Lesson,
        LessonAuthor,
        LessonBook,
        LessonDiagnosis,
        LessonEvent,
        LessonReplay,
        LessonState,
        OperatorEdit,
        OutcomeMetric,
        ReplayArm,
        ReplayPair,
        RetiredLesson,
        StaleLesson,
        Visibility,
    )
    from agent_loop_common.records._parts import (
        Attempt,
        GitHubUsage,
        Links,
        Outcome,
        Role,
        Target,
        TargetKind,
        TestEvidence,
        TraceStep,
        Usage,
    )
    from agent_loop_common.records._run_record import DIFF_CHARS, SCHEMA_VERSION, RunId, RunRecord
    from agent_loop_common.records._versioning import (
        KNOWN_MAJORS,
        RECORD_MAJORS,
        InvalidRecord,
        ParsedRecord,
        RecordParse,
        UnknownMajor,
        major_of,
        parse_record,
    )

__all__ = [
    "DIFF_CHARS",
    "KNOWN_MAJORS",
    "MAX_LESSON_EVENTS",
    "RECORD_MAJORS",
    "SCHEMA_VERSION",
    "Attempt",
    "CheckResult",
    "Citation",
    "CitationKind",
    "CitationStatus",
    "CloseReason",
    "DiagnosisAction",
    "GitHubUsage",
    "Grade",
    "GradeState",
    "InvalidRecord",
    "Lesson",
    "LessonAuthor",
    "LessonBook",
    "LessonDiagnosis",
    "LessonEvent",
    "LessonExposure",
    "LessonReplay",
    "LessonState",
    "Links",
    "OperatorEdit",
    "Outcome",
    "OutcomeMetric",
    "ParsedRecord",
    "RecordParse",
    "ReplayArm",
    "ReplayPair",
    "RetiredLesson",
    "Role",
    "RunId",
    "RunRecord",
    "StaleLesson",
    "Target",
    "TargetKind",
    "TestEvidence",
    "TraceStep",
    "UnknownMajor",
    "Usage",
    "Visibility",
    "WorkKind",
    "apply_operator_edits",
    "major_of",
    "parse_record",
    "with_event",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
