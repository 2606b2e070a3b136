"""`change_diff`: a staged change as a patch `git apply` takes exactly (the benchmark's
`model_patch`), new, changed, deleted and newline-less files included."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agent_loop_common.staging import change_diff

BASE = {
    "src/a.py": b"one\ntwo\nthree\n",
    "src/tail.py": b"no newline",
    "bin/run.sh": b"#!/bin/sh\necho hi\n",
    "keep.txt": b"same\n",
}


def _git(cwd: Path, *argv: str) -> None:
    subprocess.run(["git", *argv], cwd=cwd, check=True, capture_output=True)


def test_the_diff_applies_with_git_and_gives_the_staged_files(tmp_path: Path) -> None:
    for path, data in BASE.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(data)
    (tmp_path / "bin/run.sh").chmod(0o755)
    _git(tmp_path, "init", "-q")
    files = {
        "src/a.py": "one\n2\nthree\nfour",
        "src/tail.py": "no newline\nnow one\n",
        "bin/run.sh": None,
        "new/b.py": "print('b')\n",
        "keep.txt": "same\n",
    }
    diff = change_diff({p: BASE.get(p) for p in files}, files, modes={"bin/run.sh": "100755"})
    assert "keep.txt" not in diff
    assert "deleted file mode 100755" in diff
    assert "new file mode 100644\n--- /dev/null\n+++ b/new/b.py" in diff
    (tmp_path / "change.diff").write_text(diff)
    _git(tmp_path, "apply", "--check", "change.diff")
    _git(tmp_path, "apply", "change.diff")
    for path, text in files.items():
        if text is None:
            assert not (tmp_path / path).exists()
        else:
            assert (tmp_path / path).read_text() == text


def test_no_change_is_an_empty_diff() -> None:
    assert change_diff({"a": b"x\n"}, {"a": "x\n"}) == ""
    assert change_diff({"gone": None}, {"gone": None}) == ""
