"""The tests' verdict on a change: the run on the changed tree against the base's.

Hard rules, no judgement (a model may still argue with the verdict; it cannot change
it):

- the change **fails** when a test that passed on the base fails after it (a
  regression), when a test that did not fail on the base fails after it, when the run
  timed out or hit a limit, when the command exits non-zero where the base did not
  (or with another non-zero status: a collection error after plain test failures), when
  more tests fail than on the base (when names are unknown), or when the setup command
  failed;
- a test that failed on the base and passes after it, or that the change added (absent
  on the base) and passes, is **fail-to-pass evidence**; a test that failed on the base
  and is **absent** from the change's results (deselected, deleted, renamed, not
  collected) is **not shown fixed**, never evidence. Results are compared both ways:
  tests that passed on the base and are gone are listed too (`disappeared`);
- the **pytest guard** found that code in the run steered its evidence from inside (a
  plugin registered from product code, a report flipped, a counter changed, the guard
  itself missing: `RunResult.guard_findings`), and the base's run did not find the same:
  the change is **tampered**, never `passed` (a hard-rule failure still fails it). The
  caller adds what the scan of the change found (`scan_test_machinery`);
- the run's own evidence disagrees with itself (exit status, printed summary and JUnit
  report contradict each other, `evidence_disagreements`): the change **fails** with an
  "inconsistent evidence" reason, unless the base's run disagrees too (then there is
  no verdict, below);
- **no evidence**, neither passed nor failed: no hard rule failed but the run proves
  nothing about the change: no test ran to an outcome (zero collected, only collection
  or runner errors), the command failed with the very exit status it had on the base
  and printed no counts (`exit 1 (base: exit 1)`: a runner, plugin or environment
  error, `/bin/false`), or the evidence disagrees with itself on the base as well. The
  pull request then opens as a draft saying why;
- nothing ran (the sandbox is off): the verdict says so and is neither.

Per-test comparisons need names: JUnit reports give every test with its outcome; from
pytest's printed output only the failing ones are known, and fail-to-pass evidence is
then limited to base failures that are gone from a passing run that ran at least as
many passing tests more (else they are not shown fixed).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from agent_loop_common.sandbox._reports import name_key
from agent_loop_common.sandbox._result import RunResult, TestCounts

__all__ = ["TestVerdict", "VerdictStatus", "compare"]

VerdictStatus = Literal["passed", "failed", "tampered", "no_evidence", "not_run"]
"""`passed`: no hard rule failed and the tests say something about the change.
`failed`: at least one hard rule failed. `tampered`: the change's code reaches into the
test runner, so what the tests reported cannot be trusted (see `TestVerdict.tampered`).
`no_evidence`: the tests ran but prove nothing (see `TestVerdict.no_verdict`).
`not_run`: nothing ran."""

_FEEDBACK_TAIL = 4000
_SHOWN = 10


class TestVerdict(BaseModel):
    """The comparison of a change's test run with the base's."""

    __test__ = False  # not a pytest test class
    model_config = ConfigDict(frozen=True)

    status: VerdictStatus
    """The outcome by the hard rules."""
    summary: str
    """One line for people, e.g. `12 passed (base: 11 passed)`."""
    reasons: tuple[str, ...] = ()
    """Why the change failed, one hard rule per line."""
    no_verdict: str = ""
    """Why the tests give no verdict on the change (`no_evidence` only)."""
    inconsistent: tuple[str, ...] = ()
    """How the change's run contradicts itself (exit status, summary, JUnit report)."""
    regressions: tuple[str, ...] = ()
    """Tests that passed on the base and fail after the change."""
    new_failures: tuple[str, ...] = ()
    """Tests failing after the change that did not fail (or did not exist) on the base."""
    fail_to_pass: tuple[str, ...] = ()
    """Tests that failed on (or were absent from) the base and pass after the change."""
    still_failing: tuple[str, ...] = ()
    """Tests that failed on the base and still fail (not the change's fault)."""
    disappeared: tuple[str, ...] = ()
    """Tests that passed on the base and are gone after the change (JUnit only)."""
    not_shown_fixed: tuple[str, ...] = ()
    """Tests that failed on the base and are absent from the change's results
    (deselected, deleted, renamed, not collected): nothing shows them fixed."""
    tampered: tuple[str, ...] = ()
    """What the pytest guard found in the change's run that the base's run did not
    have: code that steered the evidence from inside the runner."""
    guard_failing: tuple[str, ...] = ()
    """The tests the pytest guard saw fail in the change's run, when pytest made their
    reports (shown when the verdict is `tampered`: the reported outcomes are not)."""
    notes: tuple[str, ...] = ()
    """Things a reader should know (the guard found the same on the base commit, ...)."""
    failing: tuple[str, ...] = ()
    """Every test failing after the change."""
    output_tail: str = ""
    """The end of the changed tree's output, for feedback."""

    @property
    def passed(self) -> bool:
        """Whether the change passed the hard rules."""
        return self.status == "passed"

    @property
    def judged(self) -> bool:
        """Whether the tests decided anything (`passed` or `failed`)."""
        return self.status in ("passed", "failed")

    def feedback(self) -> str:
        """What to tell the model that wrote the change."""
        lines = [f"Tests: {self.summary}"]
        lines += [f"- {reason}" for reason in self.reasons]
        if self.tampered:
            lines.append("The pytest guard found code steering the test run from inside:")
            lines += [f"- {finding}" for finding in self.tampered]
        if self.not_shown_fixed:
            lines.append(
                "Failed on the base and absent from your run (not shown fixed): "
                + ", ".join(self.not_shown_fixed[:20])
            )
        if self.failing:
            lines.append("Failing tests: " + ", ".join(self.failing[:20]))
        if self.output_tail and self.status == "failed":
            lines += ["End of the test output:", self.output_tail]
        return "\n".join(lines)

    def evidence(self) -> list[str]:
        """Markdown bullet lines for a pull request body."""
        lines = [f"- Tests: {self.summary}"]
        if self.fail_to_pass:
            lines.append(f"- Fail-to-pass: {_names(self.fail_to_pass)}")
        if self.regressions:
            lines.append(f"- Regressions: {_names(self.regressions)}")
        if self.new_failures:
            lines.append(f"- New failures: {_names(self.new_failures)}")
        if self.still_failing:
            lines.append(f"- Already failing on the base: {_names(self.still_failing)}")
        if self.disappeared:
            lines.append(f"- No longer run: {_names(self.disappeared)}")
        if self.not_shown_fixed:
            lines.append(
                "- Not shown fixed (failed on the base, skipped or absent after the change): "
                + _names(self.not_shown_fixed)
            )
        lines += [f"- Tampered: {finding}" for finding in self.tampered]
        return lines


def _names(names: tuple[str, ...]) -> str:
    shown = ", ".join(f"`{n}`" for n in names[:_SHOWN])
    more = len(names) - _SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _counts(result: RunResult | None) -> str:
    if result is None:
        return "no baseline"
    if not result.ran:
        return "not run"
    if result.timed_out:
        return "timed out"
    if result.tests is not None:
        return result.tests.summary()
    return f"exit {result.exit_code}"


def _by_key(names: tuple[str, ...] | list[str]) -> dict[str, str]:
    return {name_key(n): n for n in names}


def _outcome_sets(tests: TestCounts | None) -> tuple[dict[str, str], dict[str, str] | None]:
    """(failing key -> name, passing key -> name or None when unknown)."""
    if tests is None:
        return {}, None
    if tests.outcomes is not None:
        failing = {name_key(n): n for n, o in tests.outcomes.items() if o in ("failed", "error")}
        passing = {name_key(n): n for n, o in tests.outcomes.items() if o == "passed"}
        return failing, passing
    return _by_key(tests.failing), None


def _all_keys(tests: TestCounts | None) -> set[str] | None:
    if tests is None or tests.outcomes is None:
        return None
    return {name_key(n) for n in tests.outcomes}


def _no_evidence(base: RunResult | None, after: RunResult) -> str:
    """Why a run that broke no hard rule still proves nothing about the change, or `""`."""
    if after.tests is not None and after.tests.executed == 0:
        errors = after.tests.errors
        what = f"only {errors} error(s) (collection or setup)" if errors else "none"
        return f"no test ran to an outcome on the change: {what}"
    if (
        after.tests is None
        and after.exit_code != 0
        and base is not None
        and base.exit_code == after.exit_code
        and base.tests is None
    ):
        return (
            f"the command failed the same way on the base commit (exit {after.exit_code}) "
            "and printed no test counts: a runner, plugin or environment error says "
            "nothing about the change"
        )
    return ""


def compare(base: RunResult | None, after: RunResult) -> TestVerdict:
    """The verdict on a change: `after` (the changed tree) against `base` (its base commit).

    Args:
        base: The same command on the base commit, or `None` when there is no baseline
            (then any non-zero exit fails the change).
        after: The command on the changed tree.
    """
    summary = f"{_counts(after)} (base: {_counts(base)})"
    if not after.ran:
        if after.setup is not None and not after.setup.ok:
            return TestVerdict(
                status="failed",
                summary=f"setup failed: {after.setup.summary()}",
                reasons=(f"the setup command failed: {after.setup.summary()}",),
                output_tail=after.setup.output.last(_FEEDBACK_TAIL),
            )
        return TestVerdict(status="not_run", summary=f"no tests ran: {after.error or 'not run'}")
    usable_base = base if base is not None and base.ran and not base.timed_out else None
    after_fail, after_pass = _outcome_sets(after.tests)
    base_fail, base_pass = _outcome_sets(usable_base.tests if usable_base else None)
    base_all = _all_keys(usable_base.tests if usable_base else None)

    regressions = sorted(after_fail[k] for k in after_fail if base_pass and k in base_pass)
    new_failures = sorted(
        after_fail[k]
        for k in after_fail
        if k not in base_fail and not (base_pass and k in base_pass)
    )
    still_failing = sorted(after_fail[k] for k in after_fail if k in base_fail)
    fail_to_pass: list[str] = []
    not_shown_fixed: list[str] = []
    after_all = _all_keys(after.tests)
    if after_pass is not None:
        for key, name in after_pass.items():
            if key in base_fail or (base_all is not None and key not in base_all):
                fail_to_pass.append(name)
        if after_all is not None:
            # Neither passing nor failing now: deselected, deleted, renamed, not collected,
            # or skipped (a skip marker, `importorskip`, `raise SkipTest`, an xfail).
            not_shown_fixed = [
                name
                for key, name in base_fail.items()
                if key not in after_pass and key not in after_fail
            ]
    else:
        gone = [name for key, name in base_fail.items() if key not in after_fail]
        if _printed_fixed(usable_base, after, len(gone)):
            fail_to_pass = gone
        else:
            not_shown_fixed = gone
    disappeared: list[str] = []
    if base_pass is not None and after_all is not None:
        disappeared = sorted(name for key, name in base_pass.items() if key not in after_all)

    reasons: list[str] = []
    if after.timed_out:
        reasons.append(f"the tests timed out after {after.duration_seconds:.0f} s")
    elif after.limit is not None:
        reasons.append(f"the tests hit the {after.limit} limit")
    if regressions:
        reasons.append(f"{len(regressions)} test(s) passed on the base and fail now")
    if new_failures and usable_base is not None and usable_base.tests is not None:
        reasons.append(f"{len(new_failures)} test(s) fail that did not fail on the base")
    base_code = usable_base.exit_code if usable_base else None
    if after.exit_code != 0 and not after.timed_out and after.exit_code != base_code:
        base_text = "no baseline" if usable_base is None else f"base: exit {base_code}"
        reasons.append(f"the command exited {after.exit_code} ({base_text})")
    if (
        usable_base is not None
        and after.tests is not None
        and usable_base.tests is not None
        and not regressions
        and not new_failures
    ):
        failing_now = after.tests.failed + after.tests.errors
        failing_before = usable_base.tests.failed + usable_base.tests.errors
        if failing_now > failing_before:
            reasons.append(f"{failing_now} tests fail, {failing_before} on the base")
    if (
        usable_base is not None
        and usable_base.tests is not None
        and usable_base.tests.executed > 0
        and after.tests is not None
        and after.tests.executed == 0
    ):
        reasons.append(f"no test ran on the change; {usable_base.tests.executed} ran on the base")
    no_verdict = ""
    if after.disagreements:
        if usable_base is not None and usable_base.disagreements:
            no_verdict = (
                "the test command's own evidence disagrees with itself on the base commit "
                f"too ({usable_base.disagreements[0]})"
            )
        else:
            reasons += [f"inconsistent evidence: {d}" for d in after.disagreements]
    if not reasons and not no_verdict:
        no_verdict = _no_evidence(usable_base, after)
    tampered, notes = _guard_findings(base, after)
    failing = tuple(after.tests.failing) if after.tests is not None else ()
    status: VerdictStatus = (
        "failed"
        if reasons
        else "tampered"
        if tampered
        else "no_evidence"
        if no_verdict
        else "passed"
    )
    return TestVerdict(
        status=status,
        summary=summary,
        reasons=tuple(reasons),
        no_verdict=no_verdict if status == "no_evidence" else "",
        inconsistent=after.disagreements,
        regressions=tuple(regressions),
        new_failures=tuple(new_failures),
        # What a run the change's code steered reported passing is not evidence.
        fail_to_pass=() if tampered else tuple(sorted(fail_to_pass)),
        still_failing=tuple(still_failing),
        disappeared=tuple(disappeared),
        not_shown_fixed=tuple(sorted(not_shown_fixed)),
        tampered=tampered,
        guard_failing=after.guard_failing if tampered else (),
        notes=notes,
        failing=failing,
        output_tail=after.output.last(_FEEDBACK_TAIL),
    )


def _printed_fixed(base: RunResult | None, after: RunResult, gone: int) -> bool:
    """From printed counts only: whether base failures no longer failing were run and
    passed (a passing run with at least that many more passing tests), rather than
    dropped from the run."""
    if not gone or after.exit_code != 0 or after.tests is None:
        return False
    if base is None or base.tests is None:
        return False
    return after.tests.passed >= base.tests.passed + gone


def _guard_findings(
    base: RunResult | None, after: RunResult
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(what the guard found in the change's run and not in the base's, notes)."""
    fresh = after.guard_findings_not_in(base)
    new = tuple(f.detail for f in fresh)
    same = [f.detail for f in after.guard_findings if f not in fresh]
    notes = (
        (
            "the pytest guard found the same on the base commit, so it is not held against "
            f"the change: {same[0]}" + (f" (and {len(same) - 1} more)" if len(same) > 1 else ""),
        )
        if same
        else ()
    )
    return new, notes
