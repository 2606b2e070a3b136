"""`agent-loop --help` answers without loading the machinery of any command.

It took 3 s when the CLI imported the agents' machinery, Flyte's agent tools and
githubkit's auth for every command. The time is measured in `bench/cli_time.py`; what is
checked here is the cause: which modules a `--help` (and a usage error) loads.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agent_loop.cli import CONFIG_TEMPLATE, build_parser

HEAVY = (
    "flyte",
    "githubkit",
    "pydantic",
    "pydantic_settings",
    "litellm",
    "structlog",
    "httpx",
    "asyncio",
    "agent_loop_common",
    "agent_loop_builder",
    "agent_loop_reviewer",
    "agent_loop_distiller",
    "agent_loop_gateway",
)

_PROBE = """
import json, sys
from agent_loop.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
else:
    code = None
loaded = sorted({name.split(".")[0] for name in sys.modules})
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


def _subcommands() -> list[list[str]]:
    import argparse

    found: list[list[str]] = [[]]

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        for action in parser._actions:  # pyright: ignore[reportPrivateUsage]
            if isinstance(action, argparse._SubParsersAction):  # pyright: ignore[reportPrivateUsage]
                choices: dict[str, argparse.ArgumentParser] = action.choices  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
                for name, sub in choices.items():
                    found.append([*path, name])
                    walk(sub, [*path, name])

    walk(build_parser(), [])
    return found


def _loaded(argv: list[str]) -> tuple[object, list[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, check=False
    )
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return report["code"], report["loaded"]


@pytest.mark.parametrize("command", _subcommands(), ids=lambda c: " ".join(c) or "agent-loop")
def test_help_loads_no_command_machinery(command: list[str]) -> None:
    code, loaded = _loaded([*command, "--help"])
    assert code == 0
    assert sorted(set(HEAVY) & set(loaded)) == []


def test_a_usage_error_loads_none_either() -> None:
    code, loaded = _loaded(["run", "builder", "--issue", "x"])
    assert code == 2
    assert sorted(set(HEAVY) & set(loaded)) == []


def test_the_help_names_the_runtimes_config_template() -> None:
    from agent_loop_common.runtime import CONFIG_TEMPLATE as RUNTIME_TEMPLATE

    assert CONFIG_TEMPLATE == RUNTIME_TEMPLATE
