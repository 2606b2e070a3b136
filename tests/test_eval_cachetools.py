"""`agent-loop eval` on a real project's real history: cachetools (MIT), reduced and
vendored in `agent_loop_testing` (`seed_cachetools_history`), its tests run in the real
bubblewrap sandbox, every step through the CLI against the emulator served on loopback.

Mining (once for the module): six real fixes that closed an issue and changed its tests;
three are instances, two are performance rewrites whose new tests already pass at their
base, and one closes an issue filed by someone outside the maintainers (refused as live
work refuses it). Scoring: each instance's own fix resolves it and no change resolves
none (`eval score --gold`, SWE-bench's sanity check); a builder replay whose scripted
model stages the real fix resolves its instance, one that stages a plausible but wrong
fix does not, naming the hidden tests that fail; `eval score` of the replay's
predictions agrees with `eval run`. These figures are the tables in docs/eval.md
(`pytest -s` prints what the commands printed).
"""

from __future__ import annotations

import io
import json
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_loop import cli
from agent_loop_common.runtime import use_model
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_eval import (
    Instance,
    SkipReason,
    apply_patch,
    patch_paths,
    read_instances,
    read_skipped,
    skipped_path,
)
from agent_loop_testing import (
    CACHETOOLS_TEST_ARGS,
    VERIFIED,
    GitHubEmulator,
    ModelPerIssue,
    ScriptedModel,
    VendoredHistory,
    block_network,
    bwrap_e2e_marks,
    call,
    seed_cachetools_history,
    serve_for_cli,
    turn,
)

pytestmark = bwrap_e2e_marks()

PYTEST = shlex.join(
    [
        *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
        *("-p", "no:agent_loop_hermetic", *CACHETOOLS_TEST_ARGS),
    ]
)
ENV = {
    "AGENT_LOOP_SANDBOX": "bwrap",
    "AGENT_LOOP_TEST_COMMAND": PYTEST,
    "AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS": "300",
    "AGENT_LOOP_MAX_TRIES": "1",
}
CACHE_KEY = "18e5930"
"""The fix replayed: #218, `@cachedmethod.cache_key` handling (its smallest real fix)."""
MODULE = "src/cachetools/_cachedmethod.py"


@dataclass
class Mined:
    """The vendored history on its emulator, mined once through the CLI."""

    emulator: GitHubEmulator
    seeded: VendoredHistory
    home: Path
    instances: Path
    printed: str
    writes: list[str]

    def by_commit(self, commit: str) -> Instance:
        number = self.seeded.pulls[commit]
        return next(i for i in read_instances(self.instances) if i.pull_number == number)


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> Mined:
    emulator = GitHubEmulator("tkem", "cachetools", default_branch="master")
    seeded = seed_cachetools_history(emulator)
    work = tmp_path_factory.mktemp("cachetools")
    out = work / "instances.jsonl"
    printed, problems = io.StringIO(), io.StringIO()
    emulator.clear_requests()
    with (
        block_network(),
        pytest.MonkeyPatch.context() as monkeypatch,
        serve_for_cli(monkeypatch, emulator, work / "home", **ENV),
        redirect_stdout(printed),
        redirect_stderr(problems),
    ):
        code = cli.main(["eval", "mine", "--out", str(out)])
    assert code == 0, problems.getvalue()
    writes = [
        f"{r.method} {r.path}"
        for r in emulator.requests
        if r.method != "GET" and not r.path.endswith("graphql")
    ]
    return Mined(emulator, seeded, work / "home", out, printed.getvalue(), writes)


@pytest.fixture
def served(mined: Mined, monkeypatch: pytest.MonkeyPatch) -> Iterator[Mined]:
    """The mined emulator served again for one test's commands; its request log cleared."""
    with serve_for_cli(monkeypatch, mined.emulator, mined.home, **ENV):
        mined.emulator.clear_requests()
        yield mined


Run = Callable[..., tuple[int, str]]
"""`run(*argv)`: the CLI's exit code and what it printed (shown under `pytest -s`)."""


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], echo: Callable[[str], None]) -> Run:
    def main(*argv: str) -> tuple[int, str]:
        code = cli.main(list(argv))
        printed, err = capsys.readouterr()
        echo(printed)  # for docs/eval.md (pytest -s)
        assert "Traceback" not in err
        return code, printed + err

    return main


def _results(out: Path) -> dict[str, dict[str, object]]:
    return {str(r["instance_id"]): r for r in json.loads((out / "results.json").read_text())}


def test_mining_cachetools_finds_its_real_fixes(mined: Mined, echo: Callable[[str], None]) -> None:
    echo(mined.printed)  # the progress lines and the table, for the docs (pytest -s)
    emulator, seeded = mined.emulator, mined.seeded
    pulls = seeded.pulls
    assert mined.writes == []

    instances = {i.pull_number: i for i in read_instances(mined.instances)}
    assert sorted(instances) == sorted(pulls[c] for c in ("86352ae", "bb72c21", "18e5930"))
    skipped = {s.pull_number: s.reason for s in read_skipped(skipped_path(mined.instances))}
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


def test_each_real_fix_resolves_its_instance_and_no_change_resolves_any(
    served: Mined, tmp_path: Path, run: Run
) -> None:
    """SWE-bench's sanity check of the mined file: `--gold` scores every instance's own
    fix (resolved) and the base with the test patch alone (every FAIL_TO_PASS test
    fails); an empty prediction for every instance resolves none."""
    instances = read_instances(served.instances)
    gold = tmp_path / "gold"
    code, printed = run("eval", "score", str(served.instances), "--gold", "--out", str(gold))
    assert code == 0, printed
    results = _results(gold)
    assert list(results) == [i.instance_id for i in instances]
    for instance in instances:
        result = results[instance.instance_id]
        check = result["gold_check"]
        assert isinstance(check, dict)
        assert (result["resolved"], result["failing_tests"], check["problems"]) == (True, [], [])
        assert check["empty_failing"] == instance.FAIL_TO_PASS
        assert result["diff"] == instance.patch  # the fix applied is the fix mined
    assert f"gold check: {len(instances)} valid, 0 broken" in printed

    empty = tmp_path / "empty.jsonl"
    empty.write_text(
        "".join(
            json.dumps({"instance_id": i.instance_id, "model_name_or_path": "nothing"}) + "\n"
            for i in instances
        )
    )
    out = tmp_path / "empty"
    code, printed = run("eval", "score", str(served.instances), str(empty), "--out", str(out))
    assert code == 0, printed
    assert [(r["resolved"], r["outcome"]) for r in _results(out).values()] == [
        (False, "empty")
    ] * len(instances)
    assert f"resolved 0 of {len(instances)} (0.0%" in printed
    assert {r.method for r in served.emulator.requests} == {"GET"}


def _replay(files: dict[str, str]) -> ScriptedModel:
    """A builder that reads the issue, stages `files` whole and submits; its verifier
    accepts."""
    return ScriptedModel(
        [
            turn(tool_calls=[call("read_issue").expecting("@cachedmethod.cache_key handling")]),
            *(turn(tool_calls=[call("stage_file", path=p, content=c)]) for p, c in files.items()),
            turn(
                tool_calls=[
                    call("submit_implementation", title="cache_key", body="Fix.", summary="s")
                ]
            ),
            turn("Submitted."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED)]},
    )


def test_a_replay_of_the_real_fix_resolves_and_a_plausible_wrong_one_does_not(
    served: Mined, tmp_path: Path, run: Run
) -> None:
    emulator = served.emulator
    instance = served.by_commit(CACHE_KEY)
    # The real pull request, replayed whole: its fix, and its change to the tests that
    # asserted the old behaviour (the builder's checks run the tests at the base, so a
    # fix that leaves them asserting the old behaviour is rejected there, as live).
    real_pr = instance.patch + instance.test_patch
    base = {
        p: data
        for p in patch_paths(real_pr)
        if (data := emulator.file_at(instance.base_commit, p)) is not None
    }
    changed = apply_patch(base, real_pr)
    assert all(text is not None for text in changed.values())
    real = {p: text for p, text in changed.items() if text is not None}
    # Documents what cache_key does instead of fixing it: the builder's visible tests
    # still pass, the hidden ones (it must bind the instance) do not.
    original = base[MODULE].decode()
    accessor = "    def cache_key(self):\n        return self.__key\n"
    assert accessor in original
    documented = accessor.replace(
        "):\n",
        '):\n        """The key function, called with the instance first:\n'
        '        ``cache_key(obj, *args, **kwargs)``, as ``keys.methodkey`` takes it."""\n',
    )
    wrong = {MODULE: original.replace(accessor, documented)}

    argv = ["eval", "run", str(served.instances), "--instances", instance.instance_id]
    runs: dict[str, Path] = {}
    for name, files in (("real", real), ("wrong", wrong)):
        model = _replay(files)
        runs[name] = tmp_path / name
        with use_model(ModelPerIssue({instance.issue_numbers[0]: model})):
            code, printed = run(*argv, "--lessons", "off", "--out", str(runs[name]))
        assert code == 0, printed
        model.assert_finished()

    solved = _results(runs["real"])[instance.instance_id]
    assert (solved["resolved"], solved["outcome"], solved["tries"]) == (True, "change", 1)
    assert solved["diff"] == real_pr
    assert solved["github_requests"] == 0
    failed = _results(runs["wrong"])[instance.instance_id]
    assert (failed["resolved"], failed["outcome"]) == (False, "change")
    assert failed["failing_tests"] == instance.FAIL_TO_PASS
    assert failed["reason"] == "2 hidden test(s) did not pass"
    assert {r.method for r in emulator.requests} == {"GET"}

    # The replay's predictions, scored as another agent's would be, score the same.
    for name, resolved in (("real", True), ("wrong", False)):
        out = tmp_path / f"{name}-scored"
        predictions = runs[name] / "predictions.jsonl"
        code, printed = run(
            "eval", "score", str(served.instances), str(predictions), "--out", str(out)
        )
        assert code == 0, printed
        scored = _results(out)
        assert scored[instance.instance_id]["resolved"] is resolved
        others = [r for i, r in scored.items() if i != instance.instance_id]
        assert [r["outcome"] for r in others] == ["missing", "missing"]
