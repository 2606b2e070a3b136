"""`agent-loop status` shows ticks the GitHub rate-limit reserve held back, with why."""

from __future__ import annotations

import asyncio
import os
import pathlib
from datetime import UTC, datetime, timedelta

import pytest

from agent_loop import cli
from agent_loop_common.memory import count_paused_run
from agent_loop_common.records import Role
from agent_loop_common.runtime import local_memory
from agent_loop_common.settings import load_settings


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith(("GITHUB_", "AGENT_LOOP_")) and key != "AGENT_LOOP_ALLOW_MODEL_REQUESTS":
            monkeypatch.delenv(key)


def test_status_names_paused_ticks_and_when_they_resume(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    location = local_memory(load_settings(repo="acme/widgets", github_token="x", home=home))
    now = datetime.now(UTC)
    until = now + timedelta(minutes=20)
    note = "GitHub rate limit: 400 of 5000 requests left, at or below the reserve of 500"
    for _ in range(2):
        asyncio.run(count_paused_run(location, Role.BUILDER, note=note, until=until, now=now))

    assert cli.main(["status", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert f"Paused builder ticks on {now.date().isoformat()}: 2" in out
    assert until.strftime("%Y-%m-%d %H:%M UTC") in out
    assert "(still paused)" in out
    assert note in out
    assert "Idle runs" not in out  # a paused tick is not an idle one
