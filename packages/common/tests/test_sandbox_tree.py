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


def test_safe_relpath_normalizes() -> None:
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


def _with_links(links: dict[str, str], files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"top/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in links.items():
            info = tarfile.TarInfo(f"top/{name}")
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return buffer.getvalue()


def test_a_bad_link_skips_that_entry_not_the_repository(tmp_path: Path) -> None:
    """Issue 22: one absolute symlink used to make a whole repository untestable."""
    archive = _with_links(
        {"docs/abs": "/etc/passwd", "up": "../../../outside", "ok": "src/app.py"},
        {"src/app.py": b"print(1)", "README.md": b"hi"},
    )
    skipped: list[str] = []
    root = extract_tarball(archive, tmp_path / "repo", skipped=skipped)
    assert (root / "src" / "app.py").read_bytes() == b"print(1)"
    assert (root / "ok").is_symlink()
    assert not os.path.lexists(root / "docs" / "abs")
    assert not os.path.lexists(root / "up")
    assert len(skipped) == 2
    assert any(note.startswith("docs/abs -> /etc/passwd was not extracted") for note in skipped)


def test_git_is_never_copied_and_workspaces_are_private(tmp_path: Path) -> None:
    tree = write_tree({"a.py": "x", "sub/.git": "gitdir: x"}, tmp_path / "t")
    (tree / ".git").mkdir()
    (tree / ".git" / "config").write_text("token")
    with Workspace.create(tree, parent=tmp_path) as workspace:
        assert (workspace.repo / "a.py").exists()
        assert not (workspace.repo / ".git").exists()
        assert not (workspace.repo / "sub" / ".git").exists()
        assert os.stat(workspace.root).st_mode & 0o777 == 0o700
        assert workspace.root.name.startswith(f"agent-loop-sandbox-{os.getpid()}-")


def test_workspaces_of_a_dead_process_are_swept(tmp_path: Path) -> None:
    import subprocess
    import time

    from agent_loop_common.sandbox._tree import sweep_stale_workspaces

    gone = subprocess.Popen(["true"])
    gone.wait()
    old = time.time() - 3600
    stale = tmp_path / f"agent-loop-sandbox-{gone.pid}-abc"
    (stale / "repo" / "locked").mkdir(parents=True)
    (stale / "repo" / "locked").chmod(0o500)  # a command took the write bit off
    os.utime(stale, (old, old))
    fresh = tmp_path / f"agent-loop-sandbox-{gone.pid}-new"  # maybe another PID namespace
    fresh.mkdir()
    mine = tmp_path / f"agent-loop-sandbox-{os.getpid()}-xyz"
    mine.mkdir()
    os.utime(mine, (old, old))
    other = tmp_path / "agent-loop-sandbox-nopid"
    other.mkdir()
    os.utime(other, (old, old))
    assert sweep_stale_workspaces(tmp_path) == 1
    assert not stale.exists()
    assert fresh.exists()
    assert mine.exists()
    assert other.exists()
