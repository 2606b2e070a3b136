"""Diffs, per-file change stats, three-way tree merges and tarballs from real git trees.

A pull request's diff on GitHub is the three-dot diff: from the merge base of base and
head to head. Computing it from the stored trees (not from whatever a test claims
changed) keeps `files`, `diff` and review-comment hunks consistent with each other.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass

from dulwich.archive import tar_stream
from dulwich.objects import ObjectID
from dulwich.patch import write_object_diff

from agent_loop_testing._emulator_git import MODE_DIR, GitStore, TreeWrite

__all__ = [
    "FileChange",
    "file_changes",
    "hunk_for_line",
    "merge_trees",
    "shown_lines",
    "tarball",
    "unified_diff",
]


@dataclass(frozen=True)
class FileChange:
    """One changed file between two trees, shaped like GitHub's `DiffEntry`."""

    filename: str
    status: str
    sha: str | None
    additions: int
    deletions: int
    patch: str | None


def _oid(sha: str | None) -> ObjectID | None:
    return ObjectID(sha.encode("ascii")) if sha is not None else None


def _changed_paths(
    store: GitStore, old_tree: str, new_tree: str
) -> list[tuple[str, tuple[int, str] | None, tuple[int, str] | None]]:
    old = store.files(old_tree)
    new = store.files(new_tree)
    paths = sorted(set(old) | set(new))
    return [(p, old.get(p), new.get(p)) for p in paths if old.get(p) != new.get(p)]


def _file_diff(
    store: GitStore, path: str, old: tuple[int, str] | None, new: tuple[int, str] | None
) -> str:
    buf = io.BytesIO()
    name = path.encode()
    write_object_diff(
        buf,
        store.objects,
        (name if old else None, old[0] if old else None, _oid(old[1]) if old else None),
        (name if new else None, new[0] if new else None, _oid(new[1]) if new else None),
    )
    return buf.getvalue().decode("utf-8", "replace")


def unified_diff(store: GitStore, old_tree: str, new_tree: str) -> str:
    """`git diff old new` text (what `Accept: application/vnd.github.diff` returns)."""
    return "".join(
        _file_diff(store, path, old, new)
        for path, old, new in _changed_paths(store, old_tree, new_tree)
    )


def file_changes(store: GitStore, old_tree: str, new_tree: str) -> list[FileChange]:
    """Per-file status, line counts and hunk text (`patch` starts at the first `@@`)."""
    out: list[FileChange] = []
    for path, old, new in _changed_paths(store, old_tree, new_tree):
        text = _file_diff(store, path, old, new)
        lines = text.splitlines()
        start = next((i for i, line in enumerate(lines) if line.startswith("@@")), None)
        hunks = lines[start:] if start is not None else []
        patch = "\n".join(hunks) if hunks else None
        additions = sum(1 for line in hunks if line.startswith("+"))
        deletions = sum(1 for line in hunks if line.startswith("-"))
        status = "added" if old is None else "removed" if new is None else "modified"
        out.append(FileChange(path, status, new[1] if new else None, additions, deletions, patch))
    return out


def hunk_for_line(patch: str | None, line: int) -> str | None:
    """GitHub's `diff_hunk` for a review comment: hunk header through the commented line."""
    if patch is None:
        return None
    lines = patch.split("\n")
    for index, header_index, new_line, _ in _shown(lines):
        if new_line == line:
            return "\n".join(lines[header_index : index + 1])
    return None


def shown_lines(patch: str) -> list[tuple[int, bool]]:
    """The new-file lines a unified-diff `patch` shows, each with whether the diff adds
    it: GitHub (and the emulator) take a review thread only on one of them."""
    return [(new_line, added) for _, _, new_line, added in _shown(patch.split("\n"))]


def _shown(lines: list[str]) -> Iterator[tuple[int, int, int, bool]]:
    """Each new-file line of a patch's `lines` under a hunk header: its index, its hunk
    header's index, its line number in the new file, and whether the diff adds it."""
    header_index = -1
    new_line = 0
    for index, text in enumerate(lines):
        if text.startswith("@@"):
            header_index = index
            new_part = text.split("+", 1)[1].split(" ", 1)[0]
            new_line = int(new_part.split(",")[0]) - 1
            continue
        if text.startswith("-"):
            continue
        new_line += 1
        if header_index >= 0:
            yield index, header_index, new_line, text.startswith("+")


def merge_trees(store: GitStore, base: str | None, ours: str, theirs: str) -> str | None:
    """File-level three-way merge; None on a conflict (same path changed both ways)."""
    base_files = store.files(base) if base else {}
    our_files = store.files(ours)
    their_files = store.files(theirs)
    writes: list[TreeWrite] = []
    for path in sorted(set(base_files) | set(our_files) | set(their_files)):
        b, o, t = base_files.get(path), our_files.get(path), their_files.get(path)
        if o == t or t == b:
            continue
        if o != b:
            return None
        writes.append(TreeWrite(path, t[0] if t else MODE_DIR, t[1] if t else None))
    return store.write_tree(ours, writes)


def tarball(store: GitStore, commit_sha: str, prefix: str, mtime: int) -> bytes:
    """A gzipped tarball of the commit's tree under `prefix/` (GitHub's archive layout)."""
    tree = store.tree(store.commit_tree(commit_sha))
    assert tree is not None
    return b"".join(
        tar_stream(store.objects, tree, mtime, prefix=prefix.encode() + b"/", format="gz")
    )
