"""Finding the Flyte reports of local runs.

In local mode `flyte.report` writes `report.html` into the action's metadata folder,
`/tmp/flyte/metadata/<run>/<action>/` (the SDK's fixed local metadata root; the run
context does not take another one). `run_task` returns the task's output, not its run,
so the reports of a tick are found by what appeared under that root while it ran.
Another process running Flyte at the same moment could add reports too; the tick's own
are still among those found.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["LOCAL_METADATA_ROOT", "ReportFinder"]

LOCAL_METADATA_ROOT = Path("/tmp/flyte/metadata")  # noqa: S108 (the Flyte SDK's fixed local path)
"""Where Flyte's local mode keeps run metadata (and with it the reports)."""


class ReportFinder:
    """Collects the `report.html` files written while each watched block runs."""

    def __init__(self, root: Path = LOCAL_METADATA_ROOT) -> None:
        self.root = root

    def _reports_since(self, since: float) -> set[Path]:
        if not self.root.is_dir():
            return set()
        out: set[Path] = set()
        for run in self.root.iterdir():
            try:
                if run.stat().st_mtime < since:
                    continue
            except OSError:
                continue
            out.update(run.glob("*/report.html"))
        return out

    @contextmanager
    def watch(self) -> Generator[list[Path]]:
        """Yield a list that, when the block ends, holds the reports it wrote (oldest first)."""
        since = time.time() - 1.0
        before = self._reports_since(since)
        found: list[Path] = []
        try:
            yield found
        finally:
            new = self._reports_since(since) - before
            found.extend(sorted(new, key=lambda p: p.stat().st_mtime))
