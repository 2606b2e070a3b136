"""Reports where the user looks: each local tick's report in `<AGENT_LOOP_HOME>/reports/`.

Real ticks through the real CLI (`agent-loop run ...`) in Flyte local mode, against the
emulator served on loopback, with a scripted model installed in-process. Each report is
copied out of Flyte's `/tmp/flyte/metadata/<run>` (which is then removed), its path is
printed, old ones are pruned, and the report names the model that answered. The
distiller's report counts its own pass, so its figures match `agent-loop status`.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from agent_loop import cli
from agent_loop_common.memory import write_run_record
from agent_loop_common.records import Attempt, Links, Outcome, Role, RunRecord, Target, TargetKind
from agent_loop_common.runtime import local_memory
from agent_loop_common.runtime._reports import LOCAL_METADATA_ROOT
from agent_loop_common.settings import load_settings
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import GitHubEmulator, ScriptedModel, call, serve_for_cli, turn
from agent_loop_testing.pytest_plugin import Install

pytestmark = pytest.mark.slow

CORE = "def make_widget(name, colour='blue'):\n    return {'name': name, 'colour': colour}\n"


@pytest.fixture
def served(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, emulator: GitHubEmulator
) -> Iterator[GitHubEmulator]:
    with serve_for_cli(monkeypatch, emulator, tmp_path / "home"):
        yield emulator


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _reported(out: str) -> pathlib.Path:
    (line,) = [line for line in out.splitlines() if line.startswith("  report: ")]
    return pathlib.Path(line.removeprefix("  report: "))


def _left_in_flyte_metadata(run_id: str) -> list[pathlib.Path]:
    if not LOCAL_METADATA_ROOT.is_dir():
        return []
    return [p for p in LOCAL_METADATA_ROOT.glob("*/*/report.html") if run_id in p.read_text()]


def test_a_ticks_report_is_kept_in_the_home_named_after_its_run(
    served: GitHubEmulator,
    install: Install,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    number = served.add_issue("Add a colour", "Widgets need a colour.")
    model = install(
        ScriptedModel(
            [
                turn(tool_calls=[call("stage_file", path="src/core.py", content=CORE)]),
                turn(tool_calls=[call("submit_implementation", title="C", body="b", summary="s")]),
                turn("Done."),
            ],
            routes={VERIFIER_MARKER: [turn('{"verified": true, "notes": "ok"}')]},
        )
    )
    code, out, err = _main(["run", "builder", "--issue", str(number)], capsys)
    model.assert_finished()
    assert code == 0, err
    assert "model scripted" in err  # the headline names the model that will answer
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if not line.startswith("  "))  # after progress
    assert lines[head].startswith(f"builder: opened_pr on issue #{number} -> http")
    shown = [line.split(":")[0].strip() for line in lines[head + 1 : -1]]
    assert shown == ["run_id", "tries", "tests", "github_requests", "report"]
    assert lines[-1].startswith("  took ")  # with the tokens, the cost and the model calls
    assert "model call" in lines[-1]
    run_id = lines[head + 1].removeprefix("  run_id: ")
    report = _reported(out)
    assert report == tmp_path / "home" / "reports" / f"builder-{run_id}.html"
    html = report.read_text()
    assert run_id in html
    assert "<th>Model</th><td>scripted</td>" in html
    assert _left_in_flyte_metadata(run_id) == []  # copied out, Flyte's folder removed


def test_idle_reports_are_pruned_to_the_newest_and_home_is_per_command(
    served: GitHubEmulator,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AGENT_LOOP_KEEP_REPORTS", "2")
    monkeypatch.setenv("AGENT_LOOP_MODEL", "openai/not-called")  # an idle tick calls none
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    other = tmp_path / "other"
    printed: list[pathlib.Path] = []
    for _ in range(3):
        code, out, err = _main(["run", "builder", "--home", str(other)], capsys)
        assert code == 0, err
        assert out.startswith("builder: idle tick, nothing to do")
        printed.append(_reported(out))
    assert os.environ["AGENT_LOOP_HOME"] == str(tmp_path / "home")  # put back after each
    assert all(re.fullmatch(r"builder-idle-\d{8}T\d{12}Z\.html", p.name) for p in printed)
    kept = sorted((other / "reports").iterdir())
    assert kept == sorted(printed[1:])  # the newest two
    assert not (tmp_path / "home").exists()


def _record(run_id: str, issue: int, pr_url: str) -> RunRecord:
    finished = datetime.now(UTC) - timedelta(minutes=3)
    return RunRecord(
        run_id=run_id,
        role=Role.BUILDER,
        target=Target(kind=TargetKind.ISSUE, number=issue, title=f"issue {issue}"),
        outcome=Outcome.OPENED_PR,
        started_at=finished - timedelta(minutes=1),
        finished_at=finished,
        attempts=[Attempt(number=1, verified=True)],
        links=Links(pr_url=pr_url),
    )


def test_the_distillers_report_counts_its_own_pass_as_status_does(
    served: GitHubEmulator, install: Install, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = load_settings()
    location = local_memory(settings)
    for issue in (1, 2):
        served.push(
            f"agent-loop/issue-{issue}",
            {f"f{issue}.py": "x = 1\n"},
            author=served.bot,
            message="fix",
        )
        pr = served.open_pull(f"agent-loop/issue-{issue}", title=f"PR {issue}", author=served.bot)
        url = f"https://github.com/{served.full_name}/pull/{pr}"
        asyncio.run(write_run_record(location, _record(f"b-{issue}", issue, url)))
    model = install(
        ScriptedModel(
            [
                turn(
                    tool_calls=[
                        call(
                            "add_lesson", text="Keep PRs small.", evidence_run_ids=["b-1"], roles=[]
                        )
                    ]
                ),
                turn(tool_calls=[call("finish", summary="One lesson.")]),
                turn("Done."),
            ]
        )
    )
    code, out, err = _main(["run", "distiller"], capsys)
    model.assert_finished()
    assert code == 0, err
    html = _reported(out).read_text()
    assert "scripted" in html  # the model that answered
    assert "this pass" in html
    assert "distiller add_lesson  Keep PRs small." in html  # its progress, as run printed it
    runs_in_report = re.search(r"Runs<b>(\d+)</b>", html)
    assert runs_in_report is not None

    assert cli.main(["status"]) == 0
    status = capsys.readouterr().out
    runs_in_status = re.search(r"runs recorded\s+(\d+)", status)
    assert runs_in_status is not None
    assert runs_in_report.group(1) == runs_in_status.group(1) == "3"
