"""Kept reports: named after the run, copied out of Flyte's metadata folder, pruned."""

from __future__ import annotations

import os
import pathlib
from datetime import UTC, datetime

import pytest

from agent_loop_common.records import Outcome, Role
from agent_loop_common.runtime import TickSummary
from agent_loop_common.runtime._reports import keep_report, prune_reports, report_name
from agent_loop_common.settings import Settings, load_settings


@pytest.fixture
def home_settings(tmp_path: pathlib.Path) -> Settings:
    return load_settings(repo="acme/widgets", github_token="t", home=tmp_path / "home")


def _run_dir(root: pathlib.Path, html: str = "<h2>tick</h2>") -> pathlib.Path:
    action = root / "run-1" / "a0"
    action.mkdir(parents=True)
    (action / "report.html").write_text(html)
    return root / "run-1"


def test_names_say_which_agent_and_which_run() -> None:
    worked = TickSummary(role=Role.REVIEWER, outcome=Outcome.PUSHED_FIX, run_id="20261202T1Z-ab")
    idle = TickSummary(role=Role.BUILDER, outcome="idle")
    now = datetime(2026, 12, 2, 9, 30, 5, 123456, tzinfo=UTC)
    assert report_name(worked, now) == "reviewer-20261202T1Z-ab.html"
    assert report_name(idle, now) == "builder-idle-20261202T093005123456Z.html"


def test_a_report_is_copied_and_a_folder_outside_flytes_root_is_left_alone(
    home_settings: Settings, tmp_path: pathlib.Path
) -> None:
    run_dir = _run_dir(tmp_path / "elsewhere")
    summary = TickSummary(role=Role.BUILDER, outcome=Outcome.OPENED_PR, run_id="r1")
    kept = keep_report(home_settings, summary, run_dir)
    assert kept == (tmp_path / "home" / "reports" / "builder-r1.html")
    assert kept.read_text() == "<h2>tick</h2>"
    assert run_dir.exists()  # only Flyte's own metadata folders are removed


def test_no_report_keeps_nothing(home_settings: Settings, tmp_path: pathlib.Path) -> None:
    empty = tmp_path / "run-2"
    empty.mkdir()
    summary = TickSummary(role=Role.DISTILLER, outcome="idle")
    assert keep_report(home_settings, summary, empty) is None
    assert not (tmp_path / "home" / "reports").exists()


def test_pruning_keeps_the_newest_and_never_touches_other_files(tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    names = [f"builder-r{i}.html" for i in range(5)]
    for age, name in enumerate(reversed(names)):
        path = folder / name
        path.write_text(name)
        os.utime(path, (1_000_000 - age, 1_000_000 - age))
    (folder / "notes.html").write_text("mine")
    (folder / "keep-me.txt").write_text("mine")
    deleted = prune_reports(folder, keep=2)
    assert sorted(p.name for p in deleted) == names[:3]
    assert sorted(p.name for p in folder.iterdir()) == [
        "builder-r3.html",
        "builder-r4.html",
        "keep-me.txt",
        "notes.html",
    ]
