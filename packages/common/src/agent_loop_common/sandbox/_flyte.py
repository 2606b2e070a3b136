"""The flyte backend: a deployed agent runs tests in a Flyte task of their own.

On a cluster the agent's container holds the GitHub token and the model key, so it
never executes repository code itself: it uploads the workspace's copy as a `Dir` and
calls a raw-container task (`flyte.extras.ContainerTask`) in the configured image, with
the configured resources and timeout and **no secrets**. That task copies the tree to
`/tmp/repo`, runs the command with a wall-time limit (`timeout`, from coreutils, when
the image has it) and returns its exit code, its output and an optional JUnit report.
The command is passed as one shell-quoted string (`shlex.join`) and turned back into
arguments with `eval "set -- ..."`, which undoes exactly that quoting and expands
nothing.

What the task cannot do by itself: block the network (Flyte's network switch for
sandboxes was reverted upstream; use a Kubernetes NetworkPolicy or a pod template for
the tests' pods) and limit processes (the kubelet's pod PID limit). `docs/sandbox.md`
says how.

The task must exist at deploy time, so the **caller** builds it, in the agent's
environment module (`common` never defines a `TaskEnvironment`):

```python
tests_task = build_container_task(flyte_task_spec(image=..., limits=...))
tests_env = flyte.TaskEnvironment.from_task("agent-loop-tests", tests_task)
env = flyte.TaskEnvironment(..., depends_on=[tests_env])
sandbox = open_sandbox(settings, flyte_task=tests_task)
```

Everything here but `FlyteSandbox._execute` runs without a cluster: the spec is a pure
value, and building the `ContainerTask` needs no connection.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_loop_common.sandbox._base import Sandbox, result_from
from agent_loop_common.sandbox._capture import OutputCapture
from agent_loop_common.sandbox._command import expand_placeholders
from agent_loop_common.sandbox._errors import SandboxUnavailable
from agent_loop_common.sandbox._limits import SandboxLimits
from agent_loop_common.sandbox._paths import ProtectedPaths
from agent_loop_common.sandbox._process import ProcessOutcome
from agent_loop_common.sandbox._result import RunResult
from agent_loop_common.sandbox._tree import Workspace

__all__ = [
    "FLYTE_BACKEND",
    "RUNNER_SCRIPT",
    "FlyteSandbox",
    "FlyteTestSpec",
    "build_container_task",
    "flyte_task_spec",
    "in_flyte_cluster",
]

FLYTE_BACKEND = "flyte"
JUNIT_PATH = "/var/outputs/junit"

RUNNER_SCRIPT = """\
set -u
src=$1; quoted=$2; limit=$3
out=${SANDBOX_OUTPUTS:-/var/outputs}; work=${SANDBOX_WORK:-/tmp}
: > "$out/junit"
mkdir -p "$work/home" "$work/repo"
if ! cp -R "$src/." "$work/repo/"; then
  echo "agent-loop: cannot copy the tree" > "$out/output"; echo 125 > "$out/exit_code"; exit 0
fi
cd "$work/repo" || exit 0
eval "set -- $quoted"
if command -v timeout >/dev/null 2>&1; then set -- timeout -k 5 "$limit" "$@"; fi
"$@" > "$out/output" 2>&1
echo $? > "$out/exit_code"
exit 0
"""
"""The task's fixed POSIX shell script; the tree, command and limit are its arguments."""


@dataclass(frozen=True)
class FlyteTestSpec:
    """The tests' Flyte task, as plain data.

    Attributes:
        name: Task name.
        image: Container image of the tests (must have `/bin/sh`; `timeout` recommended).
        command: The container's command (the runner script).
        arguments: Its arguments (Flyte fills in the `{{.inputs.*}}` templates).
        inputs: Input names and types: the tree, the quoted command, the time limit.
        outputs: Output names and types: exit code, output, JUnit report.
        env_vars: The task's whole environment on top of the image's.
        cpu: CPUs of the task's pod.
        memory: Memory of the task's pod (Kubernetes units).
        timeout_seconds: The task's own timeout: the wall limit plus time to copy the tree.
        secrets: Always empty: the tests never receive a secret.
    """

    name: str
    image: str
    command: tuple[str, ...]
    arguments: tuple[str, ...]
    inputs: Mapping[str, str]
    outputs: Mapping[str, str]
    env_vars: Mapping[str, str]
    cpu: int
    memory: str
    timeout_seconds: int
    secrets: tuple[str, ...] = field(default=())


def flyte_task_spec(
    *, image: str, limits: SandboxLimits, name: str = "agent-loop-run-tests", cpu: int = 1
) -> FlyteTestSpec:
    """The spec of the tests' task for this image and these limits (pure)."""
    return FlyteTestSpec(
        name=name,
        image=image,
        command=("/bin/sh", "-c", RUNNER_SCRIPT, "agent-loop-tests"),
        arguments=("/var/inputs/repo", "{{.inputs.argv}}", "{{.inputs.limit}}"),
        inputs={"repo": "Dir", "argv": "str", "limit": "int"},
        outputs={"exit_code": "int", "output": "File", "junit": "File"},
        env_vars={
            "HOME": "/tmp/home",  # noqa: S108 (inside the tests' container)
            "LANG": "C.UTF-8",
            "SANDBOX_JUNIT": JUNIT_PATH,
        },
        cpu=cpu,
        memory=f"{limits.memory_mb}Mi",
        timeout_seconds=int(limits.wall_seconds) + 600,
    )


def build_container_task(spec: FlyteTestSpec) -> Any:
    """A `flyte.extras.ContainerTask` from the spec (imports flyte; needs no cluster)."""
    import flyte
    from flyte.extras import ContainerTask
    from flyte.io import Dir, File

    types: dict[str, type] = {"Dir": Dir, "File": File, "str": str, "int": int}
    return ContainerTask(
        name=spec.name,
        image=spec.image,
        command=list(spec.command),
        arguments=list(spec.arguments),
        inputs={k: types[v] for k, v in spec.inputs.items()},
        outputs={k: types[v] for k, v in spec.outputs.items()},
        input_data_dir="/var/inputs",
        output_data_dir="/var/outputs",
        resources=flyte.Resources(cpu=spec.cpu, memory=spec.memory),
        env_vars=dict(spec.env_vars),
        timeout=spec.timeout_seconds,
        cache="disable",
    )


def in_flyte_cluster() -> bool:
    """Whether this code runs inside a Flyte task on a cluster (not local mode)."""
    import flyte

    ctx: Any = flyte.ctx()
    return ctx is not None and bool(ctx.is_in_cluster())


def _feed_file(path: Path, capture: OutputCapture) -> None:
    with path.open("rb") as handle:
        while chunk := handle.read(64 * 1024):
            capture.feed(chunk)
    capture.finish()


class FlyteSandbox(Sandbox):
    """Runs each command in the tests' Flyte task (see the module docstring).

    Args:
        limits: Time and memory limits (the task's resources come from its spec).
        task: The tests' `ContainerTask`, built and deployed by the caller.
    """

    name = FLYTE_BACKEND
    pytest_guard = False  # the task's container gets the tree alone (docs/sandbox.md)

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        task: Any = None,
        protected: ProtectedPaths | None = None,
        work_root: Path | None = None,
    ) -> None:
        super().__init__(limits, protected=protected, work_root=work_root)
        self.task = task

    async def _execute(
        self,
        workspace: Workspace,
        argv: tuple[str, ...],
        *,
        network: bool,
        time_limit: float,
        bind_program: bool = True,
    ) -> RunResult:
        if not in_flyte_cluster():
            raise SandboxUnavailable(
                "the flyte sandbox runs tests in a Flyte task on a cluster; this is not "
                "one (use bwrap or docker locally)"
            )
        if self.task is None:
            raise SandboxUnavailable(
                "the flyte sandbox needs the tests' task: build it with "
                "build_container_task() in the agent's environment (docs/sandbox.md)"
            )
        from flyte.io import Dir

        argv = expand_placeholders(argv, junit_path=JUNIT_PATH)
        started = time.perf_counter()
        repo: Any = await Dir.from_local(str(workspace.repo))
        outputs: Sequence[Any] = await self.task.aio(
            repo=repo, argv=shlex.join(argv), limit=max(1, int(time_limit))
        )
        exit_code, output, junit = int(outputs[0]), outputs[1], outputs[2]
        capture = self.new_capture()
        log = Path(await output.download(str(workspace.root / "output.log")))
        await asyncio.to_thread(_feed_file, log, capture)
        await junit.download(str(workspace.junit))
        outcome = ProcessOutcome(
            exit_code=exit_code,
            signal=exit_code - 128 if 128 < exit_code < 128 + 65 else None,
            timed_out=exit_code == 124,
            duration=time.perf_counter() - started,
            capture=capture,
        )
        return result_from(
            outcome,
            backend=self.name,
            argv=argv,
            network=network,
            notes=("network and process limits come from the cluster's policies",),
        )
