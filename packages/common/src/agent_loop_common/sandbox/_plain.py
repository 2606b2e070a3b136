"""`plain-subprocess (not isolated)`: limits and a scrubbed environment, no namespaces.

For the offline demo's own sample code only, on a machine without bubblewrap or
Docker. It works on a private copy with the same time, memory, CPU and file-size
limits and an environment of `PATH`, `HOME`, `LANG`, `TMPDIR` and `SANDBOX_JUNIT`, but
the command runs as this user, sees the whole file system and the network, and can
read anything this user can. Its name says so wherever a result is shown; `auto` never
selects it. The process-count limit is not applied: without a user namespace of its
own it would count every process of this user (and the kernel ignores it for root).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from agent_loop_common.sandbox._base import Sandbox, result_from
from agent_loop_common.sandbox._command import expand_placeholders
from agent_loop_common.sandbox._process import run_process
from agent_loop_common.sandbox._result import RunResult
from agent_loop_common.sandbox._tree import Workspace

__all__ = ["PLAIN_BACKEND", "PlainSubprocessSandbox"]

PLAIN_BACKEND = "plain-subprocess (not isolated)"


def plain_env(workspace: Workspace, argv0: str) -> dict[str, str]:
    """The command's whole environment (pure)."""
    folders = [str(workspace.repo / ".venv" / "bin")]
    if argv0.startswith("/"):
        folders.append(os.path.dirname(argv0))
    folders += ["/usr/local/bin", "/usr/bin", "/bin"]
    return {
        "PATH": ":".join(dict.fromkeys(folders)),
        "HOME": str(workspace.home),
        "LANG": "C.UTF-8",
        "TMPDIR": str(workspace.tmp),
        "SANDBOX_JUNIT": str(workspace.junit),
        **({"PYTHONPATH": str(workspace.guard)} if workspace.guard_module else {}),
    }


class PlainSubprocessSandbox(Sandbox):
    """A subprocess with limits and a scrubbed environment: **not** isolation."""

    name = PLAIN_BACKEND
    isolated = False

    async def _execute(
        self,
        workspace: Workspace,
        argv: tuple[str, ...],
        *,
        network: bool,
        time_limit: float,
        bind_program: bool = True,
    ) -> RunResult:
        argv = expand_placeholders(
            argv, junit_path=str(workspace.junit), guard=workspace.guard_module
        )
        env = plain_env(workspace, argv[0])
        program = argv[0]
        if "/" in program and not program.startswith("/"):
            found = (workspace.repo / program).exists()
        else:
            found = shutil.which(program, path=env["PATH"]) is not None
        if not found:
            return RunResult(
                backend=self.name,
                argv=argv,
                exit_code=127,
                network=network,
                error=f"command not found: {program!r} (PATH={env['PATH']})",
            )
        notes: list[str] = [
            "not isolated: the command ran as this user, with the network",
            self.limits.per_process_note("the plain subprocess makes none"),
        ]
        prlimit = shutil.which("prlimit") or shutil.which("prlimit", path="/usr/bin:/bin")
        if prlimit is not None:
            command = [*self.limits.prlimit_argv(prlimit, processes=False), *argv]
        else:
            command = list(argv)
            notes.append("prlimit is missing: no memory, CPU or file-size limit")
        outcome = await run_process(
            command,
            env=env,
            cwd=Path(workspace.repo),
            time_limit=time_limit,
            capture=self.new_capture(),
            kill_group_after_exit=True,
        )
        result = result_from(
            outcome,
            backend=self.name,
            argv=argv,
            network=True,
            notes=notes,
        )
        return result.model_copy(update={"per_process_limits": True})
