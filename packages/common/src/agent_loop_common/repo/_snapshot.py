"""The repository at one pinned commit, read lazily and cached for the run.

An agent, its verifier and the pipeline all look at one commit (the builder: the default
branch's head when the run started; the reviewer: the pull request's head it reviews),
so what the model read, what the verifier diffed against and the commit's parent agree
even if the branch moves meanwhile. Listing is one
tree request, cached; where the repository is known small (its `diskUsage`, read with
the default branch), the listing comes from the tarball the run downloads anyway. Files come from one tarball download when the whole commit is
small (the tree lists every file's size; a run reads several files, so one download
beats one contents request each), else one contents request per file; both cached.
Searching the code needs
every file, so it downloads the tarball once (one request plus GitHub's redirect)
instead of one contents request per file: a search costs the same in a repository of
ten files or ten thousand, and stays far from the rate limit on a five-minute schedule.
The same download is the tree the sandbox runs the tests on (`archive`), so a run that
searches and tests fetches the commit once.

A snapshot can also be built from a tarball already in hand (`RepoSnapshot.from_archive`):
then it has no facade at all, and its listing, every file, the search index and the
sandbox's tree come from those bytes alone. The benchmark (`agent-loop eval run`) works
that way, so nothing it shows the model or runs can come from GitHub, and nothing from
after the pinned commit can reach the run through a read.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import tarfile

from agent_loop_common.github import GitHub, GitTree, TreeEntry

__all__ = ["OfflineSnapshot", "RepoSnapshot"]

_SEARCH_MAX_FILE_BYTES = 512_000
_ARCHIVE_READ_MAX_BYTES = 1_000_000
"""A commit whose files add up to at most this many bytes is read from its tarball."""


class OfflineSnapshot(RuntimeError):
    """A snapshot built from a tarball was asked for something only GitHub could give
    (never expected: every read of such a snapshot is answered from its bytes)."""


class RepoSnapshot:
    """Read-only view of one commit of the repository.

    Args:
        github: The run's facade; `None` only through `from_archive`.
        sha: The pinned commit.
        branch: The branch it was read from (the PR's base for the builder, the PR's
            head branch for the reviewer).
        label: How the tools name this commit to the model, e.g. `base branch main`
            or `head commit 1a2b3c4`; by default `branch <branch>`.
    """

    def __init__(
        self,
        github: GitHub | None,
        sha: str,
        branch: str,
        *,
        label: str = "",
        tree_sha: str = "",
        disk_usage_kb: int | None = None,
    ) -> None:
        self.github = github
        self.sha = sha
        self.branch = branch
        self.label = label or f"branch {branch}"
        self._tree_sha = tree_sha
        # A repository whose every commit packed fits the tarball budget has a small
        # tarball: download it first and take the listing from it (one read saved).
        self._known_small = (
            disk_usage_kb is not None and disk_usage_kb * 1024 <= _ARCHIVE_READ_MAX_BYTES
        )
        self._tree: GitTree | None = None
        self._paths: list[str] | None = None
        self._files: dict[str, bytes | None] = {}
        self._index: dict[str, str] | None = None
        self._archive: bytes | None = None
        self._lock = asyncio.Lock()
        self._archive_lock = asyncio.Lock()
        self._blobs: dict[str, bytes] | None = None
        """Every file's bytes, when the snapshot was built from a tarball."""

    @classmethod
    def from_archive(
        cls, archive: bytes, sha: str, branch: str, *, label: str = "", tree_sha: str = ""
    ) -> RepoSnapshot:
        """A snapshot of commit `sha` read from its tarball alone, never from GitHub.

        Args:
            archive: The commit's gzipped tarball as GitHub serves it (one top folder).
            sha: The commit the tarball is of (baselines and evidence are keyed by it).
            branch: How the commit is named in prompts (a branch, or a short sha).
            label: How the tools name this commit to the model (as for the constructor).
            tree_sha: The commit's tree sha, if known (a tarball does not carry it).

        Raises:
            tarfile.TarError: `archive` is not a readable tarball.
        """
        snapshot = cls(None, sha, branch, label=label, tree_sha=tree_sha)
        snapshot._archive = archive
        snapshot._tree = _archive_tree(archive, tree_sha)
        snapshot._blobs = _all_files(archive)
        return snapshot

    @property
    def offline(self) -> bool:
        """Whether this snapshot reads from a tarball in hand only (`from_archive`)."""
        return self._blobs is not None

    def _github(self) -> GitHub:
        if self.github is None:
            raise OfflineSnapshot(f"the snapshot of {self.sha} reads its tarball only")
        return self.github

    async def tree(self) -> GitTree:
        """The commit's whole tree, read once (a commit built on this one reuses it as
        its parent tree: `commit_files(parent_tree=...)`)."""
        if self._tree is None:
            if self._known_small and self._tree_sha:
                self._tree = _archive_tree(await self.archive(), self._tree_sha)
            else:
                self._tree = await self._github().read_tree(self.sha, recursive=True)
        return self._tree

    async def paths(self) -> list[str]:
        """Every file path (blobs only), sorted."""
        if self._paths is None:
            self._paths = sorted(e.path for e in (await self.tree()).entries if e.type == "blob")
        return self._paths

    async def _small(self) -> bool:
        """Whether the whole commit is small enough to read from one tarball."""
        if self._known_small:
            return True
        sizes = (e.size or 0 for e in (await self.tree()).entries if e.type == "blob")
        return sum(sizes) <= _ARCHIVE_READ_MAX_BYTES

    async def exists(self, path: str) -> bool:
        """Whether a file exists at `path` (the `exists_at_base` of the staging tools)."""
        return path in set(await self.paths())

    async def read(self, path: str) -> bytes | None:
        """The bytes of `path`, or `None` when there is no such file."""
        if self._blobs is not None:
            return self._blobs.get(path)
        if path not in self._files:
            if self._index is None and await self._small():
                await self.search_index()
            if self._index is not None and path in self._index:
                self._files[path] = self._index[path].encode("utf-8")
            elif not await self.exists(path):
                self._files[path] = None
            else:
                self._files[path] = await self._github().get_file(path, self.sha)
        return self._files[path]

    async def text(self, path: str) -> str | None:
        """The text of `path`; `None` when missing or not UTF-8 text."""
        data = await self.read(path)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    async def originals(self, paths: list[str]) -> dict[str, str | None]:
        """Base contents for the verifier's diffs; binary files are left out."""
        out: dict[str, str | None] = {}
        for path in paths:
            data = await self.read(path)
            if data is None:
                out[path] = None
                continue
            try:
                out[path] = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
        return out

    async def archive(self) -> bytes:
        """The commit's tarball (GitHub's), downloaded once per snapshot."""
        async with self._archive_lock:
            if self._archive is None:
                self._archive = await self._github().download_archive(self.sha)
        return self._archive

    async def search_index(self) -> dict[str, str]:
        """Every UTF-8 text file up to 512 kB, from one tarball download."""
        async with self._lock:
            if self._index is None:
                self._index = _text_files(await self.archive())
        return self._index


def _members(tar: tarfile.TarFile) -> list[tuple[tarfile.TarInfo, str]]:
    """Each member with its path in the repository, by `extract_tarball`'s rule (what the
    sandbox's tree is): GitHub puts everything under one `<owner>-<repo>-<sha>/` folder,
    which is dropped when every member shares one top folder; a GitHub-like server's
    archive with its files at the root (`git archive` without `--prefix`) keeps them."""
    members = [m for m in tar.getmembers() if m.type != tarfile.XGLTYPE]
    tops = {m.name.split("/", 1)[0] for m in members if m.name not in ("", ".")}
    strip = len(tops) == 1 and all(
        m.isdir() or "/" in m.name for m in members if m.name.split("/", 1)[0] in tops
    )
    found: list[tuple[tarfile.TarInfo, str]] = []
    for member in members:
        path = member.name.partition("/")[2] if strip else member.name
        path = path.removeprefix("./").strip("/")
        if path and path != ".":
            found.append((member, path))
    return found


def _archive_tree(archive: bytes, tree_sha: str) -> GitTree:
    """The commit's tree as its tarball lists it: files with git's modes and blob shas
    (computed from their bytes), symlinks, and the folders above them.

    Folders carry no sha (a tarball has none to give) and submodules are absent (an
    archive leaves their content out), which is all a listing, `exists` and
    `commit_files`' shape checks ask of the tree.
    """
    entries: list[TreeEntry] = []
    folders: set[str] = set()
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
        for member, path in _members(tar):
            if not (member.isfile() or member.issym()):
                continue
            if member.issym():
                data, mode = member.linkname.encode(), "120000"
            else:
                handle = tar.extractfile(member)
                data = handle.read() if handle is not None else b""
                mode = "100755" if member.mode & 0o111 else "100644"
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False)
            entries.append(
                TreeEntry(path=path, type="blob", sha=blob.hexdigest(), size=len(data), mode=mode)
            )
            parts = path.split("/")
            folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
    entries.extend(
        TreeEntry(path=folder, type="tree", sha="", size=None, mode="040000") for folder in folders
    )
    return GitTree(sha=tree_sha, entries=tuple(sorted(entries, key=lambda e: e.path)))


def _all_files(archive: bytes) -> dict[str, bytes]:
    """Every regular file's bytes, and a symlink's target as its content (what GitHub's
    contents API answers for a link), by path below the tarball's top folder."""
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
        for member, path in _members(tar):
            if member.issym():
                out[path] = member.linkname.encode()
            elif member.isfile() and (handle := tar.extractfile(member)) is not None:
                out[path] = handle.read()
    return out


def _text_files(archive: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
        for member, path in _members(tar):
            if not member.isfile() or member.size > _SEARCH_MAX_FILE_BYTES:
                continue
            handle = tar.extractfile(member)
            if handle is None:
                continue
            try:
                out[path] = handle.read().decode("utf-8")
            except UnicodeDecodeError:
                continue
    return out
