"""Each local tick's report where the user looks: `<AGENT_LOOP_HOME>/reports/`.

In local mode `flyte.report` writes `report.html` into the run's metadata folder,
`/tmp/flyte/metadata/<run>/<action>/` (the SDK's fixed local path), which nothing ever
cleaned and nobody was told about. After each local tick the report is copied to
`<AGENT_LOOP_HOME>/reports/<role>-<run id>.html` (`<role>-idle-<UTC time>.html` for an
idle tick), Flyte's metadata folder of that run is removed, and only the newest
`AGENT_LOOP_KEEP_REPORTS` reports are kept. A task run once (`run_task`: `eval run`)
has its metadata folder removed too: its caller writes what a user needs itself. On a
cluster the report stays in the Flyte UI.
"""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

from agent_loop_common.runtime._summary import TickSummary
from agent_loop_common.settings import Settings

__all__ = [
    "LOCAL_METADATA_ROOT",
    "keep_report",
    "prune_reports",
    "remove_run_metadata",
    "report_name",
    "reports_folder",
]

LOCAL_METADATA_ROOT = Path("/tmp/flyte/metadata")  # noqa: S108 (the Flyte SDK's fixed local path)
"""Where Flyte's local mode keeps each run's metadata (and with it the reports)."""

_OURS = re.compile(r"^(builder|reviewer|distiller)-[A-Za-z0-9_-]+\.html$")
"""Names this module writes: pruning never touches any other file in the folder."""


def reports_folder(settings: Settings) -> Path:
    """`<AGENT_LOOP_HOME>/reports`, where local ticks' reports are kept."""
    return settings.home.resolve() / "reports"


def report_name(summary: TickSummary, now: datetime | None = None) -> str:
    """`builder-<run id>.html`, or `builder-idle-<UTC time>.html` for an idle tick."""
    if summary.run_id:
        return f"{summary.role.value}-{summary.run_id}.html"
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return f"{summary.role.value}-idle-{stamp}.html"


def keep_report(
    settings: Settings, summary: TickSummary, run_dir: Path, *, now: datetime | None = None
) -> Path | None:
    """Copy the tick's report out of Flyte's metadata folder `run_dir`, then clean up.

    Args:
        settings: Supply the home and how many reports to keep.
        summary: The tick's summary (its role and run id name the file).
        run_dir: The local run's metadata folder (`run.url`); removed afterwards when it
            lies under `LOCAL_METADATA_ROOT`.
        now: The time naming an idle tick's report.

    Returns:
        The kept report's path, or `None` when the run wrote none.
    """
    found = sorted(run_dir.glob("*/report.html"), key=lambda p: p.stat().st_mtime)
    kept: Path | None = None
    if found:
        folder = reports_folder(settings)
        folder.mkdir(parents=True, exist_ok=True)
        kept = folder / report_name(summary, now)
        shutil.copyfile(found[0], kept)
        prune_reports(folder, keep=settings.keep_reports)
    remove_run_metadata(run_dir)
    return kept


def remove_run_metadata(run_dir: Path) -> None:
    """Remove a local run's metadata folder (`run.url`) once its output is read, when it
    lies under `LOCAL_METADATA_ROOT` (never anything else): nothing else cleans it, and
    what a user needs was kept elsewhere (a tick's report, `eval run`'s files)."""
    if run_dir.resolve().parent == LOCAL_METADATA_ROOT.resolve():
        shutil.rmtree(run_dir, ignore_errors=True)


def prune_reports(folder: Path, *, keep: int) -> list[Path]:
    """Delete all but the newest `keep` reports in `folder`; returns what was deleted."""
    reports = [p for p in folder.iterdir() if p.is_file() and _OURS.match(p.name)]
    reports.sort(key=lambda p: (p.stat().st_mtime, p.name), reverse=True)
    old = reports[keep:]
    for path in old:
        path.unlink(missing_ok=True)
    return old
