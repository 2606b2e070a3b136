"""Resource limits of one sandboxed command, and how they become `prlimit` options.

Every backend enforces the same numbers; only the mechanism differs (rlimits set by
`prlimit` inside bubblewrap and for the plain subprocess, `docker run` flags, Flyte task
resources). The limits are set on the command *inside* the sandbox's namespaces: a
process-count limit set outside a user namespace would be counted against every process
of that user on the host, and one set on a host-root process is ignored by the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SandboxLimits"]

_MB = 1024 * 1024


@dataclass(frozen=True)
class SandboxLimits:
    """What one command may use.

    Attributes:
        wall_seconds: Wall-clock time; the whole sandbox is killed when it is up.
        memory_mb: Address space of each process (`RLIMIT_AS`), or the container's
            memory with docker and Flyte. With rlimits, a sandbox as a whole can reach
            `memory_mb * max_processes` (`total_memory_mb`).
        max_processes: Processes and threads inside the sandbox (`RLIMIT_NPROC` in its
            own user namespace, `--pids-limit` with docker).
        max_file_mb: Largest file a process may write (`RLIMIT_FSIZE`).
        cpu_seconds: CPU time of each process (`RLIMIT_CPU`); `None`: the wall time,
            rounded up, since a process cannot use more on one core before it is killed.
    """

    wall_seconds: float = 600.0
    memory_mb: int = 4096
    max_processes: int = 256
    max_file_mb: int = 256
    cpu_seconds: int | None = None

    def __post_init__(self) -> None:
        if self.wall_seconds <= 0:
            raise ValueError("wall_seconds must be positive")
        for name in ("memory_mb", "max_processes", "max_file_mb"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")

    @property
    def cpu(self) -> int:
        """CPU seconds per process."""
        if self.cpu_seconds is not None:
            return self.cpu_seconds
        return max(1, int(self.wall_seconds) + 1)

    @property
    def memory_bytes(self) -> int:
        """`memory_mb` in bytes."""
        return self.memory_mb * _MB

    @property
    def total_memory_mb(self) -> int:
        """What one sandbox can hold in total when only rlimits bound it.

        `RLIMIT_AS` bounds each process, so every process the limit allows may use it
        (measured: 1.6 GB resident under a 256 MB setting with 256 processes).
        """
        return self.memory_mb * self.max_processes

    def bounds(self, backend: str, *, cgroup: str | None = None) -> str:
        """The real memory and process bound of one sandbox of `backend`, for people.

        Args:
            backend: The backend's name.
            cgroup: How the whole sandbox is bounded by a control group (`cgroup v1`,
                `cgroup v2`), or `None` when only rlimits bound it.
        """
        if backend == "docker":
            return (
                f"docker: --memory {self.memory_mb} MB and --pids-limit {self.max_processes} "
                "bound the whole container"
            )
        if backend == "flyte":
            return (
                f"flyte: the pod's memory limit ({self.memory_mb} MB) bounds the whole task; "
                "the process count is the cluster's pod PID limit"
            )
        if cgroup is not None:
            return (
                f"{backend}: {self.memory_mb} MB of memory and {self.max_processes} processes "
                f"for the whole sandbox ({cgroup}), and {self.memory_mb} MB of address space "
                "per process (RLIMIT_AS)"
            )
        return (
            f"{backend}: {self.memory_mb} MB of address space per process (RLIMIT_AS) and "
            f"{self.max_processes} processes, so one sandbox can use up to "
            f"{self.total_memory_mb:,} MB in total: no cgroup bounds the sandbox as a whole "
            "(lower AGENT_LOOP_SANDBOX_MAX_PROCESSES to lower that bound)"
        )

    def per_process_note(self, why: str) -> str:
        """The note on every result of a run no control group bounded (`RunResult.notes`).

        Args:
            why: Why no control group bounded it (the host's reason, for people).
        """
        return (
            f"limits per process: no control group bounded this sandbox as a whole ({why}): "
            f"{self.memory_mb} MB of address space per process and {self.max_processes} "
            f"processes, so up to {self.total_memory_mb:,} MB in total "
            "(AGENT_LOOP_SANDBOX_REQUIRE_CGROUP=true refuses to run without one)"
        )

    @property
    def file_bytes(self) -> int:
        """`max_file_mb` in bytes."""
        return self.max_file_mb * _MB

    def prlimit_argv(
        self, prlimit: str = "/usr/bin/prlimit", *, processes: bool = True
    ) -> list[str]:
        """The `prlimit ... --` prefix that applies these limits to the command after it.

        Args:
            prlimit: The `prlimit` program (util-linux).
            processes: Also limit the process count (only meaningful inside a user
                namespace of its own, where the kernel counts this sandbox's processes only).
        """
        argv = [
            prlimit,
            f"--as={self.memory_bytes}",
            f"--cpu={self.cpu}",
            f"--fsize={self.file_bytes}",
            "--core=0",
        ]
        if processes:
            argv.append(f"--nproc={self.max_processes}")
        return [*argv, "--"]
