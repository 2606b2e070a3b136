"""The README stays true: its settings table is current and its commands parse."""

from __future__ import annotations

import pathlib
import re
import shlex

import pytest

from agent_loop.cli import build_parser
from agent_loop_common.settings import render_settings_table

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_settings_table_is_current() -> None:
    """Regenerate with `uv run python -m agent_loop_common.settings --update README.md`."""
    assert render_settings_table() in README


def _commands() -> list[str]:
    found = re.findall(r"^\s*(?:uv run )?agent-loop ([^#\n]*?)\s*(?:#.*)?$", README, re.MULTILINE)
    return sorted(set(found))


def test_the_readme_shows_every_command() -> None:
    shown = {command.split()[0] for command in _commands()}
    expected = {"demo", "run", "status", "show", "deploy", "lessons", "emulator", "serve", "eval"}
    assert shown == expected


@pytest.mark.parametrize("command", _commands())
def test_each_readme_command_parses(command: str) -> None:
    build_parser().parse_args(shlex.split(command))


def test_the_readme_links_exist() -> None:
    for target in re.findall(r"\]\(((?:docs|infra)/[^)#]+)\)", README):
        assert (ROOT / target).exists(), target
