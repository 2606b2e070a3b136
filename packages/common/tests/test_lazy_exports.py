"""Packages whose `__init__` resolves its exports on first use (`agent_loop_common._lazy`)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from agent_loop_common._lazy import type_checking_imports

LAZY = (
    "agent_loop_common.github",
    "agent_loop_common.memory",
    "agent_loop_common.records",
    "agent_loop_common.runtime",
)


@pytest.mark.parametrize("name", LAZY)
def test_every_export_resolves_and_all_lists_exactly_them(name: str) -> None:
    package = importlib.import_module(name)
    assert package.__file__ is not None
    table = type_checking_imports(Path(package.__file__).read_text("utf-8"), name)
    assert sorted(table) == sorted(package.__all__)
    for export, where in table.items():
        module, _, attribute = where.partition(":")
        assert getattr(package, export) is getattr(importlib.import_module(module), attribute)
    assert set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = package.nothing_here


def test_relative_and_aliased_imports_are_read() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import typing\n"
        "if TYPE_CHECKING:\n"
        "    from ._a import A, B as C\n"
        "if typing.TYPE_CHECKING:\n"
        "    from pkg.sub._d import D\n"
        "from pkg._e import E\n"
    )
    assert type_checking_imports(source, "pkg.sub") == {
        "A": "pkg.sub._a:A",
        "C": "pkg.sub._a:B",
        "D": "pkg.sub._d:D",
    }


def test_the_tick_summary_and_records_import_without_flyte_or_githubkit() -> None:
    # What the idle tick's lean path needs must not drag in the agents' machinery.
    code = (
        "import sys\n"
        "from agent_loop_common.runtime._summary import TickSummary\n"
        "from agent_loop_common.records import Role\n"
        "from agent_loop_common.settings import Settings\n"
        "TickSummary(role=Role.BUILDER, outcome='idle')\n"
        "heavy = ('flyte', 'githubkit', 'httpx', 'structlog', 'litellm')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


def test_the_etag_cache_is_usable_without_githubkit() -> None:
    code = (
        "import sys\n"
        "from agent_loop_common.github import ETagCache, ReadLog\n"
        "cache = ETagCache.load(ETagCache().dump())\n"
        "print(sorted(m for m in ('flyte', 'githubkit') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"
