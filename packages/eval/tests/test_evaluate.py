"""`evaluate` as a coroutine: every failure of one instance is that instance's result.

The scoring itself (bubblewrap, the hidden tests) is exercised end to end by the root
`tests/test_e2e_eval.py`; here the paths that need no sandbox: a base that cannot be
downloaded, a build that produced nothing, a test patch that does not apply, and the
settings an instance runs under.
"""

from __future__ import annotations

from datetime import UTC, datetime

from agent_loop_builder import LessonChoice
from agent_loop_common.settings import Settings
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_eval import Instance, evaluate, instance_settings
from agent_loop_testing import (
    VERIFIED,
    CalcHistory,
    GitHubEmulator,
    ScriptedModel,
    call,
    seed_calc_history,
    turn,
)
from agent_loop_testing.pytest_plugin import Install


def _instance(emulator: GitHubEmulator, history: CalcHistory, **fields: object) -> Instance:
    fix = history.fixes[0]
    data: dict[str, object] = {
        "instance_id": f"{emulator.owner}__{emulator.name}-{fix.pull}",
        "repo": emulator.full_name,
        "base_commit": fix.base,
        "problem_statement": f"{fix.title}\n\n{fix.body}",
        "FAIL_TO_PASS": fix.fail_to_pass,
        "PASS_TO_PASS": fix.pass_to_pass,
        "created_at": datetime.now(UTC),
        "issue_numbers": [fix.issue],
        **fields,
    }
    return Instance.model_validate(data)


async def test_a_base_that_cannot_be_downloaded_is_an_error_result(
    emulator: GitHubEmulator, settings: Settings, memory_root: str
) -> None:
    history = seed_calc_history(emulator)
    instance = _instance(emulator, history, base_commit="0" * 40)
    result = await evaluate(
        instance,
        settings,
        lessons=LessonChoice.parse("on"),
        memory_root=memory_root,
        transport=emulator.transport(),
    )
    assert result.outcome == "error"
    assert not result.resolved
    assert "NotFound" in result.error
    assert result.instance_id == instance.instance_id
    assert result.seconds > 0


async def test_a_declined_build_is_scored_as_unresolved_without_running_anything(
    emulator: GitHubEmulator, settings: Settings, memory_root: str, install: Install
) -> None:
    history = seed_calc_history(emulator)
    model = install(
        ScriptedModel([turn(tool_calls=[call("skip_issue", reason="unclear")]), turn("Skipped.")])
    )
    result = await evaluate(
        _instance(emulator, history),
        settings,
        lessons=LessonChoice.parse("off"),
        memory_root=memory_root,
        transport=emulator.transport(),
    )
    model.assert_finished()
    assert (result.outcome, result.resolved, result.reason) == ("declined", False, "unclear")
    assert result.tests == {}
    assert result.diff == ""
    assert result.lessons == "off"
    assert result.github_requests == 0


async def test_a_test_patch_that_does_not_apply_is_the_instances_error(
    emulator: GitHubEmulator, settings: Settings, memory_root: str, install: Install
) -> None:
    history = seed_calc_history(emulator)
    broken = "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -1,1 +1,1 @@\n-not there\n+x\n"
    code = history.fixes[0].before["src/calc.py"] + "\n\ndef subtract(a, b):\n    return a - b\n"
    install(
        ScriptedModel(
            [
                turn(tool_calls=[call("stage_file", path="src/calc.py", content=code)]),
                turn(tool_calls=[call("submit_implementation", title="t", body="b", summary="s")]),
                turn("Submitted."),
            ],
            routes={VERIFIER_MARKER: [turn(VERIFIED)]},
        )
    )
    result = await evaluate(
        _instance(emulator, history, test_patch=broken),
        settings,
        lessons=LessonChoice.parse("on"),
        memory_root=memory_root,
        transport=emulator.transport(),
    )
    assert result.outcome == "error"
    assert "the test patch does not apply" in result.error
    assert result.diff.startswith("diff --git a/src/calc.py b/src/calc.py")
    assert not result.resolved


def test_an_instance_runs_with_its_own_repository_command_and_model(settings: Settings) -> None:
    instance = Instance(
        instance_id="psf__requests-1",
        repo="psf/requests",
        base_commit="a" * 40,
        problem_statement="p",
        created_at=datetime.now(UTC),
        test_command="python -m pytest -q",
    )
    config = instance_settings(
        settings.model_copy(update={"test_junit_report": False}), instance, model="openai/gpt-5"
    )
    assert config.repo == "psf/requests"
    assert config.test_command == "python -m pytest -q"
    assert config.test_junit_report  # scoring reads every test's outcome
    assert (config.model, config.verifier_model) == ("openai/gpt-5", "openai/gpt-5")
    assert instance_settings(settings, instance).model == settings.model
