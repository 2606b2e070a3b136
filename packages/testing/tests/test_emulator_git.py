"""The emulator's git layer: ref-name rules, real object ids, trees, history and diffs."""

from __future__ import annotations

import gzip
import io
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_loop_testing import GitHubEmulator, is_valid_ref_name
from agent_loop_testing._emulator_git import MODE_FILE, GitStore, Identity, TreeWrite
from agent_loop_testing._emulator_gitdiff import (
    file_changes,
    hunk_for_line,
    merge_trees,
    tarball,
    unified_diff,
)

WHO = Identity("acme", "2+acme@users.noreply.github.com", datetime(2026, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize(
    "name",
    [
        "refs/heads/main",
        "refs/heads/agent/issue-7",
        "refs/tags/v1.0",
        "refs/agent-loop/claims/issue-7",
        "refs/agent-loop/claims/pr-12/run-20260101T000000Z-ab12",
    ],
)
def test_valid_ref_names_include_custom_namespaces(name: str) -> None:
    assert is_valid_ref_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "heads/main",  # not fully qualified
        "refs/main",  # fewer than two slashes
        "refs/heads/a..b",
        "refs/heads/a@{b",
        "refs/heads/with space",
        "refs/heads/tab\there",
        "refs/heads/x.lock",
        "refs/heads/.hidden",
        "refs/heads/trailing/",
        "refs/heads/trailing.",
        "refs/heads//double",
        "refs/heads/a~1",
        "refs/heads/a^",
        "refs/heads/a:b",
        "refs/heads/a?",
        "refs/heads/a*",
        "refs/heads/a[b",
        "refs/heads/a\\b",
        "refs/heads/refs/heads/x",  # GitHub blocks ambiguous branch names since 2023
    ],
)
def test_invalid_ref_names(name: str) -> None:
    assert not is_valid_ref_name(name)


def test_object_ids_are_gits() -> None:
    store = GitStore()
    # `printf 'hello\n' | git hash-object --stdin` and git's empty tree.
    assert store.add_blob(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    assert store.write_tree(None, []) == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def test_write_tree_nests_paths_and_deletes_with_none() -> None:
    store = GitStore()
    a, b = store.add_blob(b"a\n"), store.add_blob(b"b\n")
    base = store.write_tree(
        None, [TreeWrite("x/y/a.txt", MODE_FILE, a), TreeWrite("top.txt", MODE_FILE, b)]
    )
    assert sorted(store.files(base)) == ["top.txt", "x/y/a.txt"]
    changed = store.write_tree(
        base, [TreeWrite("x/y/a.txt", MODE_FILE, None), TreeWrite("n/b.txt", MODE_FILE, b)]
    )
    # The emptied directories disappear, like in git.
    assert [i.path for i in store.iter_tree(changed, recursive=True)] == ["n", "n/b.txt", "top.txt"]
    assert store.write_tree(changed, [TreeWrite("missing.txt", MODE_FILE, None)]) == changed


def test_history_merge_base_and_diffs() -> None:
    store = GitStore()
    t1 = store.write_tree(None, [TreeWrite("f.txt", MODE_FILE, store.add_blob(b"1\n2\n3\n"))])
    root = store.add_commit(tree=t1, parents=[], message="root", author=WHO, committer=WHO)
    t2 = store.write_tree(t1, [TreeWrite("f.txt", MODE_FILE, store.add_blob(b"1\ntwo\n3\n"))])
    left = store.add_commit(tree=t2, parents=[root], message="left", author=WHO, committer=WHO)
    t3 = store.write_tree(t1, [TreeWrite("g.txt", MODE_FILE, store.add_blob(b"g\n"))])
    right = store.add_commit(tree=t3, parents=[root], message="right", author=WHO, committer=WHO)
    assert store.merge_base(left, right) == root
    assert store.is_ancestor(root, left)
    assert not store.is_ancestor(left, right)
    assert store.commits_between(right, left) == 1
    diff = unified_diff(store, t1, t2)
    assert "diff --git a/f.txt b/f.txt" in diff
    assert "-2\n+two\n" in diff
    (change,) = file_changes(store, t1, t2)
    assert (change.status, change.additions, change.deletions) == ("modified", 1, 1)
    assert hunk_for_line(change.patch, 2) == "@@ -1,3 +1,3 @@\n 1\n-2\n+two"
    merged = merge_trees(store, t1, t2, t3)
    assert merged is not None
    assert sorted(store.files(merged)) == ["f.txt", "g.txt"]
    t4 = store.write_tree(t1, [TreeWrite("f.txt", MODE_FILE, store.add_blob(b"conflict\n"))])
    assert merge_trees(store, t1, t2, t4) is None


def test_tarball_has_githubs_prefix() -> None:
    store = GitStore()
    tree = store.write_tree(
        None,
        [
            TreeWrite("README.md", MODE_FILE, store.add_blob(b"hi\n")),
            TreeWrite("src/a.py", MODE_FILE, store.add_blob(b"x\n")),
        ],
    )
    sha = store.add_commit(tree=tree, parents=[], message="m", author=WHO, committer=WHO)
    data = tarball(store, sha, f"acme-widgets-{sha[:7]}", 0)
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as tar:
        names = sorted(n for n in tar.getnames() if not n.endswith("/"))
    assert names == [f"acme-widgets-{sha[:7]}/README.md", f"acme-widgets-{sha[:7]}/src/a.py"]


def test_seeding_helpers_and_inspection(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "run.sh").write_text("#!/bin/sh\n")
    (tmp_path / "pkg" / "run.sh").chmod(0o755)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: x\n")
    em = GitHubEmulator()
    em.seed_from_dir(tmp_path, message="from dir")
    assert em.file_at("main", "pkg/run.sh") == b"#!/bin/sh\n"
    assert em.file_at("main", ".git/HEAD") is None
    first = em.seed_files({"a.txt": "a\n"})
    second = em.push("topic", {"a.txt": None, "b.txt": b"b\n"}, author="acme", message="move")
    assert em.ref_sha("heads/topic") == second
    assert em.file_at("topic", "a.txt") is None
    assert em.file_at(second, "b.txt") == b"b\n"
    assert em.file_at("main", "a.txt") == b"a\n"
    assert [c.message for c in em.log("topic")] == ["move", "seed", "from dir"]
    assert em.log("topic")[1].sha == first
