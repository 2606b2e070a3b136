"""One instance, start to end: its base from GitHub, a change, and the score.

The only GitHub request of an instance is the tarball of its base commit (a read, from
the instance's own repository, so a SWE-bench file made elsewhere works too). The
change is either the builder's, replayed with no GitHub at all (`evaluate`:
`replay_build` on `RepoSnapshot.from_archive`, in a runtime opened `offline`), or one
made elsewhere (`score_prediction`: a SWE-bench prediction's patch applied to the
base). Either way it is scored the same way, once the change is in hand: the test patch
laid over it and the hidden tests run (`score_change`), then the result written from
the score (`_with_score`). Every failure becomes the instance's result, never an
exception: one bad instance does not stop a run.

Flyte-free: the eval's tasks (`env.eval_instance`, `env.eval_score_instance`) call
these, and tests call them as coroutines against the emulator.
"""

from __future__ import annotations

import time

import httpx
import structlog

from agent_loop_builder import LessonChoice, ReplayAsk, ReplayedBuild, replay_build
from agent_loop_common.github import GitHub, GitHubUnavailable, github_auth
from agent_loop_common.records import Role
from agent_loop_common.repo import RepoSnapshot
from agent_loop_common.runtime import open_runtime
from agent_loop_common.sandbox import BaselineStore
from agent_loop_common.settings import Settings
from agent_loop_eval._baselines import shared_store
from agent_loop_eval._instance import Instance
from agent_loop_eval._patches import (
    BinaryChange,
    PatchError,
    apply_patch,
    diff_files,
    parse_patch,
    patch_paths,
)
from agent_loop_eval._predictions import Prediction
from agent_loop_eval._results import GoldCheck, InstanceResult
from agent_loop_eval._score import Score, score_change

__all__ = ["evaluate", "instance_settings", "score_prediction"]

_log = structlog.get_logger(__name__)


def instance_settings(settings: Settings, instance: Instance, *, model: str = "") -> Settings:
    """The settings one instance runs under: its repository, its test and setup command
    when it names them, a JUnit report (scoring reads each test's outcome), and `model`
    for the builder and its verifier when given."""
    update: dict[str, object] = {"test_junit_report": True}
    if instance.test_command:
        update["test_command"] = instance.test_command
    if instance.setup_command:
        update["setup_command"] = instance.setup_command
    if model:
        update |= {"model": model, "verifier_model": model}
    return settings.for_repo(instance.repo).model_copy(update=update)


async def evaluate(
    instance: Instance,
    settings: Settings,
    *,
    lessons: LessonChoice,
    model: str = "",
    memory_root: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    baselines: BaselineStore | None = None,
) -> InstanceResult:
    """Replay the builder on `instance` and score what it produced.

    Args:
        instance: The task.
        settings: The run's configuration (the model, limits, sandbox, memory).
        lessons: Which lessons from memory the build is shown.
        model: A litellm model string for the builder and its verifier (`--model`).
        memory_root: Where memory lives (`None` inside a Flyte task).
        transport: An httpx transport for the base download (the emulator in process).
        baselines: Where the base commit's baseline is found or kept; default the store
            of the open `shared_baselines` (a run's instances share it), else the
            runtime's own.
    """
    started = time.perf_counter()
    config = instance_settings(settings, instance, model=model)
    result = InstanceResult(
        instance_id=instance.instance_id,
        resolved=False,
        repo=instance.repo,
        base_commit=instance.base_commit,
        lessons=str(lessons),
    )
    try:
        snapshot = await _snapshot(config, instance, transport)
        async with open_runtime(
            config,
            Role.BUILDER,
            memory_root=memory_root,
            offline=True,
            baselines=baselines if baselines is not None else shared_store(),
        ) as rt:
            ask = ReplayAsk(
                number=instance.issue_numbers[0] if instance.issue_numbers else 0,
                statement=instance.problem_statement,
                lessons=lessons,
            )
            replay = await replay_build(rt, ask, snapshot)
            result = _with_build(result, replay, model=rt.model_name)
            score = await score_change(rt, instance, snapshot, replay.files)
        result = await _with_score(result, score, snapshot, replay.files)
    except Exception as exc:  # one instance's failure is its result, never the run's
        _log.warning("eval.instance_failed", instance=instance.instance_id, error=repr(exc))
        result = result.model_copy(
            update={"outcome": "error", "error": f"{type(exc).__name__}: {exc}"}
        )
    return result.model_copy(update={"seconds": round(time.perf_counter() - started, 3)})


async def score_prediction(
    instance: Instance,
    settings: Settings,
    prediction: Prediction,
    *,
    check_gold: bool = False,
    memory_root: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    baselines: BaselineStore | None = None,
) -> InstanceResult:
    """Score `prediction`, a change made elsewhere, exactly as `evaluate` scores a build's.

    Its patch is applied to the base commit's files as `git apply` would
    (`apply_patch`): one that does not apply is `unapplied` and an empty one `empty`,
    neither scored (nor, for an empty one, downloaded). Any other is scored by
    `score_change` in the builder's sandbox, as a build's change is: the test patch laid
    over it, the hidden tests run, tamper findings never resolved.

    Args:
        instance: The task.
        settings: The run's configuration (the sandbox, memory).
        prediction: The change (`model_patch`) and who made it (`model_name_or_path`).
        check_gold: `prediction` is the instance's own reference fix: also run the base
            with the test patch alone (the empty patch) and judge whether the instance
            can judge a change (`InstanceResult.gold_check`).
        memory_root: Where memory lives (`None` inside a Flyte task).
        transport: An httpx transport for the base download (the emulator in process).
        baselines: Where the base commit's baseline is found or kept (as `evaluate`).
    """
    started = time.perf_counter()
    config = instance_settings(settings, instance)
    result = InstanceResult(
        instance_id=instance.instance_id,
        resolved=False,
        repo=instance.repo,
        base_commit=instance.base_commit,
        outcome="change",
        model=prediction.model_name_or_path,
    )
    patch = prediction.model_patch
    empty = result.model_copy(
        update={"outcome": "empty", "reason": "the prediction's patch is empty: no change"}
    )
    if not patch.strip() and not check_gold:
        return empty
    try:
        snapshot = await _snapshot(config, instance, transport)
        files: dict[str, str | None] = {}
        if not patch.strip():
            result = empty
        else:
            try:
                if not parse_patch(patch):  # text, but no diff: not "a change of nothing"
                    raise PatchError(
                        "no file's diff in it (a unified diff, as `git diff` writes it: "
                        "`diff --git a/F b/F` or `--- a/F` and `+++ b/F`, then its hunks)"
                    )
                files = apply_patch(await _files(snapshot, patch_paths(patch)), patch)
            except PatchError as exc:
                result = result.model_copy(
                    update={"outcome": "unapplied", "reason": f"patch does not apply: {exc}"}
                )
            else:
                if not files:
                    result = empty.model_copy(update={"reason": "the patch changes nothing"})
        score = empty_score = None
        if result.outcome == "change" or check_gold:
            async with open_runtime(
                config,
                Role.BUILDER,
                memory_root=memory_root,
                offline=True,
                baselines=baselines if baselines is not None else shared_store(),
            ) as rt:
                if result.outcome == "change":
                    score = await score_change(rt, instance, snapshot, files)
                if check_gold and instance.FAIL_TO_PASS:
                    empty_score = await score_change(rt, instance, snapshot, {}, empty=True)
        if score is not None:
            result = await _with_score(result, score, snapshot, files)
        if check_gold:
            check = _gold_check(instance, result, empty_score)
            result = result.model_copy(update={"gold_check": check})
    except Exception as exc:  # one instance's failure is its result, never the run's
        _log.warning("eval.score_failed", instance=instance.instance_id, error=repr(exc))
        problem = f"{type(exc).__name__}: {exc}"
        result = result.model_copy(update={"outcome": "error", "error": problem})
        if check_gold and not isinstance(exc, GitHubUnavailable):
            # GitHub down or unreachable says nothing of the instance: left unchecked
            # (`gold_check` None), not called broken.
            check = GoldCheck(valid=False, problems=[f"it could not be scored: {problem}"])
            result = result.model_copy(update={"gold_check": check})
    return result.model_copy(update={"seconds": round(time.perf_counter() - started, 3)})


def _gold_check(instance: Instance, gold: InstanceResult, empty: Score | None) -> GoldCheck:
    """SWE-bench's sanity check of one instance: its gold patch resolves it (`gold`), and
    with no change every `FAIL_TO_PASS` test fails (`empty`: the base with the test
    patch alone), as the instance's own lists say."""
    problems: list[str] = []
    f2p = instance.FAIL_TO_PASS
    if not f2p:
        problems.append("it names no FAIL_TO_PASS test: a change that fixes nothing resolves it")
    if not gold.resolved:
        why = gold.error or gold.reason or "not resolved"
        if gold.failing_tests:
            shown = ", ".join(gold.failing_tests[:3])
            more = len(gold.failing_tests) - 3
            why += f" [{shown}{f' and {more} more' if more > 0 else ''}]"
        problems.append(f"the gold patch does not resolve it: {why}")
    failing: list[str] = []
    if empty is not None:
        failing = [t for t in f2p if empty.tests.get(t) != "passed"]
        passing = [t for t in f2p if t not in failing]
        if empty.error:
            problems.append(f"the empty patch could not be scored: {empty.note}")
        elif len(passing) == len(f2p):
            problems.append(
                "the empty patch resolves its FAIL_TO_PASS tests: every one passes with no change"
            )
        elif passing:
            shown = ", ".join(passing[:3])
            problems.append(
                f"{len(passing)} of {len(f2p)} FAIL_TO_PASS test(s) pass with no change: {shown}"
                + (" ..." if len(passing) > 3 else "")
            )
    return GoldCheck(
        valid=not problems,
        problems=problems,
        empty_failing=failing,
        empty_scoring=empty.line if empty is not None else "",
        empty_seconds=empty.seconds if empty is not None else 0.0,
    )


async def _snapshot(
    settings: Settings, instance: Instance, transport: httpx.AsyncBaseTransport | None
) -> RepoSnapshot:
    """The base commit, from its tarball: the instance's one GitHub request (a read)."""
    async with GitHub(
        instance.repo,
        auth=github_auth(settings),
        base_url=settings.github_api_url,
        transport=transport,
        timeout=settings.github_timeout_seconds,
    ) as github:
        archive = await github.download_archive(instance.base_commit)
    short = instance.base_commit[:7]
    return RepoSnapshot.from_archive(
        archive, instance.base_commit, short, label=f"base commit {short}"
    )


async def _files(snapshot: RepoSnapshot, paths: list[str]) -> dict[str, bytes]:
    """The base's files among `paths` (a path it does not have is left out)."""
    return {p: data for p in paths if (data := await snapshot.read(p)) is not None}


def _with_build(result: InstanceResult, replay: ReplayedBuild, *, model: str) -> InstanceResult:
    return result.model_copy(
        update={
            "outcome": replay.outcome,
            "reason": replay.reason,
            "tries": replay.tries,
            "tokens_in": replay.tokens_in,
            "tokens_out": replay.tokens_out,
            "llm_calls": replay.llm_calls,
            "cost_usd": replay.cost_usd,
            "build_seconds": replay.seconds,
            "model": model,
            "lesson_ids": replay.lesson_ids,
            "verdicts": replay.attempts,
            "visible_tests": replay.tests,
            "github_requests": replay.github_requests,
        }
    )


async def _with_score(
    result: InstanceResult, score: Score, snapshot: RepoSnapshot, files: dict[str, str | None]
) -> InstanceResult:
    diff, problem = "", ""
    if files:
        before = {p: data for p in files if (data := await snapshot.read(p)) is not None}
        after = {p: text for p, text in files.items() if text is not None}
        try:
            diff = diff_files(before, after, files)
        except BinaryChange as exc:
            problem = f"the change cannot be written as a text patch: {exc}"
    reason = result.reason
    # A change whose code reached into the test runner, in the scoring run or in the
    # build's own checks of it, resolves nothing, whatever the reports said.
    visible = result.visible_tests
    own = visible.tampered if visible is not None and visible.status == "tampered" else []
    tampered = list(dict.fromkeys([*score.tampered, *own]))
    if tampered and result.outcome == "change":
        more = f" (and {len(tampered) - 1} more)" if len(tampered) > 1 else ""
        reason = f"tampered: {tampered[0]}{more}"
    elif not score.resolved and result.outcome == "change":
        failing = f"{len(score.failing)} hidden test(s) did not pass" if score.failing else ""
        reason = "; ".join(part for part in (failing, score.note) if part)
    update: dict[str, object] = {
        "resolved": score.resolved and not tampered,
        "tampered": tampered,
        "tests": score.tests,
        "failing_tests": score.failing,
        "score_seconds": score.seconds,
        "scoring": score.line,
        "diff": diff,
        "reason": reason,
    }
    if score.error or problem:
        update |= {"outcome": "error", "error": problem or score.note}
    return result.model_copy(update=update)
