"""Trees for the sandbox: files, tarballs, private copies, changes that may not escape."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from agent_loop_common.sandbox import TreeError, apply_changes, extract_tarball, write_tree
from agent_loop_common.sandbox._tree import Workspace, safe_relpath


def _tarball(members: dict[str, bytes], *, top: str | None = "octo-hello-abc123") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        if top:
            info = tarfile.TarInfo(top)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        for name, data in members.items():
            info = tarfile.TarInfo(f"{top}/{name}" if top else name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() and not p.is_symlink() else b""
        for p in sorted(root.rglob("*"))
    }


def test_files_become_a_tree(tmp_path: Path) -> None:
    root = write_tree({"a.py": "x = 1\n", "pkg/b.py": b"\x00bin"}, tmp_path / "t")
    assert (root / "a.py").read_text() == "x = 1\n"
    assert (root / "pkg" / "b.py").read_bytes() == b"\x00bin"


@pytest.mark.parametrize("path", ["/etc/passwd", "../x", "a/../../x", ".git/config", "", "a\x00b"])
def test_bad_paths_are_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(TreeError):
        write_tree({path: "x"}, tmp_path / "t")


def test_safe_relpath_normalises() -> None:
    assert safe_relpath("a//b/./c.py") == "a/b/c.py"
    assert safe_relpath("a\\b.py") == "a/b.py"


def test_github_tarball_loses_its_top_folder(tmp_path: Path) -> None:
    archive = _tarball({"README.md": b"hi", "src/app.py": b"print(1)"})
    root = extract_tarball(archive, tmp_path / "repo")
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == [
        "README.md",
        "src",
        "src/app.py",
    ]


def test_a_flat_tarball_is_kept_as_it_is(tmp_path: Path) -> None:
    archive = _tarball({"README.md": b"hi", "src/app.py": b"x"}, top=None)
    root = extract_tarball(archive, tmp_path / "repo")
    assert (root / "README.md").read_bytes() == b"hi"
    assert (root / "src" / "app.py").exists()


def test_tarball_members_leaving_the_tree_are_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("../../escaped")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(TreeError):
        extract_tarball(buffer.getvalue(), tmp_path / "repo")
    assert not (tmp_path / "escaped").exists()
    with pytest.raises(TreeError):
        extract_tarball(b"not a tarball", tmp_path / "other")


def test_changes_write_and_delete(tmp_path: Path) -> None:
    root = write_tree({"a.py": "old", "b.py": "gone"}, tmp_path / "t")
    apply_changes(root, {"a.py": "new", "b.py": None, "c/d.py": "added", "never.py": None})
    assert (root / "a.py").read_text() == "new"
    assert not (root / "b.py").exists()
    assert (root / "c" / "d.py").read_text() == "added"


def test_changes_cannot_write_through_a_symlink_out_of_the_tree(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text("root")
    root = write_tree({"a.py": "x"}, tmp_path / "t")
    (root / "link").symlink_to(outside)
    (root / "file_link").symlink_to(outside / "passwd")
    with pytest.raises(TreeError, match="symbolic link"):
        apply_changes(root, {"link/passwd": "owned"})
    with pytest.raises(TreeError, match="symbolic link"):
        apply_changes(root, {"link/passwd": None})
    apply_changes(root, {"file_link": "replaced"})  # the link is replaced, not followed
    assert (outside / "passwd").read_text() == "root"
    assert (root / "file_link").read_text() == "replaced"
    assert not (root / "file_link").is_symlink()


def test_a_workspace_copies_privately_and_leaves_the_original_alone(tmp_path: Path) -> None:
    tree = write_tree(
        {"a.py": "x", "sub/b.py": "y", "__pycache__/a.pyc": "c", ".agent-loop/state": "s"},
        tmp_path / "tree",
    )
    (tree / "link").symlink_to("/etc/hostname")
    before = _snapshot(tree)
    with Workspace.create(
        tree, changes={"a.py": "changed", "sub/b.py": None}, exclude=[tree / ".agent-loop"]
    ) as workspace:
        assert (workspace.repo / "a.py").read_text() == "changed"
        assert not (workspace.repo / "sub" / "b.py").exists()
        assert not (workspace.repo / "__pycache__").exists()
        assert not (workspace.repo / ".agent-loop").exists()
        assert os.readlink(workspace.repo / "link") == "/etc/hostname"  # copied as a link
        for folder in (workspace.home, workspace.tmp, workspace.out, workspace.etc):
            assert folder.is_dir()
        root = workspace.root
    assert not root.exists()
    assert _snapshot(tree) == before


def test_cleanup_removes_folders_the_command_locked(tmp_path: Path) -> None:
    tree = write_tree({"a.py": "x"}, tmp_path / "tree")
    workspace = Workspace.create(tree, parent=tmp_path)
    locked = workspace.repo / "locked" / "deeper"
    locked.mkdir(parents=True)
    (locked / "f").write_text("x")
    os.chmod(locked, 0o000)
    os.chmod(locked.parent, 0o500)
    workspace.cleanup()
    assert not workspace.root.exists()


def test_a_workspace_needs_a_folder(tmp_path: Path) -> None:
    with pytest.raises(TreeError, match="not a folder"):
        Workspace.create(tmp_path / "missing")
    before = set(os.listdir(tmp_path))
    with pytest.raises(TreeError):
        Workspace.create(
            write_tree({"a": "x"}, tmp_path / "t"), changes={"../x": "y"}, parent=tmp_path
        )
    assert set(os.listdir(tmp_path)) == before | {"t"}  # the half-made workspace is gone
