"""`agent-loop eval mine` on a real project's real history: cachetools (MIT), reduced and
vendored in `agent_loop_testing` (`seed_cachetools_history`), its tests run in the real
bubblewrap sandbox. Six real fixes that closed an issue and changed its tests: three are
instances, two are performance rewrites whose new tests already pass at their base, and
one closes an issue filed by someone outside the maintainers (refused as live work
refuses it). These figures are the table in docs/eval.md.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from agent_loop import cli
from agent_loop_eval import SkipReason, read_instances, read_skipped, skipped_path
from agent_loop_testing import (
    CACHETOOLS_TEST_ARGS,
    GitHubEmulator,
    bwrap_e2e_marks,
    seed_cachetools_history,
    serve_for_cli,
)

pytestmark = bwrap_e2e_marks()

PYTEST = shlex.join(
    [
        *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
        *("-p", "no:agent_loop_hermetic", *CACHETOOLS_TEST_ARGS),
    ]
)


def test_mining_cachetools_finds_its_real_fixes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator = GitHubEmulator("tkem", "cachetools", default_branch="master")
    seeded = seed_cachetools_history(emulator)
    pulls = seeded.pulls
    out = tmp_path / "instances.jsonl"
    emulator.clear_requests()
    with serve_for_cli(
        monkeypatch,
        emulator,
        tmp_path / "home",
        AGENT_LOOP_SANDBOX="bwrap",
        AGENT_LOOP_TEST_COMMAND=PYTEST,
        AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS="300",
    ):
        code = cli.main(["eval", "mine", "--out", str(out)])
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    print(stdout)  # the progress lines and the table, for the docs (pytest -s)
    writes = [r for r in emulator.requests if r.method != "GET" and not r.path.endswith("graphql")]
    assert writes == []

    instances = {i.pull_number: i for i in read_instances(out)}
    assert sorted(instances) == sorted(pulls[c] for c in ("86352ae", "bb72c21", "18e5930"))
    skipped = {s.pull_number: s.reason for s in read_skipped(skipped_path(out))}
    assert skipped == {
        pulls["2aeffb0"]: SkipReason.NOTHING_FAILS_BEFORE,  # #260: LFUCache rewrite
        pulls["4d74eb4"]: SkipReason.NOTHING_FAILS_BEFORE,  # #356: RRCache speed-up
        pulls["57d2e48"]: SkipReason.UNTRUSTED_ISSUE,  # #387: filed by a non-maintainer
    }

    cache_key = instances[pulls["18e5930"]]  # #218
    assert cache_key.FAIL_TO_PASS == [
        "tests/test_cachedmethod.py::CacheMethodTest::test_decorator_attributes",
        "tests/test_cachedmethod.py::DictMethodTest::test_decorator_attributes",
    ]
    assert cache_key.issue_numbers == [seeded.issues[218]]
    assert cache_key.problem_statement.startswith("@cachedmethod.cache_key handling\n")
    descriptors = instances[pulls["86352ae"]]  # #357, first fix
    assert len(descriptors.FAIL_TO_PASS) == 10
    assert "tests/test_cachedmethod.py::CachedMethodTest::test_attributes" in (
        descriptors.FAIL_TO_PASS
    )
    cache_info = instances[pulls["bb72c21"]]  # #357, second fix
    assert len(cache_info.FAIL_TO_PASS) == 43
    commits = {number: commit for commit, number in pulls.items()}
    for instance in instances.values():
        assert len(instance.PASS_TO_PASS) <= 200
        assert set(instance.FAIL_TO_PASS).isdisjoint(instance.PASS_TO_PASS)
        merge = emulator.log(seeded.merges[commits[instance.pull_number]])[0]
        assert instance.base_commit == merge.parents[0]
