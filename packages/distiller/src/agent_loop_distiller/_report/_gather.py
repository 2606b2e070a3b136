"""The report's data, gathered at the end of a tick that did work (rendering is pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent_loop_common.memory import (
    DIGEST_PATH,
    LEDGER_PATH,
    LESSONS_PATH,
    grade_month,
    grade_path,
    read_rollups,
)
from agent_loop_common.runtime import RunScope, Runtime
from agent_loop_distiller._report import MemoryFile, ReportData
from agent_loop_distiller._state import DistillerOptions, TickResult, Work

__all__ = ["gather_report"]


async def gather_report(
    runtime: Runtime,
    scope: RunScope,
    opts: DistillerOptions,
    out: TickResult,
    work: Work,
    now: datetime,
    *,
    committed: bool,
) -> None:
    """Gather the report's data (the rendering is pure and happens in the task).

    After a failed distillation nothing was committed: the report shows memory as it
    is (the stored lessons, digest and ledger), not the tick's uncommitted edits.
    """
    if not opts.with_report:
        return
    async with scope.stage("report"):
        today = now.astimezone(UTC).date()
        rollups = await read_rollups(
            runtime.memory, today - timedelta(days=opts.report_days - 1), today
        )
        own = scope.record()
        keys = runtime.memory.keys
        book = work.book if committed else work.context.lessons
        digest = (work.digest or work.context.digest) if committed else work.context.digest
        files = [
            MemoryFile(keys.context, DIGEST_PATH, digest),
            MemoryFile(keys.context, LESSONS_PATH, book.model_dump_json(indent=2)),
            MemoryFile(keys.ledger, LEDGER_PATH, work.memory.ledger.model_dump_json(indent=2)),
        ]
        files += [
            MemoryFile(
                keys.grades(grade_month(g)), grade_path(g.target), g.model_dump_json(indent=2)
            )
            for g in out.grades_changed
        ]
        ingested = sorted(work.batch.records, key=lambda r: r.finished_at, reverse=True)
        out.report = ReportData(
            generated_at=now,
            repo=runtime.settings.repo,
            book=book,
            rollups=rollups,
            grades=work.grading.current,
            runs=[own, *ingested],
            edits=out.edits,
            expired=out.expired,
            memory=files,
            note=out.note,
            effects=work.effects,
        )
