"""What the pytest guard adds to a pytest run (issue 30): CPU time, paired.

The sandbox loads its guard (`sandbox/_pytest_guard.py`) first in every pytest run. It
watches every report's outcome, the session's counters and each registration, and
checks pytest's hooks and functions at the end, so its cost grows with the suite. This
prints, for generated suites of growing size (one test in ten failing, one xfail, one
skipped), the CPU time (user + system) of `python -m pytest -q` with and without
`-p <guard>`, rounds interleaved, and the median and p95 of the paired differences. CPU
time, not wall time: on a shared 2-core machine the wall time of a run swings by more
than the guard costs. The sandbox itself is left out (its cost is `bench/sandbox.py`'s);
the interpreter is this one.

Run: `uv run --frozen python bench/pytest_guard.py [--rounds 7]`
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from agent_loop_common.sandbox._guard import install_guard, read_guard_reports

TEST = """
import pytest


@pytest.mark.parametrize("n", range({per_file}))
def test_value(n):
    assert n % 10 != 7


@pytest.mark.xfail(reason="known")
def test_known():
    assert False


@pytest.mark.skip(reason="slow")
def test_slow():
    pass
"""


def _suite(root: Path, files: int, per_file: int) -> None:
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    tests = root / "tests"
    tests.mkdir()
    for i in range(files):
        (tests / f"test_mod{i}.py").write_text(TEST.format(per_file=per_file))


def _run(root: Path, out: Path, guard: str | None) -> float:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    argv += ["-p", "no:agent_loop_hermetic", "-p", "no:asyncio", "-p", "no:anyio"]
    argv += [f"--junitxml={out / 'junit.xml'}"]
    env = {"PATH": os.environ.get("PATH", ""), "SANDBOX_JUNIT": str(out / "junit.xml")}
    if guard is not None:
        argv += ["-p", guard]
        env["PYTHONPATH"] = str(out.parent / "guard")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, cwd=root, env=env, capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    print("| tests | CPU without guard (median) | with guard (median) | added median | added p95 |")
    print("|---:|---:|---:|---:|---:|")
    for files, per_file in ((5, 20), (20, 50), (50, 100)):
        with tempfile.TemporaryDirectory(prefix="guard-bench-") as tmp:
            root, out = Path(tmp) / "repo", Path(tmp) / "out"
            root.mkdir()
            out.mkdir()
            _suite(root, files, per_file)
            guard = install_guard(Path(tmp) / "guard", [])
            plain, guarded = [], []
            for _ in range(rounds):
                plain.append(_run(root, out, None))
                guarded.append(_run(root, out, guard))
            reading = read_guard_reports(out, guard)
            assert reading.finished, "the guard did not finish"
            assert not reading.findings, reading.findings
            added = [g - p for g, p in zip(guarded, plain, strict=True)]
            tests = files * (per_file + 2)
            print(
                f"| {tests:,} | {statistics.median(plain) * 1000:.0f} ms "
                f"| {statistics.median(guarded) * 1000:.0f} ms "
                f"| {statistics.median(added) * 1000:.0f} ms | {_p95(added) * 1000:.0f} ms |"
            )


if __name__ == "__main__":
    main()
