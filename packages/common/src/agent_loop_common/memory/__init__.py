"""Shared memory over `flyte.ai.agents.MemoryStore`: layout, owners, typed helpers.

What a builder or reviewer run does (I/O flat in total history):

```python
location = MemoryLocation(org="local", project="agent-loop", domain="development", root=dir)
context = await read_context(location)            # digest + lessons, read-only handle
...
await write_run_record(location, record)          # O(1): appends one file
# or, when the run claimed nothing:
await count_idle_run(location, Role.BUILDER)
```

The distiller uses `DistillerMemory` (collect unseen records, commit in a safe order).
See `docs/memory.md` for every key, its single writer, and why.
"""

from typing import TYPE_CHECKING

from agent_loop_common._lazy import lazy_exports

if TYPE_CHECKING:
    from agent_loop_common.memory._context import (
        ContextView,
        may_share,
        open_context_read_only,
        read_context,
        read_context_from,
        write_general_lessons,
    )
    from agent_loop_common.memory._distiller import DistillerMemory, IngestBatch
    from agent_loop_common.memory._docs import QUARANTINE_PREFIX
    from agent_loop_common.memory._errors import (
        AgentMemoryError,
        LocationError,
        NewerSchemaError,
        StoredSchemaError,
    )
    from agent_loop_common.memory._homes import (
        ReviewedMark,
        grade_month,
        mark_reviewed,
        read_etag_state,
        read_grades,
        read_reviewed,
        read_turns,
        write_etag_state,
        write_grades,
        write_idle_proof,
        write_turns,
    )
    from agent_loop_common.memory._idle import IdleCount
    from agent_loop_common.memory._layout import (
        AGENT_READ_ONLY_PREFIXES,
        DEFAULT_PREFIX,
        DIGEST_PATH,
        EFFECTS_PATH,
        ETAG_PATH,
        IDLE_PATH,
        IDLE_PROOF_PATH,
        LEDGER_PATH,
        LESSONS_PATH,
        REVIEWED_PATH,
        RUNS_DIR,
        TURNS_PATH,
        Keys,
        bucket_of,
        bucket_start,
        buckets_between,
        general_path,
        grade_path,
        lesson_file_name,
        month_of,
        repo_prefix,
        rollup_path,
        run_path,
    )
    from agent_loop_common.memory._ledger import (
        DeferredRecord,
        IngestLedger,
        IngestPolicy,
        ScanPlan,
        plan_scan,
    )
    from agent_loop_common.memory._lessons_archive import (
        archive_lessons,
        edit_as_operator,
        find_lesson,
        read_operator_edits,
        read_retired,
        record_operator_edit,
    )
    from agent_loop_common.memory._local import LocalKey
    from agent_loop_common.memory._location import (
        IoMeter,
        MemoryLocation,
        append_store,
        open_store,
        save_store,
    )
    from agent_loop_common.memory._problems import collecting_problems, report_problem
    from agent_loop_common.memory._rollups import fold_into_rollups, read_rollups
    from agent_loop_common.memory._runs import (
        RecordRef,
        count_idle_run,
        count_paused_run,
        read_idle_count,
        write_run_record,
    )

__all__ = [
    "AGENT_READ_ONLY_PREFIXES",
    "DEFAULT_PREFIX",
    "DIGEST_PATH",
    "EFFECTS_PATH",
    "ETAG_PATH",
    "IDLE_PATH",
    "IDLE_PROOF_PATH",
    "LEDGER_PATH",
    "LESSONS_PATH",
    "QUARANTINE_PREFIX",
    "REVIEWED_PATH",
    "RUNS_DIR",
    "TURNS_PATH",
    "AgentMemoryError",
    "ContextView",
    "DeferredRecord",
    "DistillerMemory",
    "IdleCount",
    "IngestBatch",
    "IngestLedger",
    "IngestPolicy",
    "IoMeter",
    "Keys",
    "LocalKey",
    "LocationError",
    "MemoryLocation",
    "NewerSchemaError",
    "RecordRef",
    "ReviewedMark",
    "ScanPlan",
    "StoredSchemaError",
    "append_store",
    "archive_lessons",
    "bucket_of",
    "bucket_start",
    "buckets_between",
    "collecting_problems",
    "count_idle_run",
    "count_paused_run",
    "edit_as_operator",
    "find_lesson",
    "fold_into_rollups",
    "general_path",
    "grade_month",
    "grade_path",
    "lesson_file_name",
    "mark_reviewed",
    "may_share",
    "month_of",
    "open_context_read_only",
    "open_store",
    "plan_scan",
    "read_context",
    "read_context_from",
    "read_etag_state",
    "read_grades",
    "read_idle_count",
    "read_operator_edits",
    "read_retired",
    "read_reviewed",
    "read_rollups",
    "read_turns",
    "record_operator_edit",
    "repo_prefix",
    "report_problem",
    "rollup_path",
    "run_path",
    "save_store",
    "write_etag_state",
    "write_general_lessons",
    "write_grades",
    "write_idle_proof",
    "write_run_record",
    "write_turns",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
