"""The emulator's git repository: real git objects in memory (dulwich) plus a ref table.

Real objects mean real SHAs: a blob, tree or commit created through the emulated REST
API has the id `git` itself would compute, so code that builds commits through the git
data API can be checked against the bytes it meant to write. Refs are a plain dict; the
emulator serializes every request under one lock, which makes create/update atomic the
way GitHub's are.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime

from dulwich.object_store import MemoryObjectStore
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree

__all__ = [
    "EMPTY_TREE",
    "MODE_DIR",
    "MODE_EXEC",
    "MODE_FILE",
    "MODE_LINK",
    "MODE_SUBMODULE",
    "GitStore",
    "Identity",
    "TreeItem",
    "TreeWrite",
    "person_of",
]

MODE_FILE = 0o100644
MODE_EXEC = 0o100755
MODE_LINK = 0o120000
MODE_DIR = 0o040000
MODE_SUBMODULE = 0o160000
EMPTY_TREE = Tree().id.decode()

_MODES = {
    "100644": MODE_FILE,
    "100755": MODE_EXEC,
    "120000": MODE_LINK,
    "040000": MODE_DIR,
    "160000": MODE_SUBMODULE,
}


def parse_mode(text: str) -> int | None:
    """The numeric mode for GitHub's mode strings, None when GitHub would reject it."""
    return _MODES.get(text)


def mode_text(mode: int) -> str:
    """GitHub's spelling of a mode (`040000` for trees, zero-padded like git)."""
    return f"{mode:06o}"


def type_of_mode(mode: int) -> str:
    """The object type an entry of that mode points to."""
    if mode == MODE_DIR:
        return "tree"
    return "commit" if mode == MODE_SUBMODULE else "blob"


@dataclass(frozen=True)
class Identity:
    """Author or committer of a commit."""

    name: str
    email: str
    when: datetime


def person_of(raw: bytes) -> tuple[str, str]:
    """`(name, email)` of a commit's author or committer line (`Name <email>`), as its
    creator wrote it."""
    name, _, rest = raw.decode("utf-8", "replace").partition(" <")
    return name, rest.rstrip(">")


@dataclass(frozen=True)
class TreeItem:
    """One entry of a (possibly recursive) tree listing."""

    path: str
    mode: int
    sha: str
    size: int | None


@dataclass(frozen=True)
class TreeWrite:
    """One change for `GitStore.write_tree`: set `path` to (mode, sha), or delete it."""

    path: str
    mode: int
    sha: str | None


class GitStore:
    """Objects and refs of one repository."""

    def __init__(self) -> None:
        self.objects = MemoryObjectStore()
        self.refs: dict[str, str] = {}
        # git knows the empty tree (4b825dc...) in every repository without storing it,
        # and so does GitHub's git data API; claim commits point at it.
        self._store_tree(Tree())

    # ------------------------------------------------------------------ objects
    def get(self, sha: str) -> ShaFile | None:
        """The object with that full hex id, None when absent or malformed."""
        if len(sha) != 40 or any(c not in "0123456789abcdef" for c in sha):
            return None
        oid = ObjectID(sha.encode("ascii"))
        if oid not in self.objects:
            return None
        return self.objects[oid]

    def blob(self, sha: str) -> Blob | None:
        obj = self.get(sha)
        return obj if isinstance(obj, Blob) else None

    def tree(self, sha: str) -> Tree | None:
        obj = self.get(sha)
        return obj if isinstance(obj, Tree) else None

    def commit(self, sha: str) -> Commit | None:
        obj = self.get(sha)
        return obj if isinstance(obj, Commit) else None

    def add_blob(self, data: bytes) -> str:
        blob = Blob.from_string(data)
        self.objects.add_object(blob)
        return blob.id.decode()

    def add_commit(
        self,
        *,
        tree: str,
        parents: list[str],
        message: str,
        author: Identity,
        committer: Identity,
        signature: bytes | None = None,
    ) -> str:
        """A commit object; `signature` is its `gpgsig` header (part of its sha, as in git)."""
        commit = Commit()
        commit.tree = ObjectID(tree.encode("ascii"))
        commit.parents = [ObjectID(p.encode("ascii")) for p in parents]
        commit.author = f"{author.name} <{author.email}>".encode()
        commit.committer = f"{committer.name} <{committer.email}>".encode()
        commit.author_time = int(author.when.timestamp())
        commit.commit_time = int(committer.when.timestamp())
        commit.author_timezone = commit.commit_timezone = 0
        commit.encoding = b"UTF-8"
        commit.message = message.encode()
        if signature is not None:
            commit.gpgsig = signature
        self.objects.add_object(commit)
        return commit.id.decode()

    # ------------------------------------------------------------------ trees
    def write_tree(self, base: str | None, writes: list[TreeWrite]) -> str:
        """A new tree: `base` (or empty) with `writes` applied; nested paths allowed.

        Intermediate trees are created as needed and trees left empty by deletions
        disappear, as git has no empty directories. Deleting a missing path is a no-op.
        """
        changes: dict[tuple[str, ...], TreeWrite] = {}
        for write in writes:
            changes[tuple(write.path.split("/"))] = write
        return self._apply(base, changes) or self._store_tree(Tree())

    def _store_tree(self, tree: Tree) -> str:
        self.objects.add_object(tree)
        return tree.id.decode()

    def _apply(self, base: str | None, changes: Mapping[tuple[str, ...], TreeWrite]) -> str | None:
        tree = Tree()
        if base is not None and (old := self.tree(base)) is not None:
            for entry in old.iteritems():
                tree.add(entry.path, entry.mode, entry.sha)
        nested: dict[str, dict[tuple[str, ...], TreeWrite]] = {}
        for parts, write in changes.items():
            head = parts[0].encode()
            if len(parts) == 1:
                if write.sha is None:
                    if head in tree:
                        del tree[head]
                else:
                    tree.add(head, write.mode, ObjectID(write.sha.encode("ascii")))
            else:
                nested.setdefault(parts[0], {})[parts[1:]] = write
        for name, sub in nested.items():
            key = name.encode()
            current: str | None = None
            if key in tree:
                mode, sha = tree[key]
                current = sha.decode() if mode == MODE_DIR else None
            new = self._apply(current, sub)
            if new is None:
                if key in tree:
                    del tree[key]
            else:
                tree.add(key, MODE_DIR, ObjectID(new.encode("ascii")))
        if len(tree) == 0:
            return None
        return self._store_tree(tree)

    def iter_tree(self, sha: str, *, recursive: bool, prefix: str = "") -> Iterator[TreeItem]:
        """Entries of a tree in git order; subtrees listed before their contents."""
        tree = self.tree(sha)
        if tree is None:
            return
        for entry in tree.iteritems():
            path = prefix + entry.path.decode("utf-8", "replace")
            entry_sha = entry.sha.decode()
            size: int | None = None
            if entry.mode not in (MODE_DIR, MODE_SUBMODULE) and (b := self.blob(entry_sha)):
                size = len(b.data)
            yield TreeItem(path, entry.mode, entry_sha, size)
            if recursive and entry.mode == MODE_DIR:
                yield from self.iter_tree(entry_sha, recursive=True, prefix=path + "/")

    def lookup(self, tree_sha: str, path: str) -> TreeItem | None:
        """The entry at `path` inside a tree (`""` is the tree itself)."""
        if not path.strip("/"):
            return TreeItem("", MODE_DIR, tree_sha, None)
        current = tree_sha
        parts = path.strip("/").split("/")
        for index, part in enumerate(parts):
            tree = self.tree(current)
            if tree is None or part.encode() not in tree:
                return None
            mode, sha = tree[part.encode()]
            if index == len(parts) - 1:
                blob = self.blob(sha.decode()) if mode != MODE_DIR else None
                return TreeItem(
                    path.strip("/"), mode, sha.decode(), len(blob.data) if blob else None
                )
            if mode != MODE_DIR:
                return None
            current = sha.decode()
        return None

    def files(self, tree_sha: str) -> dict[str, tuple[int, str]]:
        """Every non-tree entry of a tree by path: (mode, sha)."""
        return {
            item.path: (item.mode, item.sha)
            for item in self.iter_tree(tree_sha, recursive=True)
            if item.mode != MODE_DIR
        }

    # ------------------------------------------------------------------ history
    def commit_tree(self, commit_sha: str) -> str:
        commit = self.commit(commit_sha)
        assert commit is not None, f"not a commit: {commit_sha}"
        return commit.tree.decode()

    def parents(self, commit_sha: str) -> list[str]:
        commit = self.commit(commit_sha)
        return [p.decode() for p in commit.parents] if commit else []

    def ancestors(self, commit_sha: str) -> set[str]:
        """The commit and everything reachable from it."""
        seen: set[str] = set()
        todo = [commit_sha]
        while todo:
            sha = todo.pop()
            if sha not in seen:
                seen.add(sha)
                todo.extend(self.parents(sha))
        return seen

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Walk back from `descendant` until `ancestor` shows up (fast-forward checks stop
        at the first parent in the common case, whatever the history length)."""
        seen: set[str] = set()
        todo = [descendant]
        while todo:
            sha = todo.pop()
            if sha == ancestor:
                return True
            if sha not in seen:
                seen.add(sha)
                todo.extend(self.parents(sha))
        return False

    def merge_base(self, a: str, b: str) -> str | None:
        """The best common ancestor, as git's: a commit reachable from both that is not an
        ancestor of another such commit (the newest of those, for a criss-cross history).
        Commit times alone cannot decide: commits made in the same second tie."""
        common = self.ancestors(a) & self.ancestors(b)
        # Everything reachable from a common commit is common, so a common commit with a
        # common child is an ancestor of another common commit: not a best one.
        common -= {p for sha in common for p in self.parents(sha)}
        if not common:
            return None

        def key(sha: str) -> tuple[int, str]:
            commit = self.commit(sha)
            return (commit.commit_time if commit else 0, sha)

        return max(common, key=key)

    def first_parent_log(self, commit_sha: str) -> list[str]:
        """Commits from `commit_sha` back to the root along first parents."""
        out: list[str] = []
        sha: str | None = commit_sha
        while sha is not None and (commit := self.commit(sha)) is not None:
            out.append(sha)
            sha = commit.parents[0].decode() if commit.parents else None
        return out

    def commits_between(self, base: str, head: str) -> int:
        """How many commits `head` has that `base` does not (GitHub's `commits` count)."""
        return len(self.ancestors(head) - self.ancestors(base))

    # ------------------------------------------------------------------ refs
    def resolve(self, ref: str) -> str | None:
        """A commit sha for a branch, tag, full ref, `heads/x` style ref or (short) sha."""
        for name in (ref, f"refs/{ref}", f"refs/heads/{ref}", f"refs/tags/{ref}"):
            if name.startswith("refs/") and name in self.refs:
                return self.refs[name]
        lowered = ref.lower()
        if len(lowered) == 40 and self.commit(lowered) is not None:
            return lowered
        if 7 <= len(lowered) < 40 and all(c in "0123456789abcdef" for c in lowered):
            matches = [
                oid.decode()
                for oid in self.objects
                if oid.decode().startswith(lowered) and self.commit(oid.decode()) is not None
            ]
            if len(matches) == 1:
                return matches[0]
        return None
