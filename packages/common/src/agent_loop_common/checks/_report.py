"""`CheckReport`: what the tests said about one try's change, in every form it is shown.

One report per checked try, rendered for each reader from the same facts: the agent's
feedback when the hard rules reject the try, the verifier's evidence block when they do
not, the `## Tests` section of a pull request body or a fix summary, the try's line on
the record and the run's `TestEvidence`. Everything here is pure.

Test names and output come from the code under test, so they are data: fenced for a
model, sanitized (`public_text`) for GitHub.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_loop_common.agents import fence_untrusted
from agent_loop_common.records import TestEvidence
from agent_loop_common.sandbox import (
    PLAIN_BACKEND,
    RunResult,
    TamperFlag,
    TestCommand,
    TestVerdict,
    VerdictStatus,
    without_guard,
)
from agent_loop_common.texts import public_text

__all__ = ["CheckReport"]

_SHOWN_NAMES = 10
_FEEDBACK_CHARS = 6_000
TAMPERED_HEAD = (
    "the change's code reaches into the test runner, so what the tests reported cannot be trusted"
)


def _code(text: str, limit: int = 200) -> str:
    """`text` safe to post inside a Markdown code span."""
    return public_text(text, limit=limit).replace("`", "'")


def _names(names: tuple[str, ...] | list[str], limit: int = _SHOWN_NAMES) -> str:
    shown = ", ".join(f"`{_code(n)}`" for n in names[:limit])
    more = len(names) - limit
    return shown + (f" and {more} more" if more > 0 else "")


@dataclass(frozen=True)
class CheckReport:
    """The tests' verdict on one try's change, with what it rests on."""

    command: TestCommand | None
    """The test command and where it came from; `None` when none was found."""
    setup: tuple[str, ...] | None
    """The setup command run before the tests, if any."""
    backend: str
    """The sandbox's name (`bwrap`, `plain-subprocess (not isolated)`, `off`, ...)."""
    isolated: bool
    """Whether the sandbox isolates the tests from the agent's machine."""
    verdict: TestVerdict | None = None
    """The hard rules' verdict; `None` when nothing ran (see `note`)."""
    flags: tuple[TamperFlag, ...] = ()
    """Ways the change weakens the tests."""
    setup_label: str = ""
    """What the setup is, in words, when the sandbox chose it (the default Python one)."""
    base: RunResult | None = None
    """The run on the base commit."""
    after: RunResult | None = None
    """The run on the changed tree."""
    note: str = ""
    """Why no tests ran (the sandbox is off, no test command was found)."""

    def _runs(self) -> list[RunResult]:
        """The base and change runs, with the setup run of each."""
        runs = [r for r in (self.base, self.after) if r is not None]
        return runs + [r.setup for r in runs if r.setup is not None]

    @property
    def per_process_limits(self) -> str:
        """The note saying no control group bounded a run as a whole (`""` when one did)."""
        for run in self._runs():
            if run.per_process_limits:
                return next(
                    (n for n in run.notes if n.startswith("limits per process:")),
                    "limits per process: no control group bounded this sandbox as a whole",
                )
        return ""

    @property
    def oom_kills(self) -> int:
        """Processes the kernel killed for memory in the change's run (its setup included)."""
        run = self.after
        if run is None:
            return 0
        return run.oom_kills + (run.setup.oom_kills if run.setup is not None else 0)

    @property
    def tampered(self) -> tuple[str, ...]:
        """Why the tests' results cannot be trusted: what the scan of the change found
        (`path: shape`) and what the pytest guard found in the run. Empty when nothing."""
        scanned = tuple(f"{f.path}: {f.detail}" for f in self.flags if f.kind == "test_machinery")
        found = self.verdict.tampered if self.verdict is not None else ()
        return scanned + tuple(f"pytest guard: {finding}" for finding in found)

    @property
    def status(self) -> VerdictStatus:
        """`passed`, `failed`, `tampered` (the change's code reaches into the test runner),
        `no_evidence` (ran, proves nothing), or `not_run`. A hard-rule failure stays
        `failed`; anything else with a finding is `tampered`, never `passed`."""
        status = self._run_status
        if status != "failed" and self.tampered:
            return "tampered"
        return status

    @property
    def _run_status(self) -> VerdictStatus:
        """What the runs alone say, before the scan of the change is counted."""
        if self.verdict is not None:
            return self.verdict.status
        return "no_evidence" if self.base is not None else "not_run"

    @property
    def judged(self) -> bool:
        """Whether the tests decided on the change (`passed` or `failed`); when not, the
        pull request opens as a draft saying why (`why_no_verdict`)."""
        return self.status in ("passed", "failed")

    @property
    def why_no_verdict(self) -> str:
        """Why the tests give no verdict (`""` when they give one)."""
        if self.judged:
            return ""
        if self.status == "tampered":
            return f"{TAMPERED_HEAD} ({'; '.join(self.tampered[:3])})"
        if self.verdict is not None and self.verdict.no_verdict:
            return self.verdict.no_verdict
        return self.note or "nothing ran"

    @property
    def rejects(self) -> bool:
        """Whether a hard rule rejects the change (the model verifier is not asked)."""
        return self.status == "failed"

    @property
    def ran(self) -> bool:
        """Whether the tests ran on the change."""
        return self._run_status != "not_run"

    @property
    def summary(self) -> str:
        """One line, e.g. `12 passed (base: 11 passed)`, or why no tests ran."""
        if self.verdict is not None and self.verdict.status != "not_run":
            return self.verdict.summary
        if self.base is not None and self.note:
            return f"{self.note} (base: {self.base.summary()})"
        return self.note or (self.verdict.summary if self.verdict else "no tests ran")

    @property
    def line(self) -> str:
        """The try's line on the record: `failed: 1 failed, 2 passed (base: 3 passed)`."""
        return f"{self.status}: {self.summary}"

    def _command_text(self) -> str:
        """The command as configured: the guard's `-p $SANDBOX_PYTEST_GUARD` is the
        sandbox's own (said on its own line), not part of what a person would run."""
        if self.command is None:
            return ""
        return " ".join(without_guard(self.command.argv))

    def _guard_line(self) -> list[str]:
        if self.after is None or not self.after.guarded:
            return []
        return [
            "- Guard: pytest loaded the sandbox's guard first; it found no code steering "
            "the run from inside"
        ]

    def feedback(self) -> str:
        """What the agent is told when the tests reject its try (the verifier's notes)."""
        lines = [
            "Not accepted: the repository's tests, run by the pipeline on your exact staged "
            "change, fail the hard rules (checked by code; the verifier was not asked).",
            f"Command: {self._command_text()} (from {self.command.source if self.command else '?'})",
        ]
        if self.verdict is not None:
            lines.append(self.verdict.feedback())
        lines += self._flag_lines()
        lines += self.tamper_notes()
        lines.append(
            "Fix the code (or the tests you added) so that no test that passed on the base "
            "fails, then submit again. You can run the tests yourself with run_tests first."
        )
        text = "\n".join(lines)
        return text if len(text) <= _FEEDBACK_CHARS else text[: _FEEDBACK_CHARS - 1] + "…"

    def tamper_notes(self) -> list[str]:
        """Lines for the agent when its change reaches into the test runner (after the
        verifier's notes, when it rejects a `tampered` try)."""
        if not self.tampered:
            return []
        return [
            "The pipeline found that your change reaches into the test runner, so its test "
            "results cannot be trusted and the pull request can only open as a draft. "
            "Unless the task itself is about test tooling, remove this code:",
            *[f"- {line}" for line in self.tampered[:20]],
        ]

    def _hook_lines(self) -> list[str]:
        hooks = [f for f in self.flags if f.kind == "evidence_hook"]
        return [f"Flag: {f.path}: {f.detail}" for f in hooks]

    def _flag_lines(self) -> list[str]:
        flags = [f for f in self.flags if f.kind != "test_machinery"]
        if not flags:
            return []
        return ["Test tampering flags (shown to the verifier and in the pull request):"] + [
            f"- {f.path}: {f.detail}" for f in flags
        ]

    def for_verifier(self) -> str:
        """The evidence section of the verifier's prompt."""
        head = "## Checked by the pipeline (by code, before you)"
        if self.status == "tampered":
            return self._tampered_for_verifier(head)
        if not self.ran:
            return "\n".join(
                [
                    head,
                    f"No tests ran: {self.note or 'nothing ran'}. Judge the change on reading "
                    "alone, and be stricter for it: nothing has executed this code.",
                    *self._hook_lines(),
                ]
            )
        if not self.judged:
            return "\n".join(
                [
                    head,
                    f"The tests ran ({self._command_text()}) but give NO verdict on this change: "
                    f"{self.why_no_verdict}. Result: {self.summary}. Judge the change on "
                    "reading alone, and be stricter for it: nothing shows this code works.",
                    *self._hook_lines(),
                ]
            )
        facts = [
            f"Test command: {self._command_text()} (from {self.command.source if self.command else '?'}), "
            f"run in the {self.backend} sandbox on the base commit and on the exact proposed tree.",
            f"Result: {self.summary}. The hard rules passed: no test that passed on the base "
            "fails, no new non-zero exit, no timeout.",
        ]
        data: list[str] = []
        verdict = self.verdict
        if verdict is not None:
            groups = (
                ("Fail-to-pass (failed or absent on the base, pass now)", verdict.fail_to_pass),
                ("Already failing on the base, still failing", verdict.still_failing),
                ("Passed on the base, no longer run", verdict.disappeared),
                (
                    "Failed on the base and skipped or absent in the change's run: NOT shown fixed "
                    "(deselected, deleted, renamed, not collected or skipped)",
                    verdict.not_shown_fixed,
                ),
            )
            data += [f"{label}: {', '.join(names[:30])}" for label, names in groups if names]
        data += [f"Tampering flag: {f.path}: {f.detail}" for f in self.flags]
        parts = [head, *facts]
        if data:
            parts.append(fence_untrusted("test names and flags", "\n".join(data), 6_000))
        parts.append(
            "Passing tests are not proof of a correct change: check that the tests really "
            "cover what was asked, and treat any tampering flag as a reason to look closely."
        )
        return "\n".join(parts)

    def _tampered_for_verifier(self, head: str) -> str:
        ran = (
            f"The tests ran ({self._command_text()}; reported: {self.summary})"
            if self.ran
            else f"No tests ran ({self.note or 'nothing ran'})"
        )
        data = [*self.tampered]
        verdict = self.verdict
        if verdict is not None and verdict.guard_failing:
            data.append(
                "Tests the pytest guard saw fail when pytest made their reports: "
                + ", ".join(verdict.guard_failing[:30])
            )
        if verdict is not None and verdict.not_shown_fixed:
            data.append(
                "Failed on the base and skipped or absent in the change's run (NOT shown fixed): "
                + ", ".join(verdict.not_shown_fixed[:30])
            )
        data += [
            f"Tampering flag: {f.path}: {f.detail}"
            for f in self.flags
            if f.kind != "test_machinery"
        ]
        return "\n".join(
            [
                head,
                f"TAMPERED: {ran}, but its results CANNOT be trusted: the change's code "
                "reaches into the test runner (found by reading the change and by the guard "
                "pytest loads first). Nothing shows this change works.",
                fence_untrusted("what was found", "\n".join(data), 6_000),
                "Judge the change on reading alone, and be strict: code that reaches into "
                "the test runner to change what it reports must be rejected. Accept only "
                "when the task itself is about test tooling and this code is what it asks "
                "for; the pull request then opens as a draft that says why.",
            ]
        )

    def markdown(self) -> str:
        """The `## Tests` section of a pull request body or a fix summary."""
        lines = ["## Tests"]
        if self.status == "tampered":
            return self._tampered_markdown()
        if not self.ran:
            lines.append(f"**No tests ran**: {public_text(self.note or 'nothing ran', limit=500)}.")
            lines.append("Verification was model-only; run the tests before merging.")
            lines += self._flag_markdown()
            return "\n".join(lines)
        if not self.judged:
            lines.append(
                "**No verdict**: the tests ran but prove nothing about this change: "
                f"{public_text(self.why_no_verdict, limit=500)}."
            )
        lines.append(self._command_markdown())
        if self.setup:
            lines.append(f"- Setup: {public_text(self.setup_text(), limit=300)}")
        lines.append(f"- Result: {public_text(self.summary, limit=300)}")
        lines += self._limits_markdown()
        if not self.judged:
            lines.append("Verification was model-only; run the tests before merging.")
            lines += self._flag_markdown()
            return "\n".join(lines)
        lines += self._guard_line()
        verdict = self.verdict
        if verdict is not None:
            if verdict.fail_to_pass:
                lines.append(f"- Fail-to-pass: {_names(verdict.fail_to_pass)}")
            if verdict.still_failing:
                lines.append(f"- Already failing on the base: {_names(verdict.still_failing)}")
            if verdict.disappeared:
                lines.append(f"- No longer run: {_names(verdict.disappeared)}")
            lines += self._not_shown_fixed_markdown()
            lines += [f"- Note: {public_text(n, limit=300)}" for n in verdict.notes]
        lines += self._flag_markdown()
        return "\n".join(lines)

    def _tampered_markdown(self) -> str:
        lines = [
            "## Tests",
            f"**Tampered**: {TAMPERED_HEAD}. What was found:",
            *[f"- {public_text(line, limit=300)}" for line in self.tampered[:20]],
        ]
        if self.ran:
            lines.append(self._command_markdown())
            lines.append(
                f"- Reported: {public_text(self.summary, limit=300)} (not evidence: the "
                "change's code ran in the reporting process)"
            )
            lines += self._limits_markdown()
        verdict = self.verdict
        if verdict is not None and verdict.guard_failing:
            lines.append(
                "- The pytest guard saw these tests fail when pytest made their reports: "
                + _names(verdict.guard_failing)
            )
        lines += self._not_shown_fixed_markdown()
        lines.append(
            "The evidence is the repository's own tests run on the change, reported by a "
            "process the change's code also runs in: run the tests in your CI before merging."
        )
        lines += self._flag_markdown()
        return "\n".join(lines)

    def _command_markdown(self) -> str:
        """`- Command: ...`: the command as configured, where it came from, the sandbox."""
        source = self.command.source if self.command else "?"
        label = "" if self.isolated else " (not isolated)"
        backend = self.backend.removesuffix(" (not isolated)")
        command = _code(self._command_text(), 300)
        return f"- Command: `{command}` (from {source}), in the `{backend}` sandbox{label}"

    def _limits_markdown(self) -> list[str]:
        if not self.per_process_limits:
            return []
        return [f"- Limits: {public_text(self.per_process_limits, limit=400)}"]

    def _not_shown_fixed_markdown(self) -> list[str]:
        names = self.verdict.not_shown_fixed if self.verdict is not None else ()
        if not names:
            return []
        return [
            "- ⚠️ Not shown fixed (failed on the base, skipped or absent after the change): "
            + _names(names)
        ]

    def _flag_markdown(self) -> list[str]:
        lines: list[str] = []
        hooks = [f for f in self.flags if f.kind == "evidence_hook"]
        weakening = [f for f in self.flags if f.kind not in ("evidence_hook", "test_machinery")]
        for flags, title in (
            (weakening, "- ⚠️ The change weakens the tests; look closely:"),
            (hooks, "- ⚠️ The change touches how test results are reported; look closely:"),
        ):
            if flags:
                lines.append(title)
                lines += [
                    f"  - `{_code(f.path)}`: {public_text(f.detail, limit=200)}" for f in flags
                ]
        return lines

    def setup_text(self) -> str:
        """The setup command as shown to people."""
        if self.setup_label:
            return self.setup_label
        return f"`{_code(' '.join(self.setup or ()), 300)}`"

    def evidence(self, *, runs: int) -> TestEvidence:
        """The run record's `tests` field."""
        verdict = self.verdict
        return TestEvidence(
            command=self._command_text(),
            source=self.command.source if self.command else "",
            setup=self.setup_label or " ".join(self.setup or ()),
            backend=self.backend,
            isolated=self.isolated and self.backend != PLAIN_BACKEND and self.ran,
            status=self.status,
            summary=self.summary,
            base=self.base.summary() if self.base is not None else "",
            after=self.after.summary() if self.after is not None else "",
            # What a run the change's code reaches into reported passing is not evidence.
            fail_to_pass=list(verdict.fail_to_pass) if verdict and not self.tampered else [],
            regressions=list(verdict.regressions) if verdict else [],
            failing=list(verdict.failing) if verdict else [],
            tamper_flags=[f"{f.path}: {f.detail}" for f in self.flags],
            inconsistent=list(verdict.inconsistent) if verdict else [],
            not_shown_fixed=list(verdict.not_shown_fixed) if verdict else [],
            tampered=list(self.tampered),
            guard_failing=list(verdict.guard_failing) if verdict else [],
            runs=runs,
            per_process_limits=bool(self.per_process_limits),
            oom_kills=self.oom_kills,
        )
