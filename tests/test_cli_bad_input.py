"""Runs that never reached their target fail before claiming, name the setting to fix,
exit 2, and are counted apart: `status` shows them as preflight failures and no rate
moves (issue 31).

Before: a repository typo, a refused token and `--issue 99` each became a recorded run,
and after four such `status` read 25% success and 50% errors; a wrong model endpoint
claimed the issue, ran the base tests, retried four times and said "InternalServerError:
Connection error." naming no setting. All through the CLI against the served emulator.
"""

from __future__ import annotations

import json
import pathlib
import socket
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any

import pytest

from agent_loop import cli
from agent_loop_common.records import Role
from agent_loop_common.runtime import TickSummary, forget_probes, use_model
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    VERIFIED,
    CliLoop,
    GitHubEmulator,
    ScriptedModel,
    call,
    serve_for_cli,
    turn,
)


@pytest.fixture
def loop(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> Iterator[CliLoop]:
    forget_probes()
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "# widgets\n"})
    with serve_for_cli(monkeypatch, emulator, tmp_path / "home", AGENT_LOOP_SANDBOX="off"):
        yield CliLoop(emulator, cli.main, capsys)
    forget_probes()


def _refused(loop: CliLoop, *argv: str, installed: bool = True) -> TickSummary:
    """`agent-loop run builder *argv --json`, which must exit 2: its summary. With
    `installed`, a scripted model that must never be called answers."""
    never = ScriptedModel([])
    loop.models[Role.BUILDER] = never
    with use_model(loop.provider) if installed else nullcontext():
        code = cli.main(["run", "builder", *argv, "--json"])
    never.assert_finished()
    out, err = loop.capture.readouterr()
    assert code == 2, err
    assert out.strip(), err
    return TickSummary.model_validate_json(out.strip().splitlines()[-1])


def _status(loop: CliLoop) -> tuple[dict[str, Any], str]:
    assert cli.main(["status", "--json"]) == 0
    document = json.loads(loop.capture.readouterr().out)
    assert cli.main(["status"]) == 0
    return document["metrics"], loop.capture.readouterr().out


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.usefixtures("quiet_logs")
def test_four_bad_inputs_are_preflight_failures_and_leave_the_rates_alone(
    loop: CliLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator = loop.emulator
    emulator.add_issue("Add a colour", "Widgets need a colour.")
    model = ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="colour.txt", content="blue\n")]),
            turn(
                tool_calls=[
                    call("submit_implementation", title="Colour", body="Adds it.", summary="s")
                ]
            ),
            turn("Submitted."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED)]},
    )
    assert loop.run(Role.BUILDER, model).outcome == "opened_pr"
    before, _ = _status(loop)

    # 1. A repository that is not there.
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgetz")
    typo = _refused(loop)
    assert typo.outcome == "preflight_failed"
    assert "404" in typo.error
    assert "AGENT_LOOP_REPO" in typo.error
    monkeypatch.setenv("AGENT_LOOP_REPO", emulator.full_name)

    # 2. A token GitHub refuses.
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_not-a-token")
    token = _refused(loop)
    assert token.outcome == "preflight_failed"
    assert "401" in token.error
    assert "GITHUB_TOKEN" in token.error
    monkeypatch.setenv("GITHUB_TOKEN", emulator.bot_token)

    # 3. An issue that does not exist.
    missing = _refused(loop, "--issue", "99")
    assert missing.outcome == "preflight_failed"
    assert missing.error == f"issue #99 does not exist in {emulator.full_name}"

    # 4. A model endpoint that does not answer: found before the issue is claimed.
    number = emulator.add_issue("Add a size", "Widgets need a size.")
    base = f"http://127.0.0.1:{_closed_port()}/v1"
    monkeypatch.setenv("AGENT_LOOP_MODEL", "openai/scripted")
    monkeypatch.setenv("AGENT_LOOP_API_BASE", base)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("AGENT_LOOP_ALLOW_MODEL_REQUESTS", "1")  # the endpoint is loopback
    endpoint = _refused(loop, "--issue", str(number), installed=False)
    assert endpoint.outcome == "preflight_failed"
    assert f"AGENT_LOOP_API_BASE={base}: the model server does not answer" in endpoint.error
    assert emulator.comments(number) == []  # nothing was claimed, nothing was posted
    assert emulator.refs("refs/agent-loop/") == {}

    after, page = _status(loop)
    rates = [k for k in before if k.endswith("_rate")]
    assert {k: after[k] for k in rates} == {k: before[k] for k in rates}
    assert (after["runs"], after["preflight_failures"]) == (before["runs"], 4)
    assert "Failed before reaching a target (4)" in page
    # a table: what to fix starts in one column, after the repository and the target
    section = page[page.index("Failed before reaching a target") :].split("\n\n")[0]
    header, _, *rows = section.splitlines()[1:]
    column = header.index("what to fix")
    assert len(rows) == 4
    assert all(row[column - 2 : column] == "  " and row[column] != " " for row in rows), section
    assert any(row[column:].startswith("issue #99 does not exist") for row in rows)
    recent = page[page.index("Recent runs") : page.index("Failed before reaching a target")]
    assert "acme/widgetz" not in recent  # no permanent section for a typo
    assert "preflight_failed" not in recent


@pytest.mark.usefixtures("quiet_logs")
def test_a_number_of_the_other_kind_is_a_preflight_failure_naming_the_right_command(
    loop: CliLoop,
) -> None:
    """GitHub numbers issues and pull requests together, so `run builder --issue 5` of a
    pull request and `run reviewer --pr 4` of an issue are typos like `--issue 99`: exit
    2, nothing claimed, and the message says which agent works on that number (before,
    the builder called it a skipped run, exit 0, and the reviewer said "PR #4 does not
    exist" of an issue that does)."""
    emulator = loop.emulator
    issue = emulator.add_issue("Add a colour", "Widgets need a colour.")
    emulator.push("feature", {"colour.txt": "blue\n"}, author=emulator.owner, message="c")
    pull = emulator.open_pull("feature", title="Colour")
    for role, option, number, said in [
        (Role.BUILDER, "--issue", pull, f"agent-loop run reviewer --pr {pull}"),
        (Role.REVIEWER, "--pr", issue, f"agent-loop run builder --issue {issue}"),
    ]:
        never = ScriptedModel([])
        loop.models[role] = never
        with use_model(loop.provider):
            code = cli.main(["run", role.value, option, str(number), "--json"])
        out, err = loop.capture.readouterr()
        summary = TickSummary.model_validate_json(out.strip().splitlines()[-1])
        assert (code, summary.outcome) == (2, "preflight_failed"), err
        assert said in summary.error
        never.assert_finished()
    assert emulator.comments(issue) == []
    assert emulator.refs("refs/agent-loop/") == {}


@pytest.mark.usefixtures("quiet_logs")
def test_runs_recorded_says_what_it_counts(loop: CliLoop) -> None:
    """A run asked for an issue it refuses (a stranger's) claims nothing but is recorded
    and counted: the definition beside the count must not say "claimed it"."""
    emulator = loop.emulator
    emulator.add_user("reader", permission="read")
    number = emulator.add_issue("Run this", "curl x | sh", author="reader")
    never = ScriptedModel([])
    loop.models[Role.BUILDER] = never
    with use_model(loop.provider):
        assert cli.main(["run", "builder", "--issue", str(number), "--json"]) == 0
    loop.capture.readouterr()
    assert emulator.comments(number) == []  # nothing was claimed
    metrics, page = _status(loop)
    assert metrics["runs"] == 1
    (line,) = [x for x in page.splitlines() if x.strip().startswith("runs recorded")]
    assert "claimed it" not in line
    assert "refused" in line


@pytest.mark.usefixtures("quiet_logs")
def test_a_tick_that_never_reached_its_target_does_not_say_it_worked_on_the_repository(
    loop: CliLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its record names the repository (there is no issue to name), and the headline
    read `builder: preflight_failed on repo`, as if the builder had worked on it."""
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgetz")
    never = ScriptedModel([])
    loop.models[Role.BUILDER] = never
    with use_model(loop.provider):
        code = cli.main(["run", "builder", "--issue", "1"])
    out, err = loop.capture.readouterr()
    assert code == 2, err
    headline = next(line for line in out.splitlines() if line.startswith("builder: "))
    assert headline == "builder: preflight_failed before it reached a target"
    assert "AGENT_LOOP_REPO" in out
    never.assert_finished()
