"""The workspace layout that deploys depend on: agents never import each other."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys
import tomllib
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
AGENTS = ("builder", "reviewer", "distiller")


def _imported_modules(package_dir: pathlib.Path) -> set[str]:
    names: set[str] = set()
    for path in package_dir.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


def test_agents_never_import_each_other() -> None:
    for agent in AGENTS:
        imported = _imported_modules(ROOT / "packages" / agent / "src")
        others = {f"agent_loop_{other}" for other in AGENTS if other != agent}
        assert not imported & others, f"{agent} imports {imported & others}"


def test_the_gateway_and_the_agents_never_import_each_other() -> None:
    """The gateway names agents and starts them through a runner; deploying it (or an
    agent) never bundles the other."""
    gateway = _imported_modules(ROOT / "packages" / "gateway" / "src")
    assert not gateway & {f"agent_loop_{agent}" for agent in AGENTS}
    for agent in AGENTS:
        assert "agent_loop_gateway" not in _imported_modules(ROOT / "packages" / agent / "src")


def test_no_agent_and_not_the_gateway_imports_the_eval() -> None:
    """The distiller replays lessons by calling the eval's Flyte task by name."""
    for member in (*AGENTS, "gateway", "common"):
        assert "agent_loop_eval" not in _imported_modules(ROOT / "packages" / member / "src")


def _pyproject(member_dir: pathlib.Path) -> dict[str, Any]:
    return tomllib.loads((member_dir / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_test_doubles_are_a_member_of_their_own_for_tests_and_the_cli_only() -> None:
    """The emulator and scripted model live in agent-loop-testing: every member's tests get
    them (dev group), the CLI's demo runs on them, and no deployed package imports them."""
    assert not (ROOT / "packages/common/src/agent_loop_common/testing").exists()
    assert (ROOT / "packages/testing/src/agent_loop_testing/__init__.py").exists()
    for member in ("common", *AGENTS, "gateway", "eval"):
        data = _pyproject(ROOT / "packages" / member)
        assert "agent-loop-testing" in data["dependency-groups"]["dev"], member
        assert not any("testing" in d for d in data["project"]["dependencies"]), member
        imported = _imported_modules(ROOT / "packages" / member / "src")
        assert "agent_loop_testing" not in imported, member
    assert "agent-loop-testing" in _pyproject(ROOT)["project"]["dependencies"]


def _calls_task_environment(path: pathlib.Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "TaskEnvironment":
                return True
    return False


def test_common_defines_no_task_environment() -> None:
    """Every agent's deploy imports common: an environment there would deploy with each."""
    src = ROOT / "packages" / "common" / "src"
    assert [p for p in src.rglob("*.py") if _calls_task_environment(p)] == []


def test_each_agent_defines_its_own_task_environment() -> None:
    for agent in (*AGENTS, "eval"):
        env_py = ROOT / "packages" / agent / "src" / f"agent_loop_{agent}" / "env.py"
        assert _calls_task_environment(env_py), agent


def test_the_import_graph_keeps_its_contracts() -> None:
    """The contracts in the root pyproject (`[tool.importlinter]`) hold: agents and the
    gateway independent, common free of agents, CLI and test doubles, layered, no circle."""
    lint = pathlib.Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout
