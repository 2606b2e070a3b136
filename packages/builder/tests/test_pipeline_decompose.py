"""A spec issue becomes dependency-ordered sub-issues; a dependent waits for its upstream."""

from __future__ import annotations

from collections.abc import Callable

from agent_loop_builder import parse_depends_on, parse_sub_issue_marker
from agent_loop_common.records import Outcome
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import GitHubEmulator, ScriptedModel, call, turn
from agent_loop_testing.pytest_plugin import Install

SPEC = """Spec: widgets get a storage layer.

- A widget model.
- A small API over it.
- Documentation.
"""


def _decompose() -> ScriptedModel:
    return ScriptedModel(
        [
            turn(tool_calls=[call("read_issue").expecting("Spec: widgets get a storage layer")]),
            turn(
                tool_calls=[
                    call(
                        "stage_issue",
                        key="api",
                        title="Widget API",
                        body="Add get/put over the model. Accept: tests.",
                        depends_on=["model"],
                    ).expecting("not staged yet")
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "stage_issue",
                        key="model",
                        title="Widget model",
                        body="A dataclass for widgets. Accept: tests.",
                        depends_on=[],
                    )
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "stage_issue",
                        key="docs",
                        title="Document widgets",
                        body="Explain widgets in the README.",
                        depends_on=[],
                    )
                ]
            ),
            turn(
                tool_calls=[
                    call("submit_decomposition", summary="Model first, then the API.").expecting(
                        "Submitted 3 sub-issue(s)"
                    )
                ]
            ),
            turn("Split."),
        ],
        routes={VERIFIER_MARKER: [turn('{"verified": true, "notes": "Covers the spec."}')]},
    )


def _skip(reason: str) -> ScriptedModel:
    return ScriptedModel([turn(tool_calls=[call("skip_issue", reason=reason)]), turn("Skipped.")])


async def test_a_spec_becomes_ordered_sub_issues_and_dependents_wait(
    emulator: GitHubEmulator,
    tick: Callable[..., object],
    install: Install,
) -> None:
    spec = emulator.add_issue("Widget storage", SPEC)
    model = install(_decompose())

    record = await tick()

    model.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.OPENED_ISSUES
    assert record.attempts[0].staged_paths == [
        "issue:Widget model",
        "issue:Widget API",
        "issue:Document widgets",
    ]
    numbers = [int(url.rsplit("/", 1)[1]) for url in record.links.issue_urls]
    model_n, api_n, docs_n = numbers
    assert [emulator.issue(n).title for n in numbers] == [
        "Widget model",
        "Widget API",
        "Document widgets",
    ]
    assert all(emulator.issue(n).author == emulator.bot for n in numbers)
    assert parse_depends_on(emulator.issue(api_n).body or "") == (model_n,)
    assert parse_depends_on(emulator.issue(docs_n).body or "") == ()
    marker = parse_sub_issue_marker(emulator.issue(api_n).body or "")
    assert marker is not None
    assert (marker.spec, marker.key, marker.run) == (spec, "api", record.run_id)
    assert emulator.issue(spec).state == "closed"
    listing = next(c.body for c in emulator.comments(spec) if "Split into 3" in c.body)
    assert f"#{api_n} Widget API (depends on #{model_n})" in listing

    dependent = await tick(api_n)
    assert dependent is not None
    assert dependent.outcome is Outcome.SKIPPED
    assert dependent.error == f"#{api_n} waits for #{model_n} to close"
    assert dependent.target.title == ""

    first = install(_skip("Already covered by the existing code."))
    upstream = await tick()
    first.assert_finished()
    assert upstream is not None
    assert upstream.target.number == model_n
    assert upstream.outcome is Outcome.SKIPPED

    emulator.close_issue(model_n)
    then = install(_skip("Needs a decision on the storage format."))
    after = await tick()
    then.assert_finished()
    assert after is not None
    assert after.target.number == api_n
