"""The generated settings table names every variable the code reads, and renders.

A variable read outside `Settings` (at deploy time, or before the settings load) used to
be missing from the table (`AGENT_LOOP_GITHUB_AUTH`, `AGENT_LOOP_MODEL_KEY_ENV`), and
the first row (`AGENT_LOOP_REPOS`) sat above its section's table header, so Markdown
showed it as raw text.
"""

from __future__ import annotations

import ast
import pathlib
import re

from agent_loop_common.settings import render_settings_table

ROOT = pathlib.Path(__file__).resolve().parents[1]
_VARIABLE = re.compile(r"^(AGENT_LOOP|GITHUB)_[A-Z0-9_]+$")


def _source_files() -> list[pathlib.Path]:
    roots = [ROOT / "src", *sorted((ROOT / "packages").glob("*/src"))]
    files = [f for root in roots for f in root.rglob("*.py")]
    # Test doubles (the emulator, the pytest plugin) set variables; they read none of a user's.
    return [f for f in files if "testing" not in f.relative_to(ROOT).parts]


def _variables_read() -> set[str]:
    """Every `AGENT_LOOP_*` / `GITHUB_*` string constant in the shipped code."""
    names: set[str] = set()
    for path in _source_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        exported = {  # names in `__all__` are Python names, not variables
            id(element)
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            for element in ast.walk(node.value)
        }
        for node in ast.walk(tree):
            if id(node) in exported:
                continue
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _VARIABLE.match(node.value)
            ):
                names.add(node.value)
    return names


def _rows(table: str) -> dict[str, str]:
    return dict(re.findall(r"^\| `([A-Z0-9_]+)` \| (.*)$", table, re.MULTILINE))


def test_every_variable_the_code_reads_is_in_the_table() -> None:
    read = _variables_read()
    assert {"AGENT_LOOP_GITHUB_AUTH", "AGENT_LOOP_MODEL_KEY_ENV", "AGENT_LOOP_REPOS"} <= read
    missing = sorted(read - set(_rows(render_settings_table())))
    assert missing == [], f"not in the settings table: {missing}"


def test_every_row_sits_under_a_table_header() -> None:
    """A row is a table row only below `| Variable | ...` and `|---|`, with no blank line."""
    lines = render_settings_table().splitlines()
    in_table = False
    for i, line in enumerate(lines):
        if line.startswith("|---"):
            assert lines[i - 1].startswith("| Variable |"), i
            in_table = True
        elif not line.startswith("|"):
            in_table = False
        elif not line.startswith("| Variable |"):
            assert in_table, f"row outside a table: {line[:60]}"
    assert _rows(render_settings_table())["AGENT_LOOP_REPOS"]


def test_the_committed_documents_hold_the_table() -> None:
    """Regenerate with `uv run python -m agent_loop_common.settings --update FILE`."""
    table = render_settings_table()
    for doc in ("README.md", "docs/configuration.md"):
        assert table in (ROOT / doc).read_text(encoding="utf-8"), doc
