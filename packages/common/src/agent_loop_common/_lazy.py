"""Package `__init__`s that import their submodules on first use (PEP 562).

A package's public names are re-exported from its `__init__`; importing them all eagerly
makes `from agent_loop_common.runtime._summary import TickSummary` pay for Flyte and
githubkit, since Python runs the package's `__init__` first. The idle tick's lean path
(`agent_loop_common.runtime.fast_idle_tick`) must not, so the packages it passes
through declare their exports once, as imports under `if TYPE_CHECKING:` (what type
checkers and import-linter read), and resolve each name on first access from there:

```python
from typing import TYPE_CHECKING

from agent_loop_common._lazy import lazy_exports

if TYPE_CHECKING:
    from agent_loop_common.records._parts import Role

__all__ = ["Role"]
__getattr__, __dir__ = lazy_exports(__name__, __file__)
```
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["lazy_exports", "type_checking_imports"]


def type_checking_imports(source: str, package: str) -> dict[str, str]:
    """`name -> module` of every `from <module> import name` under `if TYPE_CHECKING:`.

    Relative imports are resolved against `package`; an `as` alias names the export.
    """
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and _is_type_checking(node.test)):
            continue
        for stmt in node.body:
            if not isinstance(stmt, ast.ImportFrom) or stmt.module is None:
                continue
            module = stmt.module
            if stmt.level:
                base = package.rsplit(".", stmt.level - 1)[0] if stmt.level > 1 else package
                module = f"{base}.{module}"
            for alias in stmt.names:
                found[alias.asname or alias.name] = f"{module}:{alias.name}"
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def lazy_exports(
    package: str, init_file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's `__getattr__` and `__dir__` serving its `TYPE_CHECKING` imports lazily.

    The `__init__` source is parsed once, on the first unknown attribute; each resolved
    name is then set on the package, so later lookups are plain attribute reads.

    Raises:
        AttributeError: (from `__getattr__`) a name the package does not export.
    """
    table: dict[str, str] = {}

    def exports() -> dict[str, str]:
        if not table:
            table.update(type_checking_imports(Path(init_file).read_text("utf-8"), package))
        return table

    def __getattr__(name: str) -> Any:
        where = exports().get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        value = getattr(importlib.import_module(module), attribute)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports()})

    return __getattr__, __dir__
