"""The docker backend: the same guarantees as bubblewrap, from a container engine.

The container gets no network (`--network none`, except for setup commands), no
capability (`--cap-drop ALL`, `no-new-privileges`), a non-root user, a read-only root
file system with only the workspace's copy, HOME, report folder and a `/tmp` tmpfs
writable, the process, memory, CPU and file-size limits as engine flags, and an
environment of `HOME`, `LANG` and `SANDBOX_JUNIT` on top of the image's own. The
`docker` client itself is started with a scrubbed environment (only its own `DOCKER_*`
variables), so nothing of the agent's reaches the container. At the time limit the
container is killed by name.

The command line is built by the pure `docker_argv`, tested everywhere; running it
needs a Docker engine that answers.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_loop_common.sandbox._base import Sandbox, result_from
from agent_loop_common.sandbox._command import expand_placeholders
from agent_loop_common.sandbox._guard import GUARD_DIR
from agent_loop_common.sandbox._limits import SandboxLimits
from agent_loop_common.sandbox._paths import ProtectedPaths
from agent_loop_common.sandbox._process import run_process
from agent_loop_common.sandbox._result import RunResult
from agent_loop_common.sandbox._tree import Workspace

__all__ = ["DEFAULT_IMAGE", "DOCKER_BACKEND", "DockerSandbox", "DockerSpec", "docker_argv"]

DOCKER_BACKEND = "docker"
DEFAULT_IMAGE = "python:3.11-slim"
REPO_DIR = "/sandbox/repo"
HOME_DIR = "/sandbox/home"
OUT_DIR = "/sandbox/out"
JUNIT_PATH = f"{OUT_DIR}/junit.xml"
_CLIENT_VARIABLES = (
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "DOCKER_API_VERSION",
)


@dataclass(frozen=True)
class DockerSpec:
    """Everything `docker_argv` needs.

    Attributes:
        docker: The docker client program.
        image: The image to run.
        name: The container's name (for `docker kill`).
        repo: Host folder of the workspace's copy.
        home: Host folder of the command's HOME.
        out: Host folder for the JUnit report.
        uid: The user the command runs as.
        gid: Its group.
        limits: Time, memory, process and file-size limits.
        guard: The pytest guard's folder, mounted read-only at `/sandbox/guard` and put
            on `PYTHONPATH` (a guarded pytest run only).
    """

    docker: str
    image: str
    name: str
    repo: Path
    home: Path
    out: Path
    uid: int
    gid: int
    limits: SandboxLimits
    guard: Path | None = None


def docker_argv(spec: DockerSpec, argv: Sequence[str], *, network: bool) -> list[str]:
    """The `docker run` command line that runs `argv` in a container (pure)."""
    limits = spec.limits
    cmd = [
        spec.docker,
        "run",
        "--rm",
        "--name",
        spec.name,
        "--init",
        "--network",
        "bridge" if network else "none",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--user",
        f"{spec.uid}:{spec.gid}",
        "--pids-limit",
        str(limits.max_processes),
        "--memory",
        f"{limits.memory_mb}m",
        "--memory-swap",
        f"{limits.memory_mb}m",
        "--ulimit",
        f"fsize={limits.file_bytes}:{limits.file_bytes}",
        "--ulimit",
        f"cpu={limits.cpu}:{limits.cpu}",
        "--ulimit",
        "core=0:0",
        "--read-only",
        "--tmpfs",
        f"/tmp:rw,exec,nosuid,nodev,size={limits.max_file_mb}m",  # noqa: S108 (in the container)
        "--mount",
        f"type=bind,source={spec.repo},target={REPO_DIR}",
        "--mount",
        f"type=bind,source={spec.home},target={HOME_DIR}",
        "--mount",
        f"type=bind,source={spec.out},target={OUT_DIR}",
        "--workdir",
        REPO_DIR,
        "--env",
        f"HOME={HOME_DIR}",
        "--env",
        "LANG=C.UTF-8",
        "--env",
        f"SANDBOX_JUNIT={JUNIT_PATH}",
        *(
            [
                "--mount",
                f"type=bind,source={spec.guard},target={GUARD_DIR},readonly",
                "--env",
                f"PYTHONPATH={GUARD_DIR}",
            ]
            if spec.guard is not None
            else []
        ),
        "--entrypoint",
        argv[0],
        spec.image,
        *argv[1:],
    ]
    return cmd


def client_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The docker client's environment: `PATH`, `HOME` and its own `DOCKER_*` only (pure)."""
    env = {"PATH": environ.get("PATH", "/usr/bin:/bin")}
    if "HOME" in environ:
        env["HOME"] = environ["HOME"]
    env.update({k: environ[k] for k in _CLIENT_VARIABLES if k in environ})
    return env


class DockerSandbox(Sandbox):
    """Commands in a locked-down container of `image`."""

    name = DOCKER_BACKEND
    fixed_repo_path = True

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        image: str = DEFAULT_IMAGE,
        docker: str | None = None,
        protected: ProtectedPaths | None = None,
        work_root: Path | None = None,
    ) -> None:
        super().__init__(limits, protected=protected, work_root=work_root)
        self.image = image or DEFAULT_IMAGE
        self.docker = docker or shutil.which("docker") or "docker"

    def workspace_owner(self) -> tuple[int, int] | None:
        """The container user owns the workspace (65534 when this process is root)."""
        return (65534, 65534) if os.geteuid() == 0 else None

    def _identity(self) -> tuple[int, int]:
        return (65534, 65534) if os.geteuid() == 0 else (os.getuid(), os.getgid())

    async def _execute(
        self,
        workspace: Workspace,
        argv: tuple[str, ...],
        *,
        network: bool,
        time_limit: float,
        bind_program: bool = True,
    ) -> RunResult:
        argv = expand_placeholders(argv, junit_path=JUNIT_PATH, guard=workspace.guard_module)
        uid, gid = self._identity()
        spec = DockerSpec(
            docker=self.docker,
            image=self.image,
            name=f"agent-loop-sandbox-{secrets.token_hex(6)}",
            repo=workspace.repo,
            home=workspace.home,
            out=workspace.out,
            uid=uid,
            gid=gid,
            limits=self.limits,
            guard=workspace.guard if workspace.guard_module and not network else None,
        )
        env = client_env(os.environ)

        async def kill() -> None:
            proc = await asyncio.create_subprocess_exec(
                self.docker,
                "kill",
                spec.name,
                env=env,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
            )
            await proc.wait()

        outcome = await run_process(
            docker_argv(spec, argv, network=network),
            env=env,
            cwd=workspace.root,
            time_limit=time_limit,
            capture=self.new_capture(),
            on_timeout=kill,
            signal_from_status=True,
        )
        return result_from(outcome, backend=self.name, argv=argv, network=network)

    async def probe(self) -> tuple[bool, str]:
        """Whether a Docker engine answers here, and why not."""
        if shutil.which(self.docker) is None:
            return False, "no docker client on PATH"
        try:
            proc = await asyncio.create_subprocess_exec(
                self.docker,
                "version",
                "--format",
                "{{.Server.Version}}",
                env=client_env(os.environ),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
        except OSError as exc:
            return False, f"the docker client cannot start: {exc}"
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return False, "the Docker engine does not answer within 10 s"
        text = out.decode("utf-8", "replace").strip()
        if proc.returncode != 0:
            last = text.splitlines()[-1] if text else f"exit {proc.returncode}"
            return False, f"the Docker engine does not answer: {last}"
        return True, f"Docker engine {text} answers (image {self.image})"
