"""A commit's tarball as other GitHub-like servers serve it.

GitHub answers `GET /repos/{o}/{r}/tarball/{ref}` with a redirect to another host
(codeload) and an archive whose files sit under one `<owner>-<repo>-<sha>/` folder.
Another server may answer the archive directly, redirect elsewhere, or pack the files
at the archive's root (`git archive` without `--prefix`) or under `./`. The download
follows whatever comes, and the snapshot built from it (what `eval run` shows the
builder) lists the same files as the sandbox's tree extracted from the same bytes.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from agent_loop_common.github import GitHub, TokenAuth
from agent_loop_common.repo import RepoSnapshot
from agent_loop_common.sandbox import extract_tarball
from agent_loop_testing import GitHubEmulator

FILES = {"pyproject.toml": b"[project]\n", "src/calc.py": b"x = 1\n", "README.md": b"# c\n"}


def _tar(prefix: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, data in FILES.items():
            info = tarfile.TarInfo(prefix + path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize(
    "answer",
    ["codeload-elsewhere", "direct-root", "direct-dot", "direct-folder"],
)
async def test_every_shape_of_answer_gives_the_same_tree(answer: str, tmp_path: Path) -> None:
    emulator = GitHubEmulator("acme", "calc")
    sha = emulator.seed_files({path: data.decode() for path, data in FILES.items()})
    with emulator.serve() as url:
        port = url.rstrip("/").rsplit(":", 1)[1]
        if answer == "codeload-elsewhere":  # another host than the API's
            location = f"http://localhost:{port}/_codeload/acme/calc/legacy.tar.gz/{sha}"
            emulator.inject_fault("GET", "/tarball/", status=302, headers={"Location": location})
        else:
            prefix = {"direct-root": "", "direct-dot": "./", "direct-folder": "calc-main/"}
            body = _tar(prefix[answer])
            emulator.inject_fault("GET", "/tarball/", status=200, body=body)
        async with GitHub("acme/calc", auth=TokenAuth(emulator.bot_token), base_url=url) as gh:
            archive = await gh.download_archive(sha)
    snapshot = RepoSnapshot.from_archive(archive, sha, "main")
    assert await snapshot.paths() == sorted(FILES)
    assert await snapshot.read("pyproject.toml") == b"[project]\n"
    assert await snapshot.text("src/calc.py") == "x = 1\n"
    root = extract_tarball(archive, tmp_path / "tree")
    assert _files(root) == sorted(FILES)
