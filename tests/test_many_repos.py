"""Many repositories and parallel slots, end to end: `agent-loop run builder` over a
`GitHubHost` served on loopback, Flyte local mode, the stateless `InstantModel`.

Covers issue 17: `owner/*` expansion through the API, a repository that fails (404)
recorded and skipped while the others go on, fairness across repositories over ticks,
and K concurrent slots (and two concurrent ticks) never sharing a claim.
"""

from __future__ import annotations

import os
import pathlib
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from agent_loop import cli
from agent_loop_builder import scout_issues
from agent_loop_common.records import Outcome, Role
from agent_loop_common.runtime import (
    TickSummary,
    Work,
    WorkTask,
    fair_order,
    fleet_tick,
    plan_slots,
    use_model,
)
from agent_loop_common.settings import load_settings
from agent_loop_testing import GitHubHost, InstantModel

pytestmark = pytest.mark.slow

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> Iterator[GitHubHost]:
    for key in list(os.environ):
        if key.startswith(("GITHUB_", "AGENT_LOOP_")) and key != "AGENT_LOOP_ALLOW_MODEL_REQUESTS":
            monkeypatch.delenv(key)
    gh = GitHubHost(["acme/busy", "acme/quiet", "acme/gone"])
    for em in gh:
        em.seed_files({"README.md": "# hi\n"})
    for n in range(4):
        gh["acme/busy"].add_issue(f"Busy {n}", body="Do it.")
    gh["acme/quiet"].add_issue("Quiet 0", body="Do it.")
    with gh.serve() as url, use_model(InstantModel(), label="instant"):
        monkeypatch.setenv("GITHUB_API_URL", url)
        monkeypatch.setenv("GITHUB_TOKEN", gh.bot_token)
        monkeypatch.setenv("AGENT_LOOP_HOME", str(tmp_path / "home"))
        monkeypatch.setenv("AGENT_LOOP_SANDBOX", "off")
        yield gh


def _tick(capsys: pytest.CaptureFixture[str]) -> TickSummary:
    code = cli.main(["run", "builder", "--json"])
    out, err = capsys.readouterr()
    assert code in (0, 1, 2), err  # 2: a repository was never reached
    return TickSummary.model_validate_json(out.strip().splitlines()[-1])  # after the events


def _runs(summary: TickSummary) -> list[TickSummary]:
    return summary.runs or ([] if summary.idle else [summary])


def test_owner_star_lists_the_repositories_and_a_failing_one_is_recorded_and_skipped(
    host: GitHubHost, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    host.remove("acme/gone")  # its access was revoked: GitHub answers 404
    monkeypatch.setenv("AGENT_LOOP_REPOS", "acme/*,acme/gone")
    first = _tick(capsys)
    runs = _runs(first)
    failed = [r for r in runs if r.preflight_failed]
    assert [r.repo for r in failed] == ["acme/gone"]
    assert not any(r.failed for r in runs)  # never reached: not one of the agents' errors
    assert "NotFound" in failed[0].error
    worked = [r for r in runs if r.outcome == Outcome.OPENED_PR]
    assert [(r.repo, r.target) for r in worked] == [("acme/busy", "issue#1")]  # oldest first
    # The next tick serves the repository that waited, although busy has older work.
    second = [r for r in _runs(_tick(capsys)) if r.outcome == Outcome.OPENED_PR]
    assert [(r.repo, r.target) for r in second] == [("acme/quiet", "issue#1")]
    assert host["acme/quiet"].pulls()[0].head_ref.startswith("agent-loop/")
    status = cli.main(["status"])
    out = capsys.readouterr().out
    assert status == 0
    for repo in ("acme/busy", "acme/quiet"):
        assert repo in out  # runs grouped by repository
    apart = out[out.index("Failed before reaching a target (2)") :]
    header, _rule, *rows = apart.splitlines()[1:5]
    assert "what to fix" in header
    # shown apart from the runs, once a tick
    assert ["acme/gone" in row for row in rows] == [True, True]


def test_parallel_slots_and_concurrent_ticks_never_share_a_claim(
    host: GitHubHost, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    host.remove("acme/gone")
    monkeypatch.setenv("AGENT_LOOP_REPOS", "acme/busy,acme/quiet")
    monkeypatch.setenv("AGENT_LOOP_BUILDER_PARALLEL", "4")
    summary = _tick(capsys)
    opened = [r for r in _runs(summary) if r.outcome == Outcome.OPENED_PR]
    assert len(opened) == 4
    assert len({(r.repo, r.target) for r in opened}) == 4
    assert {r.repo for r in opened} == {"acme/busy", "acme/quiet"}
    # Two ticks at once over what is left (busy #4 and nothing else): one PR, no twin.
    results: list[int] = []

    def tick() -> None:
        results.append(cli.main(["run", "builder", "--json"]))

    threads = [threading.Thread(target=tick) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    capsys.readouterr()
    pulls = [p for em in host for p in em.pulls()]
    heads = [p.head_ref for p in pulls]
    assert len(heads) == len(set(heads)) == 5


def test_fair_order_takes_turns_and_oldest_first() -> None:
    busy = [Work("a/busy", n, T0 + timedelta(minutes=n)) for n in range(1, 6)]
    quiet = [Work("a/quiet", 7, T0 + timedelta(hours=1))]
    order = fair_order({"a/busy": busy, "a/quiet": quiet}, {})
    assert [(w.repo, w.number) for w in order[:3]] == [
        ("a/busy", 1),
        ("a/quiet", 7),
        ("a/busy", 2),
    ]
    # Served last: it waits for the others, whatever the age of its work.
    later = fair_order({"a/busy": busy, "a/quiet": quiet}, {"a/busy": T0})
    assert later[0].repo == "a/quiet"


def test_plan_slots_never_share_a_target() -> None:
    work = [Work("a/x", n, T0 + timedelta(minutes=n)) for n in range(1, 9)]
    slots = plan_slots(work, 2)
    numbers = [n for s in slots for n in s.numbers]
    assert len(numbers) == len(set(numbers))
    assert [s.numbers[0] for s in slots] == [1, 2]
    assert all(len(s.numbers) <= 3 for s in slots)


async def test_a_slot_that_fails_outright_does_not_hide_the_others(
    host: GitHubHost, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    host.remove("acme/gone")
    monkeypatch.setenv("AGENT_LOOP_REPOS", "acme/busy,acme/quiet")
    monkeypatch.setenv("AGENT_LOOP_BUILDER_PARALLEL", "2")
    settings = load_settings()

    async def work(repo: str, among: list[int]) -> TickSummary:
        if repo == "acme/busy":
            raise RuntimeError("the action's container was lost")
        return TickSummary(
            role=Role.BUILDER, outcome=Outcome.OPENED_PR, target=f"issue#{among[0]}", repo=repo
        )

    summary = await fleet_tick(
        settings,
        Role.BUILDER,
        scout=scout_issues,
        work=WorkTask(work),
        idle="no eligible issue",
        memory_root=str(tmp_path / "mem"),
    )
    assert [(r.repo, r.outcome) for r in summary.runs] == [
        ("acme/busy", Outcome.ERROR),
        ("acme/quiet", Outcome.OPENED_PR),
    ]
    assert "container was lost" in summary.runs[0].error
    assert summary.failed


def test_one_target_run_names_its_repository_with_repo(
    host: GitHubHost, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_LOOP_REPOS", "acme/busy,acme/quiet")

    assert cli.main(["run", "builder", "--issue", "1", "--json"]) == 2
    assert "add --repo OWNER/NAME" in capsys.readouterr().err
    assert cli.main(["run", "builder", "--repo", "acme/other", "--issue", "1"]) == 2
    assert "not in AGENT_LOOP_REPOS" in capsys.readouterr().err

    code = cli.main(["run", "builder", "--repo", "acme/quiet", "--issue", "1", "--json"])
    out = capsys.readouterr().out
    summary = TickSummary.model_validate_json(out.strip().splitlines()[-1])  # after the events
    assert code == 0
    assert (summary.repo, summary.target, summary.outcome) == (
        "acme/quiet",
        "issue#1",
        Outcome.OPENED_PR,
    )
    assert [p.title for p in host["acme/quiet"].pulls()] != []
    assert host["acme/busy"].pulls() == []
    assert os.environ["AGENT_LOOP_REPOS"] == "acme/busy,acme/quiet"  # as it was


def test_a_second_repository_reads_its_own_tarball(
    host: GitHubHost, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The archive redirect of a repository other than the first is served by it."""
    host["acme/quiet"].seed_files({"README.md": "# quiet\n", "src/q.py": "Q = 1\n"})
    monkeypatch.setenv("AGENT_LOOP_REPOS", "acme/quiet")
    summary = _tick(capsys)
    assert (summary.repo, summary.outcome) == ("acme/quiet", Outcome.OPENED_PR), summary.error
