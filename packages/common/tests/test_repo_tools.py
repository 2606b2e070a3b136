"""The read-only repository tools at a pinned commit: bounded outputs, staged views, one
tarball per search."""

from __future__ import annotations

from agent_loop_common.repo import RepoSnapshot, ToolLimits, repo_tools
from agent_loop_common.staging import ChangeStage
from agent_loop_testing import GitHubEmulator, emulator_client


async def test_read_tools_are_bounded_and_see_the_stage() -> None:
    emulator = GitHubEmulator()
    files: dict[str, str | bytes] = {f"pkg/m{i:03}.py": f"VALUE_{i} = {i}\n" for i in range(320)}
    files["big.txt"] = "".join(f"line {n}\n" for n in range(1, 1001))
    files["logo.png"] = b"\x89PNG\x00\x01"
    sha = emulator.seed_files(files)
    github = emulator_client(emulator)
    stage = ChangeStage({"pkg/m001.py": "VALUE_1 = 'staged'\n", "pkg/m002.py": None})
    list_files, read_file, search_code = repo_tools(
        RepoSnapshot(github, sha, "main", label="base branch main"), stage=stage
    )

    listing = await list_files()
    assert listing.startswith("322 file(s) under '/' at main:")
    assert f"... {322 - ToolLimits.list_entries} more" in listing
    assert listing.endswith("Staged by you: pkg/m001.py, pkg/m002.py")
    assert (await list_files("pkg/")).startswith("320 file(s) under 'pkg/'")

    page = await read_file("big.txt", start_line=990, max_lines=5)
    assert page.startswith(
        "big.txt (base branch main), lines 990-994 of 1000; read on with start_line=995"
    )
    assert "line 994\n" in page
    assert "line 995" not in page
    assert "lines 1-600 of 1000" in await read_file("./big.txt", max_lines=5000)
    assert "your staged version" in await read_file("pkg/m001.py")
    assert "staged for deletion" in await read_file("pkg/m002.py")
    assert "binary file" in await read_file("logo.png")
    assert "No file missing.py" in await read_file("missing.py")
    assert "Cannot read" in await read_file("../etc/passwd")

    before = len(emulator.requests)
    hits = await search_code("value_1")
    assert hits.startswith("111 match(es) for 'value_1':")
    assert hits.count("\n") == ToolLimits.search_hits + 1
    assert "pkg/m010.py:1: VALUE_10 = 10" in hits
    assert "narrow the text or the folder" in hits
    assert "No line under 'docs/'" in await search_code("value_3", "docs")
    tarball_requests = len(emulator.requests) - before
    assert tarball_requests <= 2  # the archive, and GitHub's redirect to it
    await search_code("VALUE_4")
    assert len(emulator.requests) - before == tarball_requests


async def test_a_small_commit_is_read_from_one_tarball_a_large_one_per_file() -> None:
    """Reading several files of a small commit costs the tree and one tarball (no
    contents request); a commit whose files add up to more than a megabyte is read one
    contents request per file instead of downloading all of it."""
    emu = GitHubEmulator()
    emu.seed_files({f"src/m{i}.py": f"X = {i}\n" for i in range(5)} | {"logo.bin": b"\x00\xff"})
    sha = emu.ref_sha("heads/main")
    assert sha is not None
    async with emulator_client(emu) as gh:
        small = RepoSnapshot(gh, sha, "main")
        assert [await small.text(f"src/m{i}.py") for i in range(3)] == [
            "X = 0\n",
            "X = 1\n",
            "X = 2\n",
        ]
        assert await small.read("logo.bin") == b"\x00\xff"  # binary: not in the tarball's text
        routes = gh.stats.by_route()
        assert routes["GET /repos/{owner}/{repo}/tarball/{ref}"] == {302: 1}
        assert routes["GET /repos/{owner}/{repo}/contents/{path}"] == {200: 1}

    emu.push("main", {"big.txt": "x" * 1_100_000}, author=emu.owner, message="big")
    sha = emu.ref_sha("heads/main")
    assert sha is not None
    async with emulator_client(emu) as gh:
        large = RepoSnapshot(gh, sha, "main")
        assert await large.text("src/m0.py") == "X = 0\n"
        assert await large.text("src/m1.py") == "X = 1\n"
        routes = gh.stats.by_route()
        assert "GET /repos/{owner}/{repo}/tarball/{ref}" not in routes
        assert routes["GET /repos/{owner}/{repo}/contents/{path}"] == {200: 2}
