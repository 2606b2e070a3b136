"""The verdict on a change by hard rules, the tampering flags, and the baseline cache."""

from __future__ import annotations

import asyncio

import pytest

from agent_loop_common.sandbox import (
    BaselineCache,
    OutputExcerpt,
    RunResult,
    TestCounts,
    TestOutcome,
    baseline_key,
    compare,
    flag_test_tampering,
)


def _result(
    exit_code: int | None = 0,
    *,
    tests: TestCounts | None = None,
    timed_out: bool = False,
    tail: str = "",
    setup: RunResult | None = None,
    error: str = "",
) -> RunResult:
    return RunResult(
        backend="bwrap",
        argv=("pytest",),
        exit_code=exit_code,
        timed_out=timed_out,
        limit="time" if timed_out else None,
        duration_seconds=3.0,
        tests=tests,
        output=OutputExcerpt(head=tail, total_bytes=len(tail)),
        setup=setup,
        error=error,
    )


def _junit(**outcomes: TestOutcome) -> TestCounts:
    names = {f"tests.test_a::{k}": v for k, v in outcomes.items()}
    values = list(names.values())
    return TestCounts(
        passed=values.count("passed"),
        failed=values.count("failed"),
        errors=values.count("error"),
        skipped=values.count("skipped"),
        failing=tuple(n for n, o in names.items() if o in ("failed", "error")),
        outcomes=names,
        source="junit",
    )


def test_all_green_against_a_green_base() -> None:
    base = _result(tests=TestCounts(passed=11))
    after = _result(tests=TestCounts(passed=12))
    verdict = compare(base, after)
    assert verdict.passed
    assert verdict.status == "passed"
    assert verdict.summary == "12 passed (base: 11 passed)"
    assert verdict.reasons == ()


def test_a_test_that_passed_on_the_base_and_fails_now_is_a_regression() -> None:
    base = _result(tests=_junit(test_x="passed", test_y="passed"))
    after = _result(1, tests=_junit(test_x="passed", test_y="failed"), tail="AssertionError")
    verdict = compare(base, after)
    assert verdict.status == "failed"
    assert verdict.regressions == ("tests.test_a::test_y",)
    assert verdict.failing == ("tests.test_a::test_y",)
    assert any("passed on the base and fail now" in r for r in verdict.reasons)
    assert any("exited 1 (base: exit 0)" in r for r in verdict.reasons)
    assert "AssertionError" in verdict.feedback()
    assert "- Regressions: `tests.test_a::test_y`" in verdict.evidence()


def test_pytest_names_and_junit_names_are_compared_as_one() -> None:
    base = _result(tests=_junit(test_y="passed"))
    after = _result(
        1,
        tests=TestCounts(failed=1, failing=("tests/test_a.py::test_y",), source="pytest"),
    )
    assert compare(base, after).regressions == ("tests/test_a.py::test_y",)


def test_fail_to_pass_evidence_from_junit() -> None:
    base = _result(1, tests=_junit(test_old="passed", test_bug="failed"))
    after = _result(tests=_junit(test_old="passed", test_bug="passed", test_new="passed"))
    verdict = compare(base, after)
    assert verdict.passed
    assert verdict.fail_to_pass == ("tests.test_a::test_bug", "tests.test_a::test_new")
    assert verdict.summary == "3 passed (base: 1 failed, 1 passed)"
    assert "- Fail-to-pass: `tests.test_a::test_bug`, `tests.test_a::test_new`" in (
        verdict.evidence()
    )


def test_fail_to_pass_from_printed_names_when_the_run_passes() -> None:
    base = _result(1, tests=TestCounts(failed=1, passed=3, failing=("t.py::test_bug",)))
    after = _result(0, tests=TestCounts(passed=5))
    verdict = compare(base, after)
    assert verdict.passed
    assert verdict.fail_to_pass == ("t.py::test_bug",)


def test_a_base_failure_absent_after_the_change_is_not_shown_fixed() -> None:
    """Compared both ways: a base failure gone from the change's results (deselected by
    a staged `.pytest.ini`, deleted, renamed) is never silent and never evidence."""
    base = _result(1, tests=_junit(test_ok="passed", test_bug="failed"))
    after = _result(0, tests=_junit(test_ok="passed"))
    verdict = compare(base, after)
    assert verdict.status == "passed"
    assert verdict.fail_to_pass == ()
    assert verdict.not_shown_fixed == ("tests.test_a::test_bug",)
    assert (
        "- Not shown fixed (failed on the base, skipped or absent after the change): `tests.test_a::test_bug`"
    ) in verdict.evidence()
    assert "not shown fixed" in verdict.feedback()
    # printed counts only: gone from a run with no more passing tests is not shown fixed
    printed_base = _result(1, tests=TestCounts(failed=1, passed=3, failing=("t.py::test_bug",)))
    printed_after = _result(0, tests=TestCounts(passed=3))
    printed = compare(printed_base, printed_after)
    assert printed.fail_to_pass == ()
    assert printed.not_shown_fixed == ("t.py::test_bug",)


def test_a_base_failure_skipped_after_the_change_is_not_shown_fixed() -> None:
    """Re-audit of issue 30, item 3: a base failure the change skips (a skip marker is
    flagged, but `importorskip`, `raise SkipTest` or a skip from a fixture are not) is
    as unproven as one deselected."""
    base = _result(1, tests=_junit(test_ok="passed", test_bug="failed"))
    after = _result(0, tests=_junit(test_ok="passed", test_bug="skipped"))
    verdict = compare(base, after)
    assert verdict.fail_to_pass == ()
    assert verdict.still_failing == ()
    assert verdict.not_shown_fixed == ("tests.test_a::test_bug",)


def test_a_new_test_that_fails_fails_the_change() -> None:
    base = _result(tests=_junit(test_old="passed"))
    after = _result(1, tests=_junit(test_old="passed", test_new="failed"))
    verdict = compare(base, after)
    assert verdict.status == "failed"
    assert verdict.new_failures == ("tests.test_a::test_new",)
    assert verdict.regressions == ()


def test_tests_failing_on_the_base_too_are_not_the_changes_fault() -> None:
    base = _result(1, tests=_junit(test_ok="passed", test_broken="failed"))
    after = _result(1, tests=_junit(test_ok="passed", test_broken="failed", test_new="passed"))
    verdict = compare(base, after)
    assert verdict.passed
    assert verdict.still_failing == ("tests.test_a::test_broken",)
    assert verdict.fail_to_pass == ("tests.test_a::test_new",)
    assert "- Already failing on the base: `tests.test_a::test_broken`" in verdict.evidence()


def test_a_timeout_fails_the_change() -> None:
    verdict = compare(_result(tests=TestCounts(passed=3)), _result(137, timed_out=True))
    assert verdict.status == "failed"
    assert verdict.reasons == ("the tests timed out after 3 s",)
    assert verdict.summary == "timed out (base: 3 passed)"


def test_a_new_non_zero_exit_fails_and_the_same_one_does_not() -> None:
    assert compare(_result(0), _result(2)).reasons == ("the command exited 2 (base: exit 0)",)
    assert compare(_result(1), _result(2)).status == "failed"  # a collection error now
    # the same failure with no counts proves nothing about the change (issue 22)
    assert compare(_result(1), _result(1)).status == "no_evidence"
    assert compare(None, _result(1)).reasons == ("the command exited 1 (no baseline)",)
    assert compare(None, _result(0)).passed


def test_more_failures_than_the_base_without_names() -> None:
    base = _result(1, tests=TestCounts(failed=1, passed=4))
    after = _result(1, tests=TestCounts(failed=2, passed=3))
    assert compare(base, after).reasons == ("2 tests fail, 1 on the base",)


def test_a_base_that_timed_out_is_no_baseline() -> None:
    verdict = compare(_result(137, timed_out=True), _result(1, tests=TestCounts(failed=1)))
    assert verdict.status == "failed"
    assert "the command exited 1 (no baseline)" in verdict.reasons


def test_tests_that_disappeared_are_reported() -> None:
    base = _result(tests=_junit(test_a="passed", test_b="passed"))
    after = _result(tests=_junit(test_a="passed"))
    verdict = compare(base, after)
    assert verdict.passed
    assert verdict.disappeared == ("tests.test_a::test_b",)


def test_nothing_ran() -> None:
    off = _result(None, error="the sandbox is off (AGENT_LOOP_SANDBOX=off): no tests ran")
    verdict = compare(None, off)
    assert verdict.status == "not_run"
    assert (
        verdict.summary == "no tests ran: the sandbox is off (AGENT_LOOP_SANDBOX=off): no tests ran"
    )


def test_a_failed_setup_fails_the_change() -> None:
    setup = _result(1, tail="error: could not install")
    after = _result(None, setup=setup, error="the setup command failed")
    verdict = compare(_result(0), after)
    assert verdict.status == "failed"
    assert verdict.reasons[0].startswith("the setup command failed")
    assert "could not install" in verdict.output_tail


# ---------------------------------------------------------------- tampering


def test_deleted_test_files_are_flagged() -> None:
    flags = flag_test_tampering(
        {"tests/test_a.py": None, "src/x.py": None, "tests/new_test.go": None},
        {"tests/test_a.py": "def test_a(): pass\n", "src/x.py": "x = 1\n"},
    )
    assert [(f.kind, f.path) for f in flags] == [("deleted_test", "tests/test_a.py")]


@pytest.mark.parametrize(
    ("path", "before", "after", "marker"),
    [
        (
            "tests/test_a.py",
            "def test_a(): ...\n",
            "@pytest.mark.skip\ndef test_a(): ...\n",
            "@pytest.mark.skip",
        ),
        (
            "tests/test_a.py",
            "def test_a(): ...\n",
            "@pytest.mark.skipif(True, reason='x')\ndef test_a(): ...\n",
            "@pytest.mark.skip",
        ),
        (
            "tests/test_a.py",
            "def test_a(): ...\n",
            "@pytest.mark.xfail\ndef test_a(): ...\n",
            "@pytest.mark.xfail",
        ),
        (
            "test_b.py",
            "def test_a():\n    assert f()\n",
            "def test_a():\n    pytest.skip('later')\n",
            "pytest.skip(",
        ),
        ("src/app.test.ts", "it('works', () => {})\n", "it.skip('works', () => {})\n", ".skip("),
        ("src/app.spec.js", "it('a', f)\nit('b', g)\n", "it.only('a', f)\nit('b', g)\n", ".only("),
        (
            "pkg/x_test.go",
            "func TestX(t *testing.T) {}\n",
            "func TestX(t *testing.T) { t.Skip() }\n",
            "t.Skip(",
        ),
        ("tests/it.rs", "#[test]\nfn a() {}\n", "#[test]\n#[ignore]\nfn a() {}\n", "#[ignore]"),
        # re-audit of issue 30: skips that are not markers
        (
            "tests/test_c.py",
            "def test_a():\n    assert f()\n",
            "def test_a():\n    pytest.importorskip('native_ext')\n    assert f()\n",
            "pytest.importorskip(",
        ),
        (
            "tests/test_d.py",
            "def test_a():\n    assert f()\n",
            "def test_a():\n    raise unittest.SkipTest('later')\n",
            "raise SkipTest",
        ),
    ],
)
def test_added_skips_are_flagged(path: str, before: str, after: str, marker: str) -> None:
    flags = flag_test_tampering({path: after}, {path: before})
    assert [(f.kind, f.detail) for f in flags if f.kind == "skip_added"] == [
        ("skip_added", f"1 more `{marker}`")
    ]


def test_removed_test_functions_are_flagged() -> None:
    before = "def test_a():\n    pass\n\n\nasync def test_b():\n    pass\n"
    flags = flag_test_tampering(
        {"tests/test_x.py": "def test_a():\n    pass\n"}, {"tests/test_x.py": before}
    )
    assert [(f.kind, f.detail) for f in flags] == [
        ("removed_tests", "1 test definition(s) removed")
    ]


@pytest.mark.parametrize(
    ("path", "before", "after"),
    [
        ("pytest.ini", "[pytest]\n", "[pytest]\naddopts = -k 'not slow'\n"),
        ("tests/conftest.py", "", "collect_ignore = ['test_x.py']\n"),
        (
            "pyproject.toml",
            "[project]\nname='x'\n[tool.pytest.ini_options]\n",
            "[project]\nname='x'\n[tool.pytest.ini_options]\naddopts='--deselect t'\n",
        ),
        ("setup.cfg", "[tool:pytest]\n", "[tool:pytest]\naddopts = -x\n"),
        ("tox.ini", "[pytest]\n", "[pytest]\nnorecursedirs = tests\n"),
        (
            "jest.config.js",
            "module.exports = {}\n",
            "module.exports = {testPathIgnorePatterns: ['x']}\n",
        ),
        ("web/vitest.config.ts", None, "export default {}\n"),
        (
            "package.json",
            '{"scripts": {"test": "jest"}}',
            '{"scripts": {"test": "jest --passWithNoTests"}}',
        ),
        # pytest 9 reads these before the older names
        (".pytest.ini", None, "[pytest]\naddopts = --deselect tests/test_a.py::test_bug\n"),
        ("pytest.toml", None, "[pytest]\naddopts = ['-k', 'not bug']\n"),
        (".pytest.toml", None, "[pytest]\naddopts = ['-k', 'not bug']\n"),
        ("tox.ini", "[testenv]\ncommands = pytest\n", "[testenv]\ncommands = pytest -k ok\n"),
        # the other parsed runners
        ("jest.preset.js", None, "module.exports = {}\n"),
        ("web/vitest.workspace.ts", None, "export default []\n"),
        (".mocharc.cjs", None, "module.exports = {grep: 'ok'}\n"),
        ("package.json", '{"ava": {}}', '{"ava": {"match": ["ok"]}}'),
        ("package.json", '{"scripts": {}}', '{"scripts": {"pretest": "rm -rf test"}}'),
        ("go.mod", "module x\n\ngo 1.22\n", "module x\n\ngo 1.22\n\nreplace y => ./y\n"),
        ("go.work", None, "go 1.22\n\nuse ./fake\n"),
        ("Cargo.toml", "[package]\nname='x'\n", "[package]\nname='x'\n[lib]\ntest = false\n"),
        ("Cargo.toml", "[[test]]\nname='a'\n", "[[test]]\nname='a'\nharness = false\n"),
        (".cargo/config.toml", None, "[target.x86_64-unknown-linux-gnu]\nrunner = 'true'\n"),
        ("crates/a/.cargo/config", "[alias]\n", "[alias]\ntest = 'check'\n"),
    ],
)
def test_test_configuration_edits_are_flagged(path: str, before: str | None, after: str) -> None:
    flags = flag_test_tampering({path: after}, {path: before})
    assert "test_config" in {f.kind for f in flags}, flags


@pytest.mark.parametrize(
    "path",
    [
        "pytest.ini",
        ".pytest.ini",
        "pytest.toml",
        ".pytest.toml",
        "conftest.py",
        "tests/conftest.py",
        "jest.config.js",
        "go.mod",
        "go.work",
        ".cargo/config.toml",
    ],
)
def test_test_configuration_is_compared_both_ways(path: str) -> None:
    """Added, edited or deleted: each is a change to what the runner reads."""
    for staged, base, verb in (
        ("x = 1\n", None, "added"),
        ("x = 2\n", "x = 1\n", "edited"),
        (None, "x = 1\n", "deleted"),
    ):
        details = [f.detail for f in flag_test_tampering({path: staged}, {path: base})]
        assert any(d.startswith("test configuration") or "cargo" in d for d in details), details
        assert any(d.endswith(verb) for d in details), (verb, details)
    assert flag_test_tampering({path: "x = 1\n"}, {path: "x = 1\n"}) == ()


def test_go_build_constraints_and_test_main_are_flagged() -> None:
    before = "package calc\n\nfunc TestAdd(t *testing.T) {}\n"
    constrained = "//go:build never\n\n" + before
    [flag] = flag_test_tampering({"calc_test.go": constrained}, {"calc_test.go": before})
    assert (flag.kind, flag.detail.split(":")[0]) == ("skip_added", "a build constraint (`//go")
    main = before + "\nfunc TestMain(m *testing.M) { os.Exit(0) }\n"
    flags = flag_test_tampering({"calc_test.go": main}, {"calc_test.go": before})
    assert any(f.kind == "evidence_hook" and "TestMain" in f.detail for f in flags), flags


@pytest.mark.parametrize(
    ("path", "before", "after"),
    [
        (
            "pyproject.toml",
            "[project]\nversion='1'\n[tool.pytest.ini_options]\nx=1\n",
            "[project]\nversion='2'\n[tool.pytest.ini_options]\nx=1\n",
        ),
        ("setup.cfg", "[metadata]\nname=a\n", "[metadata]\nname=b\n"),
        (
            "package.json",
            '{"version": "1", "scripts": {"test": "jest"}}',
            '{"version": "2", "scripts": {"test": "jest"}}',
        ),
        ("src/app.py", "x = 1\n", "x = 2  # skip( mentioned\n"),
        ("tests/test_a.py", "def test_a(): ...\n", "def test_a(): ...\n\n\ndef test_b(): ...\n"),
    ],
)
def test_ordinary_edits_are_not_flagged(path: str, before: str, after: str) -> None:
    assert flag_test_tampering({path: after}, {path: before}) == ()


# ---------------------------------------------------------------- baseline cache


async def test_one_baseline_run_per_base_and_command() -> None:
    cache = BaselineCache()
    started: list[str] = []

    async def run() -> RunResult:
        started.append("run")
        await asyncio.sleep(0.01)
        return _result(tests=TestCounts(passed=3))

    key = baseline_key("abc123", ["pytest", "-q"])
    results = await asyncio.gather(*(cache.get_or_run(key, run) for _ in range(5)))
    results.append(await cache.get_or_run(key, run))
    assert started == ["run"]
    assert cache.runs == 1
    assert all(r is results[0] for r in results)
    await cache.get_or_run(baseline_key("abc123", ["pytest"]), run)
    await cache.get_or_run(baseline_key("abc123", ["pytest", "-q"], ["uv", "sync"]), run)
    await cache.get_or_run(baseline_key("def456", ["pytest", "-q"]), run)
    assert cache.runs == 4
    assert len(cache) == 4


async def test_a_crashed_baseline_is_not_cached() -> None:
    cache = BaselineCache()
    calls = 0

    async def flaky() -> RunResult:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("sandbox broke")
        return _result()

    key = baseline_key("abc", ["pytest"])
    with pytest.raises(RuntimeError):
        await cache.get_or_run(key, flaky)
    assert (await cache.get_or_run(key, flaky)).ok
    assert calls == 2


async def test_the_cache_forgets_the_least_recently_used() -> None:
    cache = BaselineCache(max_entries=2)

    async def run() -> RunResult:
        return _result()

    for sha in ("a", "b", "a", "c"):
        await cache.get_or_run(baseline_key(sha, ["t"]), run)
    assert cache.runs == 3
    await cache.get_or_run(baseline_key("a", ["t"]), run)
    assert cache.runs == 3  # "a" was used recently, "b" was dropped
    await cache.get_or_run(baseline_key("b", ["t"]), run)
    assert cache.runs == 4
