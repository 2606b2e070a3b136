"""File trees for the sandbox: materialised from files or a tarball, copied privately.

Every run works on its own **copy** of a tree, in a fresh workspace folder that holds
nothing else the command may see:

```text
<tmp>/agent-loop-sandbox-XXXX/
  repo/   the private copy (the command's working directory), changes applied
  home/   the command's HOME
  tmp/    the command's /tmp
  shm/    the command's /dev/shm
  out/    where the command may write a JUnit report ($SANDBOX_JUNIT)
  etc/    generated passwd, group and hosts files
  guard/  the pytest guard, read-only (a guarded pytest run only: `_guard`)
```

The original tree is only ever read. All writes into the copy are checked against
symbolic links in it, because the host side of the sandbox may run with more rights
than the command: a change writing `link/passwd` where `link -> /etc` must fail, not
write through.
"""

from __future__ import annotations

import contextlib
import io
import os
import posixpath
import re
import shutil
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import structlog

from agent_loop_common.sandbox._errors import TreeError

__all__ = [
    "CACHE_DIRS",
    "NEVER_COPIED",
    "Workspace",
    "apply_changes",
    "extract_tarball",
    "pid_alive",
    "safe_relpath",
    "sweep_stale_workspaces",
    "write_tree",
]

WORKSPACE_PREFIX = "agent-loop-sandbox-"
_OWNED = re.compile(re.escape(WORKSPACE_PREFIX) + r"(?P<pid>\d+)-")
STALE_SECONDS = 600.0
"""A workspace of a dead process is swept once it is this old (seconds since a change)."""

CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
"""Folders never copied into a sandbox: caches the command rebuilds itself."""
NEVER_COPIED = frozenset({".git"})
"""Never copied, at any depth: git's metadata can hold credentials (a token in a remote
URL, a saved `http.extraheader`) and is not part of the tree under test."""


def safe_relpath(path: str) -> str:
    """A normalized repository path; `TreeError` for absolute paths, `..` and `.git/`."""
    if not path or "\x00" in path or path.startswith(("/", "\\")):
        raise TreeError(f"not a relative path: {path!r}")
    normal = posixpath.normpath(path.replace("\\", "/"))
    if normal in (".", "..") or normal.startswith("../"):
        raise TreeError(f"path leaves the tree: {path!r}")
    if normal == ".git" or normal.startswith(".git/"):
        raise TreeError(f"path inside .git: {path!r}")
    return normal


def _inside(root: Path, target: Path) -> Path:
    """`root/target`'s real location, refused when a symbolic link leads it out of `root`."""
    real_root = Path(os.path.realpath(root))
    parent = Path(os.path.realpath(target.parent))
    if parent != real_root and real_root not in parent.parents:
        raise TreeError(f"{target.relative_to(root)} lies behind a symbolic link out of the tree")
    return parent / target.name


def _write(root: Path, rel: str, content: str | bytes) -> None:
    dest = root / safe_relpath(rel)
    dest.parent.mkdir(parents=True, exist_ok=True)
    real = _inside(root, dest)
    if real.is_symlink() or (real.exists() and not real.is_file()):
        if real.is_dir() and not real.is_symlink():
            raise TreeError(f"{rel} is a folder in the tree")
        real.unlink()
    data = content.encode("utf-8") if isinstance(content, str) else content
    real.write_bytes(data)


def write_tree(files: Mapping[str, str | bytes], dest: Path) -> Path:
    """Write `path -> content` into `dest` (created if missing); returns `dest`.

    Raises:
        TreeError: A path is absolute, leaves the tree or points into `.git/`.
    """
    dest.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        _write(dest, rel, content)
    return dest


def apply_changes(root: Path, changes: Mapping[str, str | bytes | None]) -> None:
    """Apply a staged change to a tree: write each file, delete each `None`.

    Raises:
        TreeError: A bad path, or one behind a symbolic link leading out of the tree.
    """
    for rel, content in changes.items():
        if content is not None:
            _write(root, rel, content)
            continue
        target = _inside(root, root / safe_relpath(rel))
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            raise TreeError(f"{rel} is a folder; delete its files one by one")


def extract_tarball(archive: bytes, dest: Path, *, skipped: list[str] | None = None) -> Path:
    """Extract a repository tarball into `dest`, dropping GitHub's top-level folder.

    GitHub's tarballs hold everything under one `<owner>-<repo>-<sha>/` folder; when
    every member shares one top folder it is stripped, so `dest` is the repository root.
    Devices and paths leaving the tree are refused by tarfile's `data` filter. A
    symbolic or hard link that filter refuses (an absolute target, one leading out of the
    tree: common in real repositories) is skipped with a note, not the whole archive:
    one such link must not make a repository untestable.

    Args:
        archive: The tarball's bytes.
        dest: Where to extract (created if missing).
        skipped: Receives one note per link left out (they are also logged).

    Raises:
        TreeError: Not a readable tar archive, or a member the filter refuses.
    """
    dest.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
            members = tar.getmembers()
            tops = {m.name.split("/", 1)[0] for m in members if m.name not in ("", ".")}
            strip = len(tops) == 1 and all(
                m.isdir() or "/" in m.name for m in members if m.name.split("/", 1)[0] in tops
            )
            selected: list[tarfile.TarInfo] = []
            for member in members:
                if strip:
                    _, _, rest = member.name.partition("/")
                    if not rest:
                        continue
                    member.name = rest
                if member.type == tarfile.XGLTYPE:  # pax global header, not a file
                    continue
                if member.issym() or member.islnk():
                    try:
                        tarfile.data_filter(member, str(dest))
                    except tarfile.FilterError as exc:
                        notes.append(f"{member.name} -> {member.linkname} was not extracted: {exc}")
                        continue
                selected.append(member)
            tar.extractall(dest, members=selected, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise TreeError(f"cannot extract the archive: {exc}") from None
    if notes:
        _log.warning("sandbox.tree.links_skipped", count=len(notes), first=notes[0])
        if skipped is not None:
            skipped.extend(notes)
    return dest


def _ignore(excluded: frozenset[Path]) -> Callable[[str, list[str]], set[str]]:
    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n in CACHE_DIRS or n in NEVER_COPIED}
        for name in names:
            if Path(folder, name).absolute() in excluded:
                skipped.add(name)
        return skipped

    return ignore


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    os.lchown(root, uid, gid)
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.lchown(os.path.join(folder, name), uid, gid)


_log = structlog.get_logger(__name__)
_cleaner_pool: ThreadPoolExecutor | None = None
_swept: set[str] = set()
_swept_lock = threading.Lock()


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists (one of another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_workspaces(parent: Path | None = None, *, older_than: float = STALE_SECONDS) -> int:
    """Delete workspaces a crashed process left in `parent`; returns how many.

    A workspace's name carries the pid of the process that made it
    (`agent-loop-sandbox-<pid>-...`); one whose process is gone and that has not changed
    for `older_than` seconds is deleted (the age guards against a process of another
    PID namespace sharing the folder). Normal runs delete their own workspace; this
    catches what a killed agent (out of memory, a lost node) could not.
    """
    folder = Path(parent or tempfile.gettempdir())
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    now = time.time()
    for entry in entries:
        match = _OWNED.match(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        pid = int(match.group("pid"))
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if pid == os.getpid() or pid_alive(pid) or age < older_than:
            continue
        Workspace(Path(entry.path)).cleanup()
        removed += 1
    return removed


def _sweep_once(parent: Path | None) -> None:
    key = str(parent or tempfile.gettempdir())
    with _swept_lock:
        if key in _swept:
            return
        _swept.add(key)
    sweep_stale_workspaces(parent)


def _cleaner() -> ThreadPoolExecutor:
    global _cleaner_pool
    if _cleaner_pool is None:
        _cleaner_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-cleanup")
    return _cleaner_pool


class Workspace:
    """A fresh folder holding one private copy of a tree and the command's other folders.

    Use `Workspace.create(...)` and `cleanup()` (or `with`).
    """

    def __init__(self, root: Path, source: Path | None = None) -> None:
        self.root = root
        self.source = source
        """The tree this workspace copies (only read)."""
        self.repo = root / "repo"
        self.home = root / "home"
        self.tmp = root / "tmp"
        self.out = root / "out"
        self.shm = root / "shm"
        self.etc = root / "etc"
        self.guard = root / "guard"
        """The pytest guard's read-only folder (made only for a guarded run)."""
        self.guard_module: str | None = None
        """The run's guard module name, once the guard is installed (`_guard`)."""

    @property
    def junit(self) -> Path:
        """Where a command may write its JUnit report."""
        return self.out / "junit.xml"

    @classmethod
    def create(
        cls,
        tree: Path,
        *,
        changes: Mapping[str, str | bytes | None] | None = None,
        owner: tuple[int, int] | None = None,
        exclude: Iterable[Path] = (),
        parent: Path | None = None,
    ) -> Workspace:
        """Copy `tree` into a new workspace and apply `changes` to the copy.

        Args:
            tree: The tree to copy (never modified). Symbolic links are copied as links.
            changes: A staged change to apply to the copy (`None` deletes a file).
            owner: `(uid, gid)` to give every file of the workspace (when the command
                runs as another user than this process).
            exclude: Absolute paths inside `tree` never to copy (the agent's state
                folder, a key file, a host virtualenv). `.git` is never copied.
            parent: Where to create the workspace (default: the system's temp folder).

        Raises:
            TreeError: `tree` is not a folder, or `changes` has a bad path.
        """
        if not tree.is_dir():
            raise TreeError(f"not a folder: {tree}")
        _sweep_once(parent)
        # mkdtemp makes it 0700: private to this process's user, and as root it then
        # belongs to the sandbox's uid alone (`owner`).
        root = Path(tempfile.mkdtemp(prefix=f"{WORKSPACE_PREFIX}{os.getpid()}-", dir=parent))
        workspace = cls(root, source=tree.absolute())
        try:
            excluded = frozenset(Path(p).absolute() for p in exclude)
            shutil.copytree(tree, workspace.repo, symlinks=True, ignore=_ignore(excluded))
            if changes:
                apply_changes(workspace.repo, changes)
            for folder in (
                workspace.home,
                workspace.tmp,
                workspace.out,
                workspace.shm,
                workspace.etc,
            ):
                folder.mkdir()
            if owner is not None:
                _chown_tree(root, *owner)
        except BaseException:
            workspace.cleanup()
            raise
        return workspace

    def write_etc(self, files: Mapping[str, str]) -> dict[str, Path]:
        """Write generated `/etc` files (name -> text); returns name -> host path."""
        written: dict[str, Path] = {}
        for name, text in files.items():
            path = self.etc / name
            path.write_text(text, encoding="utf-8")
            os.chmod(path, 0o644)
            written[name] = path
        return written

    def cleanup(self) -> None:
        """Delete the workspace and everything the command left in it.

        A command may have taken the write bit off its folders: they get it back first.
        """
        for folder, dirs, _ in os.walk(self.root):
            for name in dirs:
                path = os.path.join(folder, name)
                if not os.path.islink(path):
                    with contextlib.suppress(OSError):
                        os.chmod(path, 0o700)
        shutil.rmtree(self.root, ignore_errors=True)

    def discard(self) -> Future[None]:
        """Delete the workspace in the background; the returned future says when it is gone.

        Deleting folders can cost milliseconds each (file systems mounted with `discard`),
        which a caller waiting for a test result should not pay. One background thread
        does it, and it is joined at interpreter exit, so nothing is left behind.
        """
        return _cleaner().submit(self.cleanup)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.cleanup()
