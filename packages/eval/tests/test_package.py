"""The package imports on its own, and uses the builder only through its public API."""

import ast
import importlib
import pathlib

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "agent_loop_eval"


def test_package_imports() -> None:
    module = importlib.import_module("agent_loop_eval")
    assert module.__name__ == "agent_loop_eval"
    assert sorted(module.__all__) == module.__all__


def test_only_public_modules_of_other_packages_are_imported() -> None:
    """`agent_loop_builder`, `agent_loop_common.sandbox`: never a `_private` module of another
    package (import-linter holds the rest: no other agent, no CLI, no test double)."""
    private: list[str] = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] != "agent_loop_eval" and any(p.startswith("_") for p in parts[1:]):
                    private.append(f"{path.name}: {name}")
    assert private == []
