"""A small repository's listing comes from the tarball the run downloads anyway.

The builder reads the default branch with its `diskUsage`; under the tarball budget the
snapshot takes its tree from the archive instead of `GET /git/trees`: the same files,
modes and blob shas as GitHub's tree, the folders above them, one request fewer.
"""

from __future__ import annotations

from pathlib import Path

from agent_loop_common.repo import RepoSnapshot, repo_tools
from agent_loop_testing import GitHubEmulator, emulator_client


async def test_a_small_repository_is_listed_from_its_tarball(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "run.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "core.py").write_text("X = 1\n")
    (tmp_path / "README.md").write_text("# hi\n")
    emu = GitHubEmulator()
    emu.seed_from_dir(tmp_path)
    async with emulator_client(emu) as gh:
        base = await gh.default_branch()
        assert base.disk_usage_kb is not None
        assert base.disk_usage_kb < 1000
        from_api = await gh.read_tree(base.sha)
        before = gh.stats.by_route()
        snapshot = RepoSnapshot(
            gh, base.sha, base.name, tree_sha=base.tree_sha, disk_usage_kb=base.disk_usage_kb
        )
        tree = await snapshot.tree()
        assert await snapshot.text("src/pkg/core.py") == "X = 1\n"
        after = gh.stats.by_route()
    tree_route = "GET /repos/{owner}/{repo}/git/trees/{tree_sha}"
    assert after[tree_route] == before[tree_route]  # no second tree read
    assert after["GET /repos/{owner}/{repo}/tarball/{ref}"] == {302: 1}
    assert tree.sha == from_api.sha
    blobs = {(e.path, e.mode, e.sha, e.size) for e in tree.entries if e.type == "blob"}
    assert blobs == {(e.path, e.mode, e.sha, e.size) for e in from_api.entries if e.type == "blob"}
    assert {e.path for e in tree.entries if e.type == "tree"} == {
        e.path for e in from_api.entries if e.type == "tree"
    }
    assert await snapshot.paths() == ["README.md", "bin/run.sh", "src/pkg/core.py"]


async def test_without_a_size_the_tree_is_read_from_github() -> None:
    emu = GitHubEmulator()
    emu.seed_files({"a.txt": "a\n"})
    async with emulator_client(emu) as gh:
        base = await gh.default_branch()
        snapshot = RepoSnapshot(gh, base.sha, base.name)
        assert await snapshot.paths() == ["a.txt"]
        routes = gh.stats.by_route()
    assert "GET /repos/{owner}/{repo}/git/trees/{tree_sha}" in routes
    assert "GET /repos/{owner}/{repo}/tarball/{ref}" not in routes


async def test_a_snapshot_built_from_a_tarball_never_asks_github(tmp_path: Path) -> None:
    """`from_archive`: the listing, every file (binary and large ones too), the search and
    the sandbox's tarball come from the bytes in hand; the snapshot has no facade to ask."""
    big = "x = 1\n" * 200_000  # above the search index's 512 kB per file
    emu = GitHubEmulator()
    sha = emu.seed_files(
        {
            "src/app.py": "def f():\n    return 'needle'\n",
            "data/logo.bin": b"\x89PNG\x00\xff",
            "big.py": big,
        }
    )
    async with emulator_client(emu) as gh:
        archive = await gh.download_archive(sha)
        tree_from_api = await gh.read_tree(sha)
    emu.clear_requests()

    snapshot = RepoSnapshot.from_archive(archive, sha, sha[:7], label=f"base commit {sha[:7]}")
    assert snapshot.github is None
    assert snapshot.offline
    assert await snapshot.paths() == ["big.py", "data/logo.bin", "src/app.py"]
    assert await snapshot.read("data/logo.bin") == b"\x89PNG\x00\xff"
    assert await snapshot.text("big.py") == big
    assert await snapshot.read("missing.py") is None
    assert not await snapshot.exists("missing.py")
    assert await snapshot.archive() == archive
    blobs = {(e.path, e.sha) for e in (await snapshot.tree()).entries if e.type == "blob"}
    assert blobs == {(e.path, e.sha) for e in tree_from_api.entries if e.type == "blob"}
    tools = {tool.__name__: tool for tool in repo_tools(snapshot)}
    assert "src/app.py" in await tools["search_code"]("needle")
    assert "return 'needle'" in await tools["read_file"]("src/app.py")
    assert "src/app.py" in await tools["list_files"]("")
    assert emu.requests == []
