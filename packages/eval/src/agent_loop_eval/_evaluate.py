"""One instance, start to end: its base from GitHub, the builder's replay, the score.

The only GitHub request of an instance is the tarball of its base commit (a read, from
the instance's own repository, so a SWE-bench file made elsewhere works too). Then the
build runs with no GitHub at all (`replay_build` on `RepoSnapshot.from_archive`, in a
runtime opened `offline`), and only once it has returned is the test patch laid over its
change and run (`score_change`). Every failure becomes the instance's result, never an
exception: one bad instance does not stop a run.

Flyte-free: the eval's task (`env.eval_instance`) calls `evaluate`, and tests call it as
a coroutine against the emulator.
"""

from __future__ import annotations

import time

import httpx
import structlog

from agent_loop_builder import LessonChoice, ReplayAsk, ReplayedBuild, replay_build
from agent_loop_common.github import GitHub, github_auth
from agent_loop_common.records import Role
from agent_loop_common.repo import RepoSnapshot
from agent_loop_common.runtime import open_runtime
from agent_loop_common.sandbox import BaselineStore
from agent_loop_common.settings import Settings
from agent_loop_eval._baselines import shared_store
from agent_loop_eval._instance import Instance
from agent_loop_eval._patches import BinaryChange, diff_files
from agent_loop_eval._results import InstanceResult
from agent_loop_eval._score import Score, score_change

__all__ = ["evaluate", "instance_settings"]

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
        archive = await _download(config, instance, transport)
        short = instance.base_commit[:7]
        snapshot = RepoSnapshot.from_archive(
            archive, instance.base_commit, short, label=f"base commit {short}"
        )
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


async def _download(
    settings: Settings, instance: Instance, transport: httpx.AsyncBaseTransport | None
) -> bytes:
    """The base commit's tarball: the instance's one GitHub request (a read)."""
    async with GitHub(
        instance.repo,
        auth=github_auth(settings),
        base_url=settings.github_api_url,
        transport=transport,
        timeout=settings.github_timeout_seconds,
    ) as github:
        return await github.download_archive(instance.base_commit)


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
