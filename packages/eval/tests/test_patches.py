"""Diffs of file maps and applying patches, held to git's own `git diff` and `git apply`."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from agent_loop_eval import (
    BinaryChange,
    PatchError,
    apply_patch,
    diff_files,
    parse_patch,
    patch_paths,
    patched_files,
    split_test_paths,
)

BEFORE = {
    "calc/core.py": "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
    "README.md": "# calc\n",
    "old.txt": "gone soon\n",
    "tail.txt": "no newline at the end",
    "crlf.txt": "one\r\ntwo\r\n",
    "empty.txt": "",
}
AFTER = {
    "calc/core.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    "README.md": "# calc\n",
    "new dir/new file.py": "print('hi')\n",
    "café.py": "x = 1\n",
    "tail.txt": "no newline at the end, still",
    "crlf.txt": "one\r\n2\r\n",
    "tests/test_core.py": "from calc.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "made-empty.txt": "",
}


def _git(repo: Path, *args: str, stdin: str | None = None) -> str:
    # Bytes, not text mode: text mode would turn the patches' `\r\n` into `\n`.
    proc = subprocess.run(
        ["git", "-c", "core.quotePath=true", *args],
        cwd=repo,
        input=None if stdin is None else stdin.encode("utf-8"),
        capture_output=True,
        check=True,
    )
    return proc.stdout.decode("utf-8")


def _write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))


def _read(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes().decode("utf-8")
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@example.com")
    _git(root, "config", "user.name", "t")
    _git(root, "config", "core.autocrlf", "false")
    _write(root, BEFORE)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "before")
    return root


def test_our_diff_applies_with_git_apply(repo: Path) -> None:
    patch = diff_files(BEFORE, AFTER)
    _git(repo, "apply", "--whitespace=nowarn", "-", stdin=patch)
    assert _read(repo) == AFTER


def test_gits_diff_applies_here(repo: Path) -> None:
    for path in BEFORE:
        (repo / path).unlink()
    _write(repo, AFTER)
    _git(repo, "add", "-A")
    patch = _git(repo, "diff", "--cached", "--no-renames")
    assert patched_files(BEFORE, patch) == AFTER


def test_a_rename_and_a_copy_from_git_apply_here(repo: Path) -> None:
    (repo / "calc" / "core.py").rename(repo / "calc" / "ops.py")
    (repo / "README.md").write_text("# calc\nmore\n")
    _git(repo, "add", "-A")
    patch = _git(repo, "diff", "--cached", "-M", "--find-copies-harder", "-C")
    assert "rename from calc/core.py" in patch
    result = patched_files(BEFORE, patch)
    assert "calc/core.py" not in result
    assert result["calc/ops.py"] == BEFORE["calc/core.py"]
    assert result["README.md"] == "# calc\nmore\n"


def test_the_change_is_what_the_sandbox_takes() -> None:
    changes = apply_patch(BEFORE, diff_files(BEFORE, AFTER))
    assert changes["old.txt"] is None
    assert changes["empty.txt"] is None
    assert changes["made-empty.txt"] == ""
    assert changes["calc/core.py"] == AFTER["calc/core.py"]
    assert "README.md" not in changes


def test_a_hunk_applies_at_an_offset_but_never_with_changed_context() -> None:
    before = {"m.py": "".join(f"line {i}\n" for i in range(30))}
    after = {"m.py": before["m.py"].replace("line 20\n", "line twenty\n")}
    patch = diff_files(before, after)
    shifted = {"m.py": "header\nheader\n" + before["m.py"]}
    assert patched_files(shifted, patch)["m.py"] == "header\nheader\n" + after["m.py"]
    changed = {"m.py": before["m.py"].replace("line 19\n", "line nineteen\n")}
    with pytest.raises(PatchError, match=r"m\.py: hunk 1 \(line 18\) does not apply"):
        apply_patch(changed, patch)


def test_only_the_named_paths_are_compared_and_split_by_the_test_rule() -> None:
    code, tests = split_test_paths([*AFTER, "calc/core.py"])
    assert tests == ["tests/test_core.py"]
    assert "calc/core.py" in code
    patch = diff_files(BEFORE, AFTER, tests)
    assert patch_paths(patch) == ["tests/test_core.py"]
    assert diff_files(BEFORE, AFTER, ["README.md", "nowhere.py"]) == ""


def test_a_patch_that_does_not_fit_the_tree_is_refused() -> None:
    patch = diff_files(BEFORE, AFTER)
    with pytest.raises(PatchError, match="already exists"):
        apply_patch(AFTER, diff_files({}, {"README.md": "x\n"}))
    with pytest.raises(PatchError, match="does not exist"):
        apply_patch({}, patch)
    binary = (
        "diff --git a/logo.png b/logo.png\nindex 1..2 100644\nGIT binary patch\nliteral 3\nabc\n"
    )
    with pytest.raises(PatchError, match="binary"):
        apply_patch({"logo.png": "x"}, binary)
    with pytest.raises(BinaryChange, match=r"logo\.png"):
        diff_files({"logo.png": b"\x89PNG\xff"}, {"logo.png": b"\x89PNG\xfe"})


def test_a_plain_unified_diff_and_a_mail_header_read_too() -> None:
    patch = (
        "From 123 Mon Sep 17 00:00:00 2001\nSubject: fix\n\n---\n core.py | 2 +-\n\n"
        "--- a/core.py\t2024-01-01 00:00:00\n+++ b/core.py\t2024-01-01 00:00:00\n"
        "@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    )
    (section,) = parse_patch(patch)
    assert section.old_path == section.new_path == "core.py"
    assert patched_files({"core.py": "x = 1\n"}, patch) == {"core.py": "x = 2\n"}


def test_random_edits_round_trip_through_git(repo: Path) -> None:
    rng = random.Random(7)
    words = ["a\n", "b\n", "c\n", "\n", "x = 1\n", "  y\n", "z"]
    before = {f"f{i}.py": "".join(rng.choice(words[:-1]) for _ in range(40)) for i in range(6)}
    after: dict[str, str] = {}
    for path, text in before.items():
        lines = text.splitlines(keepends=True)
        for _ in range(rng.randint(0, 6)):
            at = rng.randrange(len(lines) + 1)
            lines[at:at] = [rng.choice(words[:-1])]
            if lines and rng.random() < 0.5:
                del lines[rng.randrange(len(lines))]
        if rng.random() < 0.3:
            lines.append(words[-1])
        after[path] = "".join(lines)
    assert patched_files(before, diff_files(before, after)) == after
    _write(repo, before)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "random")
    _git(repo, "apply", "--whitespace=nowarn", "-", stdin=diff_files(before, after))
    assert {p: t for p, t in _read(repo).items() if p in after} == after
