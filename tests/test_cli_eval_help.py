"""docs/eval.md's synopsis of each `agent-loop eval` subcommand is what its `--help`
says: the same options, each with the same metavar, and no option the page omits.

A person reads the page's synopsis and then types; an option the page names that the
parser lacks (or names with another placeholder) is a surprise at the terminal.
"""

from __future__ import annotations

import argparse
import pathlib
import re

import pytest

from agent_loop.cli import build_parser

PAGE = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "eval.md").read_text()


def _synopsis(action: str) -> str:
    """The page's ```text block that starts `agent-loop eval <action> `."""
    for block in re.findall(r"```text\n(.*?)```", PAGE, flags=re.DOTALL):
        if block.startswith(f"agent-loop eval {action} "):
            return block
    raise AssertionError(f"docs/eval.md has no synopsis of `eval {action}`")


def _documented(action: str) -> dict[str, str]:
    """Each `--option [METAVAR]` of the synopsis (`--remote [--config FILE]` is two)."""
    text = _synopsis(action).split("#", 1)[0]
    metavar = r"(?: ([A-Z][A-Z/,.|_a-z]*|on\|off\|ID,\.\.\.))?"
    return dict(re.findall(r"(--[a-z-]+)" + metavar, text))


def _parser(action: str) -> argparse.ArgumentParser:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    group = commands.choices["eval"]
    actions = next(a for a in group._actions if isinstance(a, argparse._SubParsersAction))
    return actions.choices[action]


@pytest.mark.parametrize("action", ["mine", "run", "score", "compare"])
def test_the_synopsis_is_the_parser(action: str) -> None:
    parser = _parser(action)
    options: dict[str, str] = {}
    for item in parser._actions:
        for name in item.option_strings:
            if name.startswith("--") and name != "--help":
                options[name] = "" if item.nargs == 0 else str(item.metavar or item.dest.upper())
    assert _documented(action) == options
    usage = parser.format_usage()
    for option, metavar in options.items():
        assert f"{option} {metavar}".strip() in usage
