"""`agent-loop`: argument handling, configuration errors, `status` over a real local memory."""

from __future__ import annotations

import asyncio
import json
import pathlib
import socket
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_loop import cli
from agent_loop.deploy import ROOT
from agent_loop_common.memory import (
    DistillerMemory,
    MemoryLocation,
    count_idle_run,
    write_run_record,
)
from agent_loop_common.records import (
    Attempt,
    Grade,
    GradeState,
    Lesson,
    LessonBook,
    Links,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
    Usage,
)
from agent_loop_common.runtime import TickSummary, local_memory, local_raw_data_path
from agent_loop_common.settings import load_settings

_GITHUB_AND_LOOP = ("GITHUB_", "AGENT_LOOP_")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No setting from the machine running the tests leaks into these."""
    import os

    for key in list(os.environ):
        if key.startswith(_GITHUB_AND_LOOP) and key != "AGENT_LOOP_ALLOW_MODEL_REQUESTS":
            monkeypatch.delenv(key)


def _cluster_config(folder: pathlib.Path) -> pathlib.Path:
    """A Flyte config naming a cluster (nothing connects to it in these tests)."""
    config = folder / "cluster.yaml"
    config.write_text("admin:\n  endpoint: dns:///flyte.example.com:443\n")
    return config


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_missing_configuration_exits_2_naming_each_variable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _run(["run", "builder"], capsys)
    assert code == cli.EXIT_CONFIG
    assert out == ""
    assert "AGENT_LOOP_REPO: not set" in err
    assert "GITHUB_TOKEN" in err
    assert "Traceback" not in err


def test_invalid_value_names_the_variable_and_what_to_set(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_LOOP_REPO", "not a repository")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret_value")
    monkeypatch.setenv("AGENT_LOOP_MAX_TRIES", "zero")
    code, _, err = _run(["run", "reviewer", "--pr", "3"], capsys)
    assert code == cli.EXIT_CONFIG
    assert "AGENT_LOOP_REPO: 'not a repository' is invalid" in err
    assert "owner/name" in err
    assert "AGENT_LOOP_MAX_TRIES" in err
    assert "ghp_secret_value" not in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["run", "builder", "--pr", "3"], "unrecognized arguments: --pr"),
        (["run", "reviewer", "--issue", "3"], "unrecognized arguments: --issue"),
        (["run", "distiller", "--issue", "1"], "unrecognized arguments: --issue"),
        (["run", "builder", "--issue", "0"], "expected a positive number"),
        (["run", "builder", "--issue", "x"], "expected a number"),
        (["run", "planner"], "invalid choice: 'planner'"),
        (["deploy", "everything"], "invalid choice: 'everything'"),
        ([], "required: COMMAND"),
    ],
)
def test_bad_usage_exits_2_with_argparse_message(
    argv: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    assert complaint in capsys.readouterr().err


def test_run_arguments_reach_the_agent(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    """`run` loads settings, passes the target and --remote, and prints the summary."""
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgets")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    monkeypatch.setenv("AGENT_LOOP_HOME", str(tmp_path))
    seen: list[tuple[str, int | None, bool]] = []

    def fake_run(
        agent: str, settings: Any, *, target: int | None, remote: bool, retry_now: bool
    ) -> TickSummary:
        assert settings.repo == "acme/widgets"
        seen.append((agent, target, remote))
        return TickSummary(
            role=Role.BUILDER, run_id="r1", outcome=Outcome.OPENED_PR, pr_url="http://x/pull/4"
        )

    monkeypatch.setattr(cli, "run_agent_once", fake_run)
    config = _cluster_config(tmp_path)
    code, out, err = _run(
        ["run", "builder", "--issue", "7", "--remote", "--config", str(config)], capsys
    )
    assert code == 0
    assert seen == [("builder", 7, True)]
    assert "builder: opened_pr -> http://x/pull/4" in out  # no target known: no "on ?"
    assert "run_id: r1" in out
    assert (
        "one builder tick on #7 for acme/widgets on the Flyte cluster "
        f"dns:///flyte.example.com:443 (config {config})" in err
    )


def test_a_failed_tick_exits_1_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgets")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")

    def failing(*_: Any, **__: Any) -> TickSummary:
        raise RuntimeError("no Flyte config found")

    monkeypatch.setattr(cli, "run_agent_once", failing)
    config = _cluster_config(tmp_path)
    code, _, err = _run(["run", "distiller", "--remote", "--config", str(config)], capsys)
    assert code == cli.EXIT_FAILED
    assert "the distiller tick failed: RuntimeError: no Flyte config found" in err
    assert "Traceback" not in err


def test_deploy_passes_agent_dry_run_and_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    from agent_loop import deploy

    calls: list[tuple[str, bool, pathlib.Path | None]] = []

    def record(agent: str, *, dry_run: bool, config: pathlib.Path | None) -> int:
        calls.append((agent, dry_run, config))
        return 1

    monkeypatch.setattr(deploy, "deploy_agent", record)
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgets")
    # A real deploy first connects to the cluster's endpoint: here one that listens.
    with socket.create_server(("127.0.0.1", 0)) as cluster:
        config = tmp_path / "cluster.yaml"
        port = cluster.getsockname()[1]
        config.write_text(f"admin:\n  endpoint: dns:///127.0.0.1:{port}\n")
        assert cli.main(["deploy", "reviewer", "--dry-run", "--config", str(config)]) == 1
        assert cli.main(["deploy", "builder", "--config", str(config)]) == 1
    assert cli.main(["deploy", "distiller", "--dry-run"]) == 1
    assert calls == [
        ("reviewer", True, config),
        ("builder", False, config),
        ("distiller", True, None),  # the offline config
    ]


# ------------------------------------------------------------------ status

_T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _record(
    run_id: str,
    role: Role,
    kind: TargetKind,
    number: int | None,
    outcome: Outcome,
    minutes: int,
    **extra: Any,
) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        role=role,
        target=Target(kind=kind, number=number, title=f"title of {run_id}"),
        outcome=outcome,
        started_at=_T0 + timedelta(minutes=minutes),
        finished_at=_T0 + timedelta(minutes=minutes, seconds=42),
        usage=Usage(tokens_in=1_000, tokens_out=200, llm_calls=3, cost_usd=0.5),
        **extra,
    )


async def _fill_memory(home: pathlib.Path) -> None:
    settings = load_settings(repo="acme/widgets", github_token="x", home=home)
    location = local_memory(settings)
    records = [
        _record(
            "run-b1",
            Role.BUILDER,
            TargetKind.ISSUE,
            1,
            Outcome.OPENED_PR,
            0,
            attempts=[Attempt(number=1, verified=False), Attempt(number=2, verified=True)],
            links=Links(pr_url="https://github.com/acme/widgets/pull/4"),
        ),
        _record(
            "run-b2",
            Role.BUILDER,
            TargetKind.ISSUE,
            2,
            Outcome.REJECTED,
            5,
            attempts=[Attempt(number=1, verified=False)],
            error="every try was rejected",
        ),
        _record("run-r1", Role.REVIEWER, TargetKind.PR, 4, Outcome.PUSHED_FIX, 10),
    ]
    for record in records:
        await write_run_record(location, record, now=record.finished_at)
    await count_idle_run(location, Role.REVIEWER, now=_T0 + timedelta(minutes=20))
    memory = await DistillerMemory.open(location)
    batch = await memory.collect(now=_T0 + timedelta(hours=2))
    lesson = Lesson(
        id="L-0001",
        text="Stage tests with every behavior change.",
        roles=[Role.BUILDER],
        source_run_ids=["run-b1", "run-b2"],
        created_at=_T0,
        updated_at=_T0,
    )
    grade = Grade(
        target=Target(kind=TargetKind.PR, number=4),
        state=GradeState.MERGED,
        review_rounds=1,
        graded_at=_T0 + timedelta(hours=1),
        opened_at=_T0,
    )
    await memory.commit(
        batch, lessons=LessonBook(lessons=[lesson]), digest="# Digest\n", grades=[grade]
    )


def test_status_shows_runs_metrics_and_lessons(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    asyncio.run(_fill_memory(home))
    code, out, _ = _run(["status", "--home", str(home)], capsys)
    assert code == 0
    lines = out.splitlines()
    runs = [line for line in lines if line.startswith("  2026-03-02")]
    assert len(runs) == 3
    # newest first
    assert "reviewer" in runs[0]
    assert "pushed_fix" in runs[0]
    assert "rejected" in runs[1]
    assert "every try was rejected" in runs[1]
    assert "✗✓" in runs[2]
    assert "https://github.com/acme/widgets/pull/4" in runs[2]
    assert "Idle runs (nothing to claim): reviewer 1 on 2026-03-02" in out
    metric = {line[2:22].strip(): line[22:] for line in lines if line.startswith("  ")}
    assert "1" in metric["PRs opened"]
    assert "67%" in metric["success rate"]  # 2 delivered of 3 that did the work
    assert "$1.50" in metric["cost"]
    assert "100%" in metric["merged"]
    assert "L-0001" in out
    assert "Stage tests with every behavior change." in out
    assert "2 run(s)" in out
    assert "Context digest: 9 characters" in out


def test_status_of_an_empty_home_says_how_to_start(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(["status", "--home", str(tmp_path)], capsys)
    assert code == 0
    assert "No runs recorded yet" in out
    assert "agent-loop demo" in out


def test_a_tick_that_ended_in_error_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgets")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")  # the preflight's model key

    def errored(*_: Any, **__: Any) -> TickSummary:
        return TickSummary(role=Role.REVIEWER, run_id="r2", outcome=Outcome.ERROR, target="pr#5")

    monkeypatch.setattr(cli, "run_agent_once", errored)
    code, out, _ = _run(["run", "reviewer"], capsys)
    assert code == cli.EXIT_FAILED
    assert out.startswith("reviewer: error on PR #5")


def test_a_command_leaves_the_logging_configuration_as_it_found_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Tests and scripts call `main` in process: nothing may stay bound to its streams."""
    import logging

    import structlog

    before = structlog.get_config()
    handlers = list(logging.getLogger().handlers)
    assert cli.main(["run", "builder"]) == cli.EXIT_CONFIG
    assert structlog.get_config() == before
    assert logging.getLogger().handlers == handlers
    capsys.readouterr()


# ---------------------------------------------------------------- status --remote
# A deployment's memory, read from its storage root (AGENT_LOOP_MEMORY_ROOT) through
# Flyte's storage layer, with the same page and --json as local runs. The storage here is
# Flyte's local layout (<root>/agents/memory-store/v0/<org>/<project>/<domain>/<key>, what
# a local-mode run writes) addressed as a file:// URL, so the keys are listed and read
# through fsspec as on a bucket; the Flyte config names a cluster never contacted.

OFFLINE = ROOT / "infra" / "flyte" / "offline.yaml"


@pytest.fixture
def _no_flyte_config(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    """No Flyte config where flyte looks, unless a test names one."""
    for key in ("FLYTECTL_CONFIG", "UCTL_CONFIG", "FLYTE_ADMIN_ENDPOINT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def deployment(tmp_path: pathlib.Path) -> tuple[pathlib.Path, str]:
    """A home whose memory a run wrote, and its storage root as a URL."""
    home = tmp_path / "home"
    asyncio.run(_fill_memory(home))
    settings = load_settings(repo="acme/widgets", github_token="x", home=home)
    root = local_raw_data_path(settings)
    assert (root / "agents/memory-store/v0").is_dir()  # Flyte's layout
    return home, root.as_uri()


@pytest.mark.usefixtures("_no_flyte_config")
def test_remote_status_reads_the_same_memory_with_the_same_page_and_json(
    deployment: tuple[pathlib.Path, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, root = deployment
    code, local, _ = _run(["status", "--home", str(home)], capsys)
    assert code == 0
    _, local_json, _ = _run(["status", "--home", str(home), "--json"], capsys)

    monkeypatch.setenv("AGENT_LOOP_MEMORY_ROOT", root)
    code, remote, err = _run(["status", "--remote", "--config", str(OFFLINE)], capsys)
    assert code == 0, err
    assert remote == local
    assert "L-0001" in remote
    assert "Stage tests with every behavior change." in remote
    code, remote_json, _ = _run(["status", "--remote", "--config", str(OFFLINE), "--json"], capsys)
    assert code == 0
    local_doc, remote_doc = json.loads(local_json), json.loads(remote_json)
    assert remote_doc == local_doc  # the same root, reached as a deployment's
    assert [r["run_id"] for r in remote_doc["records"]] == ["run-r1", "run-b2", "run-b1"]
    assert [lesson["id"] for lesson in remote_doc["lessons"]] == ["L-0001"]


def test_show_prints_one_run_from_local_or_remote_memory(
    deployment: tuple[pathlib.Path, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, root = deployment
    code, local, err = _run(["show", "run-b2", "--home", str(home)], capsys)
    assert code == 0, err
    assert local.startswith("run run-b2 · builder · ")
    assert "  cost        $" in local
    monkeypatch.setenv("AGENT_LOOP_MEMORY_ROOT", root)
    code, remote, err = _run(["show", "run-b", "--remote", "--config", str(OFFLINE)], capsys)
    assert code == 1  # a prefix of two runs
    assert "'run-b' is the start of 2 run ids (run-b2, run-b1)" in err
    code, remote, err = _run(["show", "run-b2", "--remote", "--config", str(OFFLINE)], capsys)
    assert code == 0, err
    assert remote == local  # the same record, reached as a deployment's
    code, _, err = _run(["show", "run-b2", "--home", str(home), "--remote"], capsys)
    assert code == cli.EXIT_CONFIG
    assert "agent-loop show: --home reads local runs" in err


@pytest.mark.usefixtures("_no_flyte_config")
def test_remote_status_without_a_memory_root_exits_2_naming_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _run(["status", "--remote", "--config", str(OFFLINE)], capsys)
    assert code == cli.EXIT_CONFIG
    assert "AGENT_LOOP_MEMORY_ROOT: not set" in err
    assert out == ""


@pytest.mark.usefixtures("_no_flyte_config")
def test_remote_status_without_a_flyte_config_exits_2_naming_it(
    deployment: tuple[pathlib.Path, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AGENT_LOOP_MEMORY_ROOT", deployment[1])
    code, _, err = _run(["status", "--remote"], capsys)
    assert code == cli.EXIT_CONFIG
    assert "No Flyte config found" in err
    assert "status --remote needs a Flyte config" in err


@pytest.mark.usefixtures("_no_flyte_config")
def test_home_and_remote_together_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["status", "--remote", "--home", "x"], capsys)
    assert code == cli.EXIT_CONFIG
    assert "use one" in err


@pytest.mark.usefixtures("_no_flyte_config")
def test_a_remote_root_with_no_memory_yet_is_an_empty_status(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_LOOP_MEMORY_ROOT", (tmp_path / "bucket").as_uri())
    code, out, _ = _run(["status", "--remote", "--config", str(OFFLINE)], capsys)
    assert code == 0
    assert "No runs recorded yet" in out


def test_a_buckets_keys_are_listed_through_flytes_storage() -> None:
    """MemoryStore lists no keys: on a bucket they are listed through fsspec (here its
    in-memory filesystem, addressed by URL as `s3://` would be)."""
    import fsspec

    fs = fsspec.filesystem("memory")
    keys = "/agent-loop-test/agents/memory-store/v0/local/agent-loop/development"
    for key in ("agent-loop-runs-2026030209", "agent-loop-context", "other-prefix-runs-1"):
        fs.pipe(f"{keys}/{key}/messages.json", b"[]")
    settings = load_settings(repo="acme/widgets", github_token="x")
    location = MemoryLocation.from_settings(settings, "memory://agent-loop-test")
    from agent_loop import status

    folder = status._keys_folder(location)  # pyright: ignore[reportPrivateUsage]
    assert folder == f"memory:/{keys}"
    assert status._children(folder) == [  # pyright: ignore[reportPrivateUsage]
        "agent-loop-context",
        "agent-loop-runs-2026030209",
        "other-prefix-runs-1",
    ]
    assert status._children(folder + "/missing") == []  # pyright: ignore[reportPrivateUsage]
    fs.rm("/agent-loop-test", recursive=True)
