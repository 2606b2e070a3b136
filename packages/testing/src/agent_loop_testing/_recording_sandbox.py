"""`RecordingSandbox`: the real bubblewrap sandbox, remembering what each run was shown.

A leakage test must prove that some text (a hidden test, a later commit) never reached
the sandbox before a given moment. The sandbox itself keeps no history, so this one
notes, for every command it runs, the text of the tree it copied and the change laid
over it, in order, and then runs it exactly as `BwrapSandbox` does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_loop_common.sandbox import BwrapSandbox, EnvReuse, RunResult, SandboxLimits

__all__ = ["RecordingSandbox", "SandboxCall"]


@dataclass(frozen=True)
class SandboxCall:
    """One command a sandbox ran, and everything it was shown."""

    argv: tuple[str, ...]
    tree: str
    """Every text file of the tree, concatenated (paths included)."""
    changes: str
    """Every path and text of the change laid over the tree."""

    def shows(self, text: str) -> bool:
        """Whether `text` was in the tree or the change."""
        return text in self.tree or text in self.changes


def _tree_text(tree: Path) -> str:
    return "\n".join(
        f"{path.relative_to(tree)}\n{path.read_bytes().decode('utf-8', 'replace')}"
        for path in sorted(tree.rglob("*"))
        if path.is_file() and not path.is_symlink()
    )


class RecordingSandbox(BwrapSandbox):
    """`BwrapSandbox` keeping a `SandboxCall` per run in `calls` (see the module)."""

    def __init__(self, limits: SandboxLimits | None = None) -> None:
        super().__init__(limits)
        self.calls: list[SandboxCall] = []

    async def run(
        self,
        tree: Path,
        argv: Sequence[str],
        *,
        network: bool = False,
        time_limit: float | None = None,
        changes: Mapping[str, str | bytes | None] | None = None,
        setup: Sequence[str] | None = None,
        skip: Sequence[str] = (),
        operator_command: bool = True,
        operator_setup: bool = True,
        reuse: EnvReuse | None = None,
    ) -> RunResult:
        """Note what the run is shown, then run it as bubblewrap does."""
        shown = "\n".join(
            f"{path}\n{content.decode('utf-8', 'replace') if isinstance(content, bytes) else content}"
            for path, content in sorted((changes or {}).items())
        )
        self.calls.append(
            SandboxCall(tuple(argv), await asyncio.to_thread(_tree_text, tree), shown)
        )
        return await super().run(
            tree,
            argv,
            network=network,
            time_limit=time_limit,
            changes=changes,
            setup=setup,
            skip=skip,
            operator_command=operator_command,
            operator_setup=operator_setup,
            reuse=reuse,
        )
