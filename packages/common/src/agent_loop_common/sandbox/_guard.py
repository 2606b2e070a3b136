"""The pytest guard, from the sandbox's side: put it in the run, read what it found.

A pytest command gets `-p $SANDBOX_PYTEST_GUARD` (`with_pytest_guard`, like the JUnit
report's `--junitxml=$SANDBOX_JUNIT`). For each run the sandbox then:

1. copies `_pytest_guard.py` into the workspace's `guard/` folder under a fresh random
   module name (`_agent_loop_guard_<hex>`), with its settings next to it (the files the
   change touched, whose code is never trusted), both read-only;
2. fills the placeholder with that name and shows the folder to the command read-only
   (bubblewrap `/sandbox/guard`, docker a read-only mount) on `PYTHONPATH`, so pytest
   imports the guard before any entry-point plugin, `conftest.py` or test module. A
   random name per run means nothing in the tree can be named to shadow it, and nothing
   written before the run (a staged `addopts = -p no:<name>`) can name it to disable it;
3. reads the guard's JSON report back from the report folder, as hostile input (no
   symbolic link, a regular file, at most 1 MB), and turns it into `GuardFinding`s,
   adding what only the outside can see: pytest ran but the guard never reported (it
   was kept from loading) or never finished (it was unregistered, the run was cut
   short), the guard saw tests fail that the exit status or the reported results do
   not, or pytest's session ended with another status than the process.

The findings are evidence about the run, not proof of intent: the code under test runs
in the same process as the guard and could forge its report too, which is what the
scan of the change (`_machinery`) and a maintainer's CI are for.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from agent_loop_common.sandbox._result import GuardFinding, RunResult

__all__ = [
    "GUARD_DIR",
    "GUARD_PLACEHOLDER",
    "GuardReading",
    "guard_findings",
    "has_guard_placeholder",
    "install_guard",
    "read_guard_report",
    "read_guard_reports",
    "without_guard",
]

GUARD_PLACEHOLDER = "$SANDBOX_PYTEST_GUARD"
"""Replaced by the run's guard module name (the argument after `-p`)."""
GUARD_DIR = "/sandbox/guard"
"""Where the guard's folder is shown to the command (bubblewrap, docker)."""
GUARD_PREFIX = "_agent_loop_guard_"
MAX_GUARD_REPORT_BYTES = 1024 * 1024
MAX_WORKER_REPORTS = 64
"""pytest-xdist workers whose reports are read (each writes `<name>.worker-<id>.json`)."""
_SOURCE = Path(__file__).with_name("_pytest_guard.py")


def has_guard_placeholder(argv: Iterable[str]) -> bool:
    """Whether a command asks for the pytest guard."""
    return GUARD_PLACEHOLDER in argv


def without_guard(argv: Iterable[str]) -> tuple[str, ...]:
    """`argv` with `-p $SANDBOX_PYTEST_GUARD` taken out (a backend that cannot show the
    guard to the command runs it without)."""
    out: list[str] = []
    for arg in argv:
        if arg == GUARD_PLACEHOLDER:
            if out and out[-1] == "-p":
                out.pop()
            continue
        out.append(arg)
    return tuple(out)


def install_guard(folder: Path, changed: Iterable[str]) -> str:
    """Write the guard under a fresh name into `folder` (created, read-only for others);
    returns the module name.

    Args:
        folder: The workspace's guard folder (outside the repository's copy).
        changed: Repository paths the change touched: code in them is never trusted by
            the guard, test files included.
    """
    name = GUARD_PREFIX + secrets.token_hex(8)
    # Readable by the sandbox's user (another uid when this process is root), writable by
    # nobody but this process: the change cannot replace the guard.
    folder.mkdir(mode=0o755, exist_ok=True)
    os.chmod(folder, 0o755)  # noqa: S103
    module = folder / f"{name}.py"
    shutil.copyfile(_SOURCE, module)
    settings = folder / f"{name}.json"
    settings.write_text(json.dumps({"changed": sorted(set(changed))}), encoding="utf-8")
    for path in (module, settings):
        os.chmod(path, 0o444)
    return name


@dataclass(frozen=True)
class GuardReading:
    """The guard's report as read back, or why it could not be used."""

    found: bool
    """A report exists (the guard was loaded)."""
    problem: str = ""
    """Why the report cannot be used (a link, not a regular file, too large, not JSON)."""
    finished: bool = False
    """The guard's final check ran (the end of the session)."""
    findings: tuple[GuardFinding, ...] = ()
    """What the guard found inside the run."""
    failed: int = 0
    """Failed reports the guard saw pytest make (and nobody it trusts change)."""
    failing: tuple[str, ...] = ()
    """Their test ids (capped)."""
    exitstatus: int | None = None
    """The session's exit status as pytest set it, when the guard saw it."""
    errors: tuple[str, ...] = ()
    """The guard's own errors (it never stops the run for them)."""


def read_guard_report(path: Path) -> GuardReading:
    """Read the guard's report as hostile input: no symbolic link, a regular file of at
    most 1 MB, JSON of the expected shape (anything else is a `problem`). Blocking."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return GuardReading(found=False)
    except OSError as exc:
        kind = "a symbolic link" if path.is_symlink() else f"unreadable ({exc.strerror})"
        return GuardReading(found=True, problem=f"the guard's report is {kind}")
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return GuardReading(found=True, problem="the guard's report is not a regular file")
        if info.st_size > MAX_GUARD_REPORT_BYTES:
            return GuardReading(found=True, problem="the guard's report is larger than 1 MB")
        raw = handle.read(MAX_GUARD_REPORT_BYTES + 1)
    try:
        data: object = json.loads(raw)
    except ValueError:
        return GuardReading(found=True, problem="the guard's report is not JSON")
    if not isinstance(data, dict):
        return GuardReading(found=True, problem="the guard's report is not a JSON object")
    return _reading(cast("dict[str, Any]", data))


def read_guard_reports(out: Path, name: str) -> GuardReading:
    """The main process's report and those of its pytest-xdist workers, as one reading.

    Workers import the code under test and make the reports, so what they saw counts:
    their findings are added, a worker that never finished is a finding of its own, and
    the failures are the most that any one side saw (the main process sees the workers'
    reports again). Blocking.
    """
    main = read_guard_report(out / f"{name}.json")
    workers = sorted(out.glob(f"{name}.worker-*.json"))[:MAX_WORKER_REPORTS]
    if not main.found or main.problem or not workers:
        return main
    findings = list(main.findings)
    failing = list(main.failing)
    worker_failed = 0
    for path in workers:
        worker = read_guard_report(path)
        label = path.name.removeprefix(f"{name}.").removesuffix(".json")
        if worker.problem:
            findings.append(GuardFinding(kind="report", detail=f"{label}: {worker.problem}"))
            continue
        if not worker.finished:
            findings.append(
                GuardFinding(
                    kind="unfinished",
                    detail=f"the pytest guard's final check never ran in {label}",
                    subject=label,
                )
            )
        findings += worker.findings
        failing += [n for n in worker.failing if n not in failing]
        worker_failed += worker.failed
    return GuardReading(
        found=True,
        finished=main.finished,
        findings=tuple({f.key: f for f in findings}.values()),
        failed=max(main.failed, worker_failed),
        failing=tuple(failing[:200]),
        exitstatus=main.exitstatus,
        errors=main.errors,
    )


def _text(value: object, limit: int = 300) -> str:
    return str(value)[:limit] if isinstance(value, str | int) else ""


def _reading(data: dict[str, Any]) -> GuardReading:
    findings: list[GuardFinding] = []
    raw = data.get("findings")
    for item in cast("list[object]", raw)[:50] if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        entry = cast("dict[str, object]", item)
        detail = _text(entry.get("detail"))
        if detail:
            findings.append(
                GuardFinding(
                    kind=_text(entry.get("kind"), 40) or "unknown",
                    detail=detail,
                    where=_text(entry.get("where")),
                    subject=_text(entry.get("subject")),
                )
            )
    failing_raw = data.get("failing")
    failing = tuple(
        _text(n)
        for n in (cast("list[object]", failing_raw) if isinstance(failing_raw, list) else [])
    )[:200]
    failed = data.get("failed")
    status = data.get("exitstatus")
    errors_raw = data.get("errors")
    errors = tuple(
        _text(e) for e in (cast("list[object]", errors_raw) if isinstance(errors_raw, list) else [])
    )[:10]
    return GuardReading(
        found=True,
        finished=data.get("state") == "finished",
        findings=tuple(findings),
        failed=failed if isinstance(failed, int) and failed >= 0 else 0,
        failing=tuple(n for n in failing if n),
        exitstatus=status if isinstance(status, int) else None,
        errors=errors,
    )


def guard_findings(result: RunResult, reading: GuardReading) -> tuple[GuardFinding, ...]:
    """Everything the guard's report (or its absence) says about a finished run.

    Args:
        result: The run, its printed counts and JUnit report already read.
        reading: `read_guard_report` of the run's report.
    """
    if not result.ran or result.timed_out or result.limit is not None:
        return ()
    pytest_ran = result.exit_code == 0 or result.tests is not None
    if not reading.found:
        if not pytest_ran:
            return ()
        return (
            GuardFinding(
                kind="absent",
                detail="pytest ran but the pytest guard never reported: it was kept from "
                "loading (or its report was removed)",
            ),
        )
    if reading.problem:
        return (GuardFinding(kind="report", detail=reading.problem),)
    found = list(reading.findings)
    if not reading.finished:
        if result.exit_code == 0:
            found.append(
                GuardFinding(
                    kind="unfinished",
                    detail="pytest exited 0 but the pytest guard's final check never ran "
                    "(the guard was unregistered, or the session was cut short)",
                )
            )
        return tuple(found)
    found += [
        GuardFinding(kind="guard_error", detail=f"the pytest guard failed: {error}", subject=error)
        for error in reading.errors
    ]
    reported = result.tests.failing_count if result.tests is not None else None
    if reading.failed and result.exit_code == 0:
        found.append(
            GuardFinding(
                kind="exit_status",
                detail=f"saw {reading.failed} failed report(s) made by pytest, but the "
                "command exited 0",
                subject="exit",
            )
        )
    if reading.failed and reported == 0:
        found.append(
            GuardFinding(
                kind="results",
                detail=f"saw {reading.failed} failed report(s) made by pytest, but the "
                "reported results show none failing",
                subject="results",
            )
        )
    if reading.exitstatus is not None and reading.exitstatus != result.exit_code:
        found.append(
            GuardFinding(
                kind="exit_status",
                detail=f"pytest's session ended with status {reading.exitstatus} but the "
                f"process exited {result.exit_code}",
                subject="session",
            )
        )
    return tuple(found)
