"""The whole loop, end to end: builder -> reviewer -> distiller, as `agent-loop run` runs it.

Every tick goes through `agent_loop.cli.main(["run", ...])`: settings from the
environment, the agent package's `run_once`, `run_task` in Flyte local mode with memory
under `AGENT_LOOP_HOME`. GitHub is the emulator served over real HTTP on loopback; the
model is a strict `ScriptedModel` per agent, installed with `use_model`, driving the
real Agent loops, verifiers and staging tools. The test then reads the final state as a
person would: PRs with their files and bodies, sub-issues with their dependencies, the
reviewer's fix commit and reply, and the memory's records, grades, lessons and digest.
"""

from __future__ import annotations

import asyncio
import pathlib
import re
from collections.abc import Iterator

import pytest

from agent_loop import cli
from agent_loop.status import MemorySnapshot, read_snapshot
from agent_loop_common.records import Outcome, Role
from agent_loop_common.runtime import local_memory, use_model
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    CALC,
    CALC_SUB,
    TESTS,
    TESTS_SUB,
    CliLoop,
    GitHubEmulator,
    ScriptedModel,
    call,
    emulator_client,
    serve_for_cli,
    turn,
)

pytestmark = pytest.mark.slow

CALC_SUB_DOC = CALC + '\n\ndef subtract(a, b):\n    """a minus b."""\n    return a - b\n'
STATS = "def mean(xs):\n    return sum(xs) / len(xs)\n"
STATS_TESTS = "from stats import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n"
VERIFIED = '{"verified": true, "notes": "Checked against the request; tests cover it."}'


@pytest.fixture(params=["AGENT_LOOP_REPO", "AGENT_LOOP_REPOS"])
def loop(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: pathlib.Path,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[CliLoop]:
    """The served emulator, configured with `AGENT_LOOP_REPO`, and again with the list
    form `AGENT_LOOP_REPOS` naming that one repository (its own memory namespace, the
    tick shared out through the work task): every flow must read the same."""
    emulator = GitHubEmulator()
    emulator.seed_files({"src/calc.py": CALC, "tests/test_calc.py": TESTS, "README.md": "# calc\n"})
    # The tests' sandbox has end-to-end tests of its own (test_e2e_verdicts); this
    # loop runs anywhere, opening its pull requests as drafts that say no tests ran.
    with serve_for_cli(
        monkeypatch,
        emulator,
        tmp_path / "home",
        repo_variable=str(request.param),
        AGENT_LOOP_SANDBOX="off",
    ):
        yield CliLoop(emulator, cli.main, capsys)


def _builder_model() -> ScriptedModel:
    return ScriptedModel(
        [
            # issue #1: a feature -> a PR
            turn(
                tool_calls=[call("read_file", path="src/calc.py").expecting("def add")],
                expect_in_messages="Title: Add subtract()",
            ),
            turn(tool_calls=[call("stage_file", path="src/calc.py", content=CALC_SUB)]),
            turn(tool_calls=[call("stage_file", path="tests/test_calc.py", content=TESTS_SUB)]),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title="Add subtract()",
                        body="Adds `subtract(a, b)` with a test.",
                        summary="subtract() and its test.",
                    ).expecting("Submitted 2 path(s)")
                ]
            ),
            turn("Submitted."),
            # issue #2: a spec -> two sub-issues, the second waiting for the first
            turn(
                tool_calls=[
                    call(
                        "stage_issue",
                        key="mean",
                        title="Add stats.mean()",
                        body="`mean(xs)`: the arithmetic mean. Acceptance: a test.",
                        depends_on=[],
                    )
                ],
                expect_in_messages="Title: Spec: statistics",
            ),
            turn(
                tool_calls=[
                    call(
                        "stage_issue",
                        key="median",
                        title="Add stats.median()",
                        body="`median(xs)` next to `mean`. Acceptance: odd and even lengths.",
                        depends_on=["mean"],
                    )
                ]
            ),
            turn(
                tool_calls=[
                    call("submit_decomposition", summary="mean first, then median.").expecting(
                        "Submitted 2 sub-issue(s)"
                    )
                ]
            ),
            turn("Decomposed."),
            # sub-issue "mean" -> a PR
            turn(
                tool_calls=[call("stage_file", path="src/stats.py", content=STATS)],
                expect_in_messages="Title: Add stats.mean()",
            ),
            turn(tool_calls=[call("stage_file", path="tests/test_stats.py", content=STATS_TESTS)]),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title="Add stats.mean()",
                        body="Adds `stats.mean` with a test.",
                        summary="mean() and its test.",
                    )
                ]
            ),
            turn("Submitted."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED), turn(VERIFIED), turn(VERIFIED)]},
        name="builder",
    )


def _reviewer_model(comment_id: int) -> ScriptedModel:
    return ScriptedModel(
        [
            # PR #3 (subtract): the owner's inline comment -> a fix and a reply
            turn(
                tool_calls=[call("get_diff").expecting("subtract")],
                expect_in_messages=[f"id={comment_id}", "Please add a docstring"],
            ),
            turn(
                tool_calls=[
                    call("stage_file", path="src/calc.py", content=CALC_SUB_DOC).expecting("Staged")
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "submit_fix",
                        summary="Docstring for subtract(), as asked.",
                        replies=[{"comment_id": comment_id, "reply": "Added the docstring."}],
                    ).expecting("1 reply")
                ]
            ),
            turn("Fixed."),
            # PR #6 (mean): its own review, nothing to change
            turn(
                tool_calls=[call("get_diff").expecting("def mean")],
                expect_in_messages="Add stats.mean()",
            ),
            turn(tool_calls=[call("no_changes", reason="mean() is right and tested.")]),
            turn("Reviewed."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED)]},
        name="reviewer",
    )


def _distiller_model(builder_run: str) -> ScriptedModel:
    return ScriptedModel(
        [
            turn(
                tool_calls=[
                    call(
                        "add_lesson",
                        text="Give every new public function a docstring; reviewers ask for it.",
                        evidence_run_ids=[builder_run],
                        roles=["builder"],
                    ).expecting("Added")
                ],
                expect_in_messages=builder_run,
            ),
            turn(tool_calls=[call("finish", summary="One lesson about docstrings.")]),
            turn("Done."),
        ],
        name="distiller",
    )


async def _owner_comment(emulator: GitHubEmulator, pr: int) -> int:
    emulator.add_review(
        pr,
        author=emulator.owner,
        comments=[("src/calc.py", 5, "Please add a docstring to subtract().")],
    )
    async with emulator_client(emulator, token=emulator.owner_token) as gh:
        return (await gh.list_review_comments(pr))[-1].id


def test_the_whole_loop(loop: CliLoop) -> None:
    emu = loop.emulator
    feature = emu.add_issue("Add subtract()", "We need `subtract(a, b)` in calc.")
    spec = emu.add_issue("Spec: statistics", "mean and median; median builds on mean.")
    loop.models[Role.BUILDER] = builder = _builder_model()
    with use_model(loop.provider):
        # ---- builder: feature -> PR, spec -> sub-issues, first sub-issue -> PR, then idle
        built = [loop.tick("builder") for _ in range(4)]
        assert [b.outcome for b in built] == ["opened_pr", "opened_issues", "opened_pr", "idle"]
        assert built[3].idle
        [feature_pr] = built[0].made
        mean_issue, median_issue = built[1].made
        [mean_pr] = built[2].made
        assert built[2].target_label == f"issue #{mean_issue}"
        builder.assert_finished()

        # ---- reviewer: the owner comments on the feature PR; every agent PR is reviewed
        comment_id = asyncio.run(_owner_comment(emu, feature_pr))
        head_before = emu.pull(feature_pr).head_sha
        loop.models[Role.REVIEWER] = reviewer = _reviewer_model(comment_id)
        reviewed = [loop.tick("reviewer") for _ in range(3)]
        assert [r.outcome for r in reviewed] == ["pushed_fix", "reviewed_clean", "idle"]
        assert reviewed[0].target_label == f"PR #{feature_pr}"
        assert reviewed[1].target_label == f"PR #{mean_pr}"
        reviewer.assert_finished()

        # ---- distiller: grades the PRs, learns one lesson from the builder's run
        loop.models[Role.DISTILLER] = distiller = _distiller_model(built[0].run_id)
        distilled = loop.tick("distiller")
        assert distilled.outcome == "distilled"
        distiller.assert_finished()

    # ---- GitHub: the feature PR, with the reviewer's fix on top and the reply
    pull = emu.pull(feature_pr)
    assert pull.author == emu.bot_login
    assert pull.state == "open"
    assert pull.head_ref.startswith(f"agent-loop/issue-{feature}-")
    assert f"Fixes #{feature}" in (pull.body or "")
    assert pull.head_sha != head_before
    assert emu.log(pull.head_sha)[0].parents == (head_before,)  # one commit, no force push
    assert emu.file_at(pull.head_sha, "src/calc.py") == CALC_SUB_DOC.encode()
    assert emu.file_at(pull.head_sha, "tests/test_calc.py") == TESTS_SUB.encode()
    assert emu.file_at("main", "src/calc.py") == CALC.encode()  # nothing merged by the agents

    async def review_replies() -> list[tuple[int | None, str, str]]:
        async with emulator_client(emu, token=emu.owner_token) as gh:
            return [
                (c.in_reply_to_id, c.user.login, c.body)
                for c in await gh.list_review_comments(feature_pr)
            ]

    replies = [r for r in asyncio.run(review_replies()) if r[0] == comment_id]
    assert len(replies) == 1
    assert replies[0][1] == emu.bot_login
    assert "Added the docstring." in replies[0][2]

    # ---- GitHub: the spec became two sub-issues; the dependent one waits
    assert emu.issue(spec).state == "closed"
    for number in (mean_issue, median_issue):
        assert emu.issue(number).author == emu.bot_login
        assert emu.issue(number).state == "open"
    assert re.search(rf"depends on #{mean_issue}\b", emu.issue(median_issue).body or "")
    assert f"#{mean_issue}" in emu.comments(spec)[-1].body
    assert f"#{median_issue}" in emu.comments(spec)[-1].body
    mean_pull = emu.pull(mean_pr)
    assert f"Fixes #{mean_issue}" in (mean_pull.body or "")
    assert emu.file_at(mean_pull.head_sha, "src/stats.py") == STATS.encode()
    agent_branches = emu.refs("refs/heads/agent-loop/")
    assert not any(f"issue-{median_issue}-" in ref for ref in agent_branches)

    # ---- memory: one record per working run, grades, the lesson with its provenance
    snapshot: MemorySnapshot = asyncio.run(read_snapshot(local_memory(loop.settings)))
    by_role = {role: [r for r in snapshot.records if r.role is role] for role in Role}
    assert sorted(r.outcome for r in by_role[Role.BUILDER]) == sorted(
        [Outcome.OPENED_PR, Outcome.OPENED_ISSUES, Outcome.OPENED_PR]
    )
    assert sorted(r.outcome for r in by_role[Role.REVIEWER]) == sorted(
        [Outcome.PUSHED_FIX, Outcome.REVIEWED_CLEAN]
    )
    assert [r.outcome for r in by_role[Role.DISTILLER]] == [Outcome.DISTILLED]
    ticks = [*built, *reviewed, distilled]
    assert {r.run_id for r in snapshot.records} == {t.run_id for t in ticks if not t.idle}
    assert all(r.github.requests > 0 for r in snapshot.records)
    assert {i.role for i in snapshot.idle} == {Role.BUILDER, Role.REVIEWER}
    graded = {(g.target.kind.value, g.target.number): g for g in snapshot.grades}
    assert set(graded) == {("pr", feature_pr), ("pr", mean_pr), ("issue", spec)}
    assert graded["pr", feature_pr].review_rounds == 1
    assert graded["pr", feature_pr].state == "open"
    assert graded["issue", spec].sub_issues == [mean_issue, median_issue]
    assert snapshot.metrics.opened_prs == 2
    [lesson] = snapshot.lessons.lessons
    assert lesson.text.startswith("Give every new public function a docstring")
    assert lesson.source_run_ids == [built[0].run_id]
    assert lesson.roles == [Role.BUILDER]
    assert lesson.text in snapshot.digest
