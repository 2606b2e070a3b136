"""`RunResult`: what one sandboxed command did, as typed data.

A result is small by construction (a bounded head and tail of the output, a capped list
of test names), so it can be logged, recorded in a run record, shown to a model as
feedback and compared with a baseline without ever holding a test suite's megabytes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "CountUnit",
    "CountsSource",
    "GuardFinding",
    "LimitName",
    "OutputExcerpt",
    "RunResult",
    "TestCounts",
    "TestOutcome",
]

LimitName = Literal["time", "cpu", "memory", "processes", "file_size"]
"""A limit a command ran into. `time` is certain (the sandbox killed it); the others are
inferred from the exit signal or the command's own error output."""

CountsSource = Literal["pytest", "unittest", "jest", "vitest", "node", "go", "cargo", "junit"]
"""Where test counts come from: a runner's printed summary, or a JUnit XML report."""

CountUnit = Literal["tests", "packages"]
"""What was counted: tests, or (`go test` without `-v`) packages."""

TestOutcome = Literal["passed", "failed", "error", "skipped"]
"""One test's outcome (xfail counts as skipped, xpass as passed, as JUnit reports them)."""


class OutputExcerpt(BaseModel):
    """The beginning and the end of a command's combined stdout and stderr."""

    model_config = ConfigDict(frozen=True)

    head: str = ""
    """The first bytes of the output (decoded as UTF-8, invalid bytes replaced)."""
    tail: str = ""
    """The last bytes, when the output was longer than the head; empty otherwise."""
    total_bytes: int = 0
    """Bytes the command wrote in total."""
    omitted_bytes: int = 0
    """Bytes between head and tail that were not kept."""

    @property
    def text(self) -> str:
        """Head and tail joined, with a marker where bytes were left out."""
        if not self.tail:
            return self.head
        gap = f"\n[... {self.omitted_bytes} bytes omitted ...]\n" if self.omitted_bytes else ""
        return self.head + gap + self.tail

    def last(self, chars: int) -> str:
        """The last `chars` characters of what was kept (for feedback to a model)."""
        return self.text[-chars:]


class TestCounts(BaseModel):
    """Test counts and names as the test runner reported them."""

    __test__ = False  # not a pytest test class
    model_config = ConfigDict(frozen=True)

    passed: int = 0
    """Tests that passed (xpassed ones included when the source is JUnit)."""
    failed: int = 0
    """Tests that failed."""
    errors: int = 0
    """Tests (or modules) that errored in setup, teardown or collection."""
    skipped: int = 0
    """Tests skipped (xfailed ones included when the source is JUnit)."""
    xfailed: int = 0
    """Expected failures (pytest summary only)."""
    xpassed: int = 0
    """Unexpected passes (pytest summary only)."""
    subtests_passed: int = 0
    """Subtests that passed (pytest 9's `744 subtests passed`; not in the other counts)."""
    subtests_failed: int = 0
    """Subtests that failed (pytest 9's summary counts them in `failed` too)."""
    failing: tuple[str, ...] = ()
    """Names of failed and errored tests, as the runner prints them (capped)."""
    outcomes: dict[str, TestOutcome] | None = None
    """Every test's outcome by name, when a JUnit report gave them (capped); `None` when
    only a summary line was available."""
    source: CountsSource = "pytest"
    """Where the counts come from: a runner's final summary line, or a JUnit XML report."""
    unit: CountUnit = "tests"
    """What was counted (`packages` only for `go test` without `-v`)."""

    @property
    def total(self) -> int:
        """All tests counted."""
        return self.passed + self.failed + self.errors + self.skipped + self.xfailed + self.xpassed

    @property
    def executed(self) -> int:
        """Tests that actually ran to an outcome (errors and skips are not a run test)."""
        return self.passed + self.failed + self.xfailed + self.xpassed + self.subtests_passed

    @property
    def failing_count(self) -> int:
        """Failures and errors."""
        return self.failed + self.errors

    def summary(self) -> str:
        """pytest-style counts, failures first: `3 failed, 12 passed, 1 skipped`."""
        parts = [
            (self.failed, "failed"),
            (self.passed, "passed"),
            (self.skipped, "skipped"),
            (self.xfailed, "xfailed"),
            (self.xpassed, "xpassed"),
            (self.errors, "error" if self.errors == 1 else "errors"),
            (self.subtests_passed, "subtests passed"),
            (self.subtests_failed, "subtests failed"),
        ]
        shown = [f"{count} {label}" for count, label in parts if count]
        if not shown:
            return "no tests ran"
        return ", ".join(shown) + (" (packages)" if self.unit == "packages" else "")


class GuardFinding(BaseModel):
    """Something the pytest guard (or the check of its report) found in one run.

    The guard is loaded first in a sandboxed pytest run (`_guard`) and watches for code
    that steers the run's evidence from inside: a plugin registered or a hook added by a
    module that is neither a test file nor a declared plugin, a report, a session counter
    or the terminal's tally changed from such a module, pytest's own functions replaced.
    """

    model_config = ConfigDict(frozen=True)

    kind: str
    """What was found (`plugin_registered`, `report_changed`, `absent`, ...)."""
    detail: str
    """One line for people, naming the file and line when known."""
    where: str = ""
    """The file (relative to the repository when inside it) the guard traced it to."""
    subject: str = ""
    """What it was done to (a plugin, a hook, a test, a counter)."""

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes two runs' findings the same (line numbers left out), so a finding
        the base commit's run has too is not held against the change."""
        return (self.kind, self.where.rsplit(":", 1)[0], self.subject)


class RunResult(BaseModel):
    """What one command did in a sandbox."""

    model_config = ConfigDict(frozen=True)

    backend: str
    """The sandbox that ran it (`bwrap`, `docker`, `flyte`, `plain-subprocess (not
    isolated)`), or `off` when nothing ran."""
    argv: tuple[str, ...]
    """The command as run (after the `$SANDBOX_JUNIT` placeholder was filled in)."""
    exit_code: int | None
    """The exit status; `128 + N` when killed by signal `N`; `None` when nothing ran."""
    signal: int | None = None
    """The signal that ended the command, when it can be told from the exit status."""
    duration_seconds: float = 0.0
    """Wall time of the command, sandbox start-up included."""
    timed_out: bool = False
    """The command was killed at its wall-time limit."""
    limit: LimitName | None = None
    """The limit the command ran into, if any (see `LimitName`)."""
    oom_kills: int = 0
    """Processes the kernel's OOM killer killed in the sandbox's control group, read after
    every run (`memory.events`). A worker can be killed while the command exits 0: a run
    with kills hit the `memory` limit and is not `ok`."""
    per_process_limits: bool = False
    """No control group bounded this run as a whole: its memory and process limits held
    per process only (`RLIMIT_AS` x processes); `notes` says the real bound. Only where
    `AGENT_LOOP_SANDBOX_REQUIRE_CGROUP` is off."""
    network: bool = False
    """Whether the command could reach the network (setup commands only)."""
    output: OutputExcerpt = OutputExcerpt()
    """Head and tail of the combined stdout and stderr."""
    tests: TestCounts | None = None
    """Test counts, when the runner reported them (its JUnit report when usable, else
    its printed summary)."""
    printed: TestCounts | None = None
    """The counts of the runner's printed summary alone (compared with the report)."""
    printed_failing_max: int = 0
    """The most failures any one printed summary line reported (a later forged "passed"
    line cannot hide an earlier "1 failed")."""
    junit_problem: str = ""
    """Why a JUnit report that exists was not used (too large, not XML, a symlink)."""
    junit_forged: bool = False
    """The report was something no test runner writes (a symbolic link, a FIFO)."""
    disagreements: tuple[str, ...] = ()
    """Ways the exit status, printed summary and JUnit report contradict each other
    (`evidence_disagreements`); the verdict believes none of them when there are any."""
    error: str = ""
    """Why the command did not run or could not start (a missing program, sandbox off)."""
    notes: tuple[str, ...] = ()
    """Things a person should know about this run (a refused read-only bind, ...)."""
    setup: RunResult | None = None
    """The setup command's result, when one ran first on the same copy of the tree."""
    guarded: bool = False
    """The pytest guard was loaded first in this run (a pytest command, a backend that
    can make the guard available; see `_guard`)."""
    guard_findings: tuple[GuardFinding, ...] = ()
    """What the pytest guard found: ways the change's code steered the run from inside,
    or the guard's own absence when pytest ran. The verdict is `tampered` on any the
    base commit's run does not have too."""
    guard_failing: tuple[str, ...] = ()
    """The tests the guard saw fail when pytest made their reports (capped), whatever
    the reports said later."""

    @property
    def ran(self) -> bool:
        """Whether a command actually started (False when the sandbox is off)."""
        return self.exit_code is not None

    @property
    def ok(self) -> bool:
        """Exit status 0 within the limits (no timeout, no process killed for memory)."""
        return self.exit_code == 0 and not self.timed_out and self.oom_kills == 0

    def guard_findings_not_in(self, base: RunResult | None) -> tuple[GuardFinding, ...]:
        """What the pytest guard found in this run that `base`'s run did not (the same
        `GuardFinding.key`): a finding the base commit's run has too is not the change's."""
        if base is None or not base.ran:
            return self.guard_findings
        on_base = {f.key for f in base.guard_findings}
        return tuple(f for f in self.guard_findings if f.key not in on_base)

    def summary(self) -> str:
        """One line: outcome, counts and time, e.g. `exit 1: 1 failed, 3 passed (0.4 s)`."""
        if not self.ran:
            return f"not run: {self.error}" if self.error else "not run"
        if self.timed_out:
            head = f"timed out after {self.duration_seconds:.0f} s"
        else:
            head = f"exit {self.exit_code}"
            if self.oom_kills:
                head += (
                    f" (memory limit: {self.oom_kills} process(es) killed by the kernel for memory)"
                )
            elif self.limit is not None:
                head += f" ({self.limit} limit)"
        counts = f": {self.tests.summary()}" if self.tests is not None else ""
        return f"{head}{counts} ({self.duration_seconds:.1f} s)"
