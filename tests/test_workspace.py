"""The workspace layout that deploys depend on: agents never import each other."""

from __future__ import annotations

import ast
import pathlib

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


def test_common_defines_no_task_environment() -> None:
    src = ROOT / "packages" / "common" / "src"
    offenders = [
        p for p in src.rglob("*.py") if "TaskEnvironment(" in p.read_text(encoding="utf-8")
    ]
    assert offenders == []
