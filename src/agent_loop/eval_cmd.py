"""`agent-loop eval`: the repository's own benchmark (SWE-bench's method on its history).

```text
agent-loop eval mine [--repo OWNER/NAME] [--since DATE] [--limit N] [--out FILE]
agent-loop eval run INSTANCES.jsonl [--model MODEL] [--lessons on|off|ID,...] [--parallel K]
agent-loop eval score INSTANCES.jsonl PREDICTIONS.jsonl|--gold [--parallel K]
agent-loop eval compare A B
```

Each subcommand is one entry of `_COMMANDS` (its parser and its handler).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, cast

from agent_loop import eval_mine_cmd, eval_run_cmd, eval_score_cmd

__all__ = ["add_parser", "main"]


def add_parser(commands: Any) -> None:
    """Add `eval` and its subcommands to the CLI's subcommands."""
    group = cast(
        argparse.ArgumentParser,
        commands.add_parser(
            "eval",
            help="the repository's own benchmark: mine instances, replay the builder, score, compare",
            description="SWE-bench's method on your repository's history. See docs/eval.md.",
        ),
    )
    actions = group.add_subparsers(dest="eval_command", metavar="ACTION", required=True)
    for name, (add, _) in _COMMANDS.items():
        add(actions, name)


def main(args: argparse.Namespace) -> int:
    """Run `agent-loop eval <action>`; returns the exit code."""
    _, handler = _COMMANDS[cast(str, args.eval_command)]
    return handler(args)


_COMMANDS: dict[str, tuple[Callable[[Any, str], None], Callable[[argparse.Namespace], int]]] = {
    "mine": (eval_mine_cmd.add_mine, eval_mine_cmd.mine),
    "run": (eval_run_cmd.add_run, eval_run_cmd.run),
    "score": (eval_score_cmd.add_score, eval_score_cmd.score),
    "compare": (eval_run_cmd.add_compare, eval_run_cmd.compare),
}
