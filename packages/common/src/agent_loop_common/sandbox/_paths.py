"""Which host paths a sandbox may see read-only, and which it never may.

What a sandbox sees is computed from host state the operator controls, never from the
repository: the system folders, the installation of a program named by absolute path
outside the repository, and `AGENT_LOOP_SANDBOX_READONLY_PATHS`. A command named by
absolute path (a virtualenv's `python`, a toolchain under `/opt`) must find its
installation inside the sandbox, so its folder is bound read-only. A virtualenv's
interpreter is a symbolic link into another installation (for example
`/root/.pyenv/versions/3.11.7/`): both the virtualenv and the resolved installation
prefix are bound, never the home folder around them. Nothing inside the repository (a
committed `.venv/pyvenv.cfg`, one a setup step wrote, one a model staged, a shebang, a
symbolic link) adds a bind: a virtualenv made in the copy works when the interpreter it
links to is already visible (a system Python, or a configured read-only path).

Some paths are never bound, whatever the command or `AGENT_LOOP_SANDBOX_READONLY_PATHS`
asks: a home folder or any folder containing one, the agent's state folder
(`AGENT_LOOP_HOME`) and anything in or around it, a key file
(`GITHUB_APP_PRIVATE_KEY_PATH`) and the folders holding it, credential folders such as
`~/.ssh`, and the system's own `/`, `/etc`, `/proc`, `/sys`, `/dev`, `/run`, `/tmp`.
A refused bind is skipped with a note in the run's result, never silently.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SYSTEM_DIRS",
    "ProtectedPaths",
    "plan_binds",
    "program_binds",
]

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""System folders every sandbox sees read-only (links to `/usr` on merged systems)."""

_NEVER = (
    *("/", "/etc", "/proc", "/sys", "/dev", "/run", "/var/run", "/boot"),
    *("/tmp", "/var/tmp"),  # noqa: S108 (shared temp folders are never bound whole)
)
_NEVER_BELOW = ("/proc", "/sys", "/dev", "/run", "/var/run")
_CREDENTIAL_DIRS = frozenset(
    {
        ".ssh",
        ".gnupg",
        ".aws",
        ".azure",
        ".config",
        ".docker",
        ".kube",
        ".netrc",
        ".git-credentials",
        ".npmrc",
        ".pypirc",
    }
)
# Broad folders that hold both toolchains (uv's and pipx's Pythons live under
# ~/.local/share) and secrets (keyrings): never bound whole, but a folder below may be.
_BROAD_DIRS = frozenset({".local", ".cache", ".local/share"})


def _absolute(path: Path | str) -> Path:
    return Path(os.path.abspath(os.path.expanduser(str(path))))


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _system_homes() -> list[Path]:
    homes: list[Path] = []
    for entry in pwd.getpwall():
        home = entry.pw_dir
        # People and root; system accounts have homes such as /bin or /usr/sbin.
        person = entry.pw_uid == 0 or 1000 <= entry.pw_uid < 65534
        if person and home and home not in ("/", "/nonexistent") and os.path.isdir(home):
            homes.append(Path(home))
    return homes


@dataclass(frozen=True)
class ProtectedPaths:
    """Host paths that no bind may expose.

    Attributes:
        homes: Home folders (never bound, nor any folder containing one).
        agent_home: The agent's state folder (`AGENT_LOOP_HOME`).
        key_files: Key files (`GITHUB_APP_PRIVATE_KEY_PATH`).
        extra: More paths never bound, nor anything in or around them.
    """

    homes: tuple[Path, ...] = ()
    agent_home: Path | None = None
    key_files: tuple[Path, ...] = ()
    extra: tuple[Path, ...] = ()

    @classmethod
    def current(
        cls, *, agent_home: Path | str | None = None, key_files: Iterable[Path | str] = ()
    ) -> ProtectedPaths:
        """The protected paths of this machine: `$HOME`, every user's home, and the given."""
        homes = {_absolute(Path.home())}
        env_home = os.environ.get("HOME")
        if env_home:
            homes.add(_absolute(env_home))
        homes.update(_absolute(h) for h in _system_homes())
        homes |= {_real(h) for h in homes}
        keys = {_absolute(k) for k in key_files if str(k)}
        keys |= {_real(k) for k in keys}
        env_key = os.environ.get("GITHUB_APP_PRIVATE_KEY_PATH")
        if env_key:
            keys |= {_absolute(env_key), _real(_absolute(env_key))}
        return cls(
            homes=tuple(sorted(homes)),
            agent_home=_absolute(agent_home) if agent_home else None,
            key_files=tuple(sorted(keys)),
        )

    def in_tree(self, tree: Path) -> list[Path]:
        """Protected paths inside `tree`, to leave out when copying it."""
        root = _absolute(tree)
        candidates = (self.agent_home, *self.key_files)
        return [p for p in candidates if p is not None and (p == root or root in p.parents)]

    def tree_refusal(self, tree: Path) -> str | None:
        """Why `tree` may not be copied into a sandbox, or `None` when it may.

        A tree containing the agent's state folder or a key file is fine: those are left
        out of the copy. A home folder, a system folder, or a tree inside the state
        folder or a credential folder is not.
        """
        path = _real(_absolute(tree))
        text = str(path)
        if text in _NEVER or any(text.startswith(b + "/") for b in _NEVER_BELOW):
            return f"{path} is a system folder"
        for home in self.homes:
            if path == home or path in home.parents:
                return f"{path} is (or contains) the home folder {home}"
            if home in path.parents and path.relative_to(home).parts[0] in _CREDENTIAL_DIRS:
                return f"{path} is in a folder that can hold credentials"
        agent = self.agent_home
        if agent is not None and (path == agent or agent in path.parents):
            return f"{path} is inside the agent's state folder {agent}"
        return None

    def refusal(self, path: Path) -> str | None:
        """Why `path` may not be bound read-only into a sandbox, or `None` when it may."""
        for candidate in {_absolute(path), _real(_absolute(path))}:
            reason = self._refusal(candidate)
            if reason is not None:
                return reason
        return None

    def _refusal(self, path: Path) -> str | None:
        text = str(path)
        if text in _NEVER:
            return f"{path} is a system folder that is never shared"
        if any(text.startswith(below + "/") for below in _NEVER_BELOW):
            return f"{path} is inside a kernel or runtime folder"
        for home in self.homes:
            if path == home or path in home.parents:
                return f"{path} is (or contains) the home folder {home}"
            if home in path.parents:
                inner = path.relative_to(home)
                if inner.parts[0] in _CREDENTIAL_DIRS:
                    return f"{path} is in {home / inner.parts[0]}, which can hold credentials"
                if inner.as_posix() in _BROAD_DIRS:
                    return f"{path} can hold credentials; bind a folder inside it instead"
        if self.agent_home is not None:
            agent = self.agent_home
            if path == agent or path in agent.parents or agent in path.parents:
                return f"{path} is (or contains, or is inside) the agent's state folder {agent}"
        for key in self.key_files:
            if path == key or path in key.parents:
                return f"{path} is (or contains) the key file {key}"
        for other in self.extra:
            if path == other or path in other.parents or other in path.parents:
                return f"{path} is protected ({other})"
        return None


def _under_system(path: Path) -> bool:
    text = str(path)
    return any(text == d or text.startswith(d + "/") for d in SYSTEM_DIRS)


def _within(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _find_venv(program: Path) -> Path | None:
    for folder in program.parents:
        if (folder / "pyvenv.cfg").is_file():
            return folder
        if folder == folder.parent:
            break
    return None


def _prefix(executable: Path) -> Path:
    # /prefix/bin/tool -> /prefix; anything else -> its own folder.
    folder = executable.parent
    return folder.parent if folder.name in ("bin", "sbin") and folder.parent != folder else folder


def program_binds(program: str) -> list[Path]:
    """Host folders a program named by absolute path needs to run in a sandbox.

    For a virtualenv's interpreter: the virtualenv and the installation its interpreter
    links to (the resolved link, on the host). For anything else: the installation
    prefix of the program and of what it links to. A program under the system folders
    (always bound) needs none, nor does a relative program or a missing one.

    The contents of `pyvenv.cfg` are never read: only where the host's own links lead
    decides what is bound, so a text file cannot name a folder to expose.
    """
    if not program.startswith("/"):
        return []
    path = _absolute(program)
    if not path.exists():
        return []
    real = _real(path)
    if _under_system(path) and _under_system(real):
        return []
    binds: list[Path] = []
    venv = _find_venv(path)
    binds.append(venv if venv is not None else _prefix(path))
    binds.append(_prefix(real))
    unique: list[Path] = []
    for bind in binds:
        if not _under_system(bind) and bind not in unique:
            unique.append(bind)
    return unique


def plan_binds(
    programs: Sequence[str],
    readonly_paths: Sequence[str | Path],
    protected: ProtectedPaths,
    *,
    trees: Sequence[Path] = (),
) -> tuple[list[Path], list[str]]:
    """The read-only binds for these programs and configured paths, and the refusals.

    Only host state the operator controls adds a bind: a program named by absolute path
    outside the repository (and the installation it links to) and the configured
    read-only paths. A program inside one of `trees` (the repository and its copy) adds
    none, whatever its `pyvenv.cfg`, shebang or links say, because the repository's
    content and what a sandboxed step wrote must never choose which host folders a
    sandbox sees.

    Args:
        programs: Programs of the command (only absolute ones matter).
        readonly_paths: `AGENT_LOOP_SANDBOX_READONLY_PATHS`.
        protected: Paths never bound.
        trees: Folders whose content is not trusted to choose a bind.

    Returns:
        The folders (or files) to bind read-only at the same path inside, outermost
        first with nested ones dropped; and one note per refused or missing path.
    """
    wanted: list[Path] = []
    notes: list[str] = []
    roots = [r for t in trees for r in dict.fromkeys((_absolute(t), _real(_absolute(t))))]
    for program in programs:
        if program.startswith("/"):
            named = _absolute(program)
            if _within(named, roots) or _within(_real(named), roots):
                notes.append(
                    f"not bound: {program} is inside the repository, whose content never "
                    "chooses a host folder to show"
                )
                continue
        wanted.extend(program_binds(program))
    for configured in readonly_paths:
        path = _absolute(configured)
        if not path.exists():
            notes.append(f"read-only path {path} does not exist: not bound")
            continue
        wanted.append(path)
    accepted: list[Path] = []
    for path in wanted:
        reason = protected.refusal(path)
        if reason is not None:
            notes.append(f"not bound: {reason}")
            continue
        if path not in accepted:
            accepted.append(path)
    accepted.sort(key=lambda p: (len(p.parts), str(p)))
    outermost = [p for p in accepted if not any(q in p.parents for q in accepted if q != p)]
    return outermost, list(dict.fromkeys(notes))
