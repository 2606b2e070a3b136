"""Each agent's image installs its own export of the root lock, and nothing test-only."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from agent_loop.deploy import AGENTS, ROOT, Workspace, lock_drift, write_locks
from agent_loop_common.deploy import agent_image

MEMBERS = ("common", *AGENTS)


def _pins(path: pathlib.Path) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {ln.split("==")[0] for ln in lines if ln and not ln.startswith((" ", "#"))}


def _lock_workspace(tmp: pathlib.Path) -> Workspace:
    """The files `uv export` reads: the root project, its lock, each member's pyproject."""
    for name in ("pyproject.toml", "uv.lock"):
        shutil.copy(ROOT / name, tmp / name)
    for member in MEMBERS:
        (tmp / "packages" / member).mkdir(parents=True)
        shutil.copy(ROOT / "packages" / member / "pyproject.toml", tmp / "packages" / member)
    for agent in AGENTS:
        shutil.copy(ROOT / "packages" / agent / "requirements.lock.txt", tmp / "packages" / agent)
    return Workspace(tmp)


@pytest.mark.parametrize("agent", AGENTS)
def test_committed_exports_match_the_root_lock(agent: str) -> None:
    assert lock_drift(Workspace(ROOT), agent) == ""


@pytest.mark.parametrize("agent", AGENTS)
def test_exports_hold_commons_deps_and_nothing_test_only(agent: str) -> None:
    pins = _pins(Workspace(ROOT).lock_path(agent))
    assert {"flyte", "githubkit", "litellm", "pydantic-settings", "structlog", "hishel"} <= pins
    assert not pins & {"dulwich", "starlette", "uvicorn", "pytest", "pytest-asyncio", "ruff"}
    assert not any(p.startswith("agent-loop") for p in pins)


def test_a_stale_export_is_reported_and_rewritten(tmp_path: pathlib.Path) -> None:
    ws = _lock_workspace(tmp_path)
    lock = ws.lock_path("reviewer")
    lock.write_text(lock.read_text(encoding="utf-8").replace("litellm==", "litellm==0.0.1\n#"))

    drift = lock_drift(ws, "reviewer")
    assert "-litellm==0.0.1" in drift
    assert "+litellm==" in drift
    assert lock_drift(ws, "builder") == ""

    write_locks(ws, ("reviewer",))
    assert lock_drift(ws, "reviewer") == ""


def test_a_dependency_change_moves_only_that_agents_image(tmp_path: pathlib.Path) -> None:
    ws = _lock_workspace(tmp_path)

    def identities() -> dict[str, str]:
        return {a: agent_image(a, ws.package_dir(a)).uri for a in AGENTS}

    before = identities()
    assert before == {a: agent_image(a, ROOT / "packages" / a).uri for a in AGENTS}
    assert len(set(before.values())) == len(AGENTS)  # each agent has its own image name

    lock = ws.lock_path("builder")
    lock.write_text(lock.read_text(encoding="utf-8") + "tomli-w==1.2.0\n", encoding="utf-8")
    after = identities()

    assert after["builder"] != before["builder"]
    assert after["builder"].startswith("agent-loop-builder:")
    assert {a: after[a] for a in AGENTS if a != "builder"} == {
        a: before[a] for a in AGENTS if a != "builder"
    }
