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
        self.found: dict[str, list[Path]] = {}
        """Label (the agent) -> its reports, in the order they were written."""

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
    def watch(self, label: str) -> Generator[None]:
        """Attribute the reports that appear during the block to `label`."""
        since = time.time() - 1.0
        before = self._reports_since(since)
        try:
            yield
        finally:
            new = self._reports_since(since) - before
            ordered = sorted(new, key=lambda p: p.stat().st_mtime)
            self.found.setdefault(label, []).extend(ordered)

    def all(self) -> list[Path]:
        """Every report found, label by label."""
        return [path for paths in self.found.values() for path in paths]
