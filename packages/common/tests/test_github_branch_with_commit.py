"""`GitHub.create_branch_with_commit`: a new branch and its first commit in one request.

One GraphQL document, `createRef` then `createCommitOnBranch`: GitHub runs the two
mutations in order and an error in the first does not stop the second, which is what
each outcome below pins (the emulator serves both as GitHub's schema has them:
`createRef(input: {repositoryId, name: "refs/heads/x", oid})`). The request counter
keys the document `POST /graphql (2 mutations)`: one request, two writes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_loop_common.github import (
    AuthError,
    GitHub,
    GitTree,
    RefExists,
    Unprocessable,
    route_writes,
)
from agent_loop_testing import GitHubEmulator, emulator_client

SEED = {"README.md": "hello\n", "src/app.py": "print('hi')\n"}
MESSAGE = "Apply the fix\n\nAgent-Loop-Run: r1"


@pytest.fixture
def emu() -> GitHubEmulator:
    emulator = GitHubEmulator()
    emulator.seed_files(SEED)
    return emulator


@pytest.fixture
def gh(emu: GitHubEmulator) -> GitHub:
    return emulator_client(emu)


async def test_a_new_branch_and_its_commit_are_one_request_of_two_writes(
    emu: GitHubEmulator, gh: GitHub
) -> None:
    base = await gh.default_branch()
    tree = await gh.read_tree(base.tree_sha)
    before = gh.stats.by_route()

    made = await gh.create_branch_with_commit(
        branch="agent-loop/issue-1-fix",
        base_sha=base.sha,
        repository_id=base.repository_id,
        message=MESSAGE,
        files={"src/app.py": "print('fixed')\n", "README.md": None},
        parent_tree=tree,
    )

    after = gh.stats.by_route()
    sent = {r: after[r] for r in after if after[r] != before.get(r)}
    assert sent == {"POST /graphql (2 mutations)": {200: 1}}
    assert route_writes("POST /graphql (2 mutations)") == 2
    assert made.created
    assert emu.ref_sha("heads/agent-loop/issue-1-fix") == made.sha
    [commit] = emu.log("agent-loop/issue-1-fix")[:1]
    assert commit.parents == (base.sha,)
    assert commit.message == MESSAGE
    assert emu.file_at(made.sha, "src/app.py") == b"print('fixed')\n"
    assert emu.file_at(made.sha, "README.md") is None


async def test_a_branch_standing_at_the_base_takes_the_commit_and_is_not_created(
    emu: GitHubEmulator, gh: GitHub
) -> None:
    base = await gh.default_branch()
    emu.push("leftover", {}, author=emu.bot, message="nothing")  # created from main
    await gh.update_ref("heads/leftover", base.sha, force=True)

    made = await gh.create_branch_with_commit(
        branch="leftover",
        base_sha=base.sha,
        repository_id=base.repository_id,
        message=MESSAGE,
        files={"src/app.py": "print('fixed')\n"},
    )

    assert not made.created
    assert emu.ref_sha("heads/leftover") == made.sha
    assert emu.log("leftover")[0].parents == (base.sha,)


async def test_a_branch_with_other_commits_refuses_both_and_nothing_is_written(
    emu: GitHubEmulator, gh: GitHub
) -> None:
    base = await gh.default_branch()
    theirs = emu.push("taken", {"a.txt": "a\n"}, author=emu.owner, message="theirs")

    with pytest.raises(RefExists, match="already exists"):
        await gh.create_branch_with_commit(
            branch="taken",
            base_sha=base.sha,
            repository_id=base.repository_id,
            message=MESSAGE,
            files={"src/app.py": "print('fixed')\n"},
        )

    assert emu.ref_sha("heads/taken") == theirs


async def test_a_refused_commit_leaves_no_new_branch_behind(
    emu: GitHubEmulator, gh: GitHub
) -> None:
    """The caller's tree said `src` is free, GitHub knows it is a directory: the commit
    is refused after the branch was made, so the branch is deleted again."""
    base = await gh.default_branch()
    stale = GitTree(sha=base.tree_sha, entries=())

    with pytest.raises(Unprocessable, match="directory"):
        await gh.create_branch_with_commit(
            branch="agent-loop/issue-2-x",
            base_sha=base.sha,
            repository_id=base.repository_id,
            message=MESSAGE,
            files={"src": "not a directory\n"},
            parent_tree=stale,
        )

    assert emu.ref_sha("heads/agent-loop/issue-2-x") is None


async def test_createref_checks_the_repository_id_the_name_and_the_permission(
    emu: GitHubEmulator, gh: GitHub
) -> None:
    base = await gh.default_branch()
    assert base.repository_id.startswith("R_")
    query = "mutation($i: CreateRefInput!) { createRef(input: $i) { ref { name target { oid } } } }"
    ok = await gh._graphql(  # pyright: ignore[reportPrivateUsage]
        query, {"i": {"repositoryId": base.repository_id, "name": "refs/heads/x", "oid": base.sha}}
    )
    assert ok["createRef"]["ref"] == {"name": "x", "target": {"oid": base.sha}}
    for bad, error in [
        ({"repositoryId": "R_nope", "name": "refs/heads/y", "oid": base.sha}, "global id"),
        ({"repositoryId": base.repository_id, "name": "heads/y", "oid": base.sha}, "valid ref"),
        ({"repositoryId": base.repository_id, "name": "refs/heads/x", "oid": base.sha}, "exists"),
    ]:
        with pytest.raises(Exception, match=error):
            await gh._graphql(query, {"i": bad})  # pyright: ignore[reportPrivateUsage]
    emu.add_user("reader", permission="read")
    reader = emulator_client(emu, token=emu.token_for("reader"))
    with pytest.raises(AuthError):
        await reader.create_branch_with_commit(
            branch="z",
            base_sha=base.sha,
            repository_id=base.repository_id,
            message=MESSAGE,
            files={"src/app.py": "x\n"},
        )
    assert emu.ref_sha("heads/y") is None
    assert emu.ref_sha("heads/z") is None


async def test_an_executable_or_no_repository_id_takes_the_rest_path(
    emu: GitHubEmulator, tmp_path: Path
) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    emu.seed_from_dir(tmp_path, message="exec", branch="main")
    gh = emulator_client(emu)
    base = await gh.default_branch()

    made = await gh.create_branch_with_commit(
        branch="tools-fix",
        base_sha=base.sha,
        repository_id=base.repository_id,
        message=MESSAGE,
        files={"run.sh": "#!/bin/sh\necho hi\n"},
    )

    assert made.created
    assert {e.path: e.mode for e in await gh.get_tree(made.sha)}["run.sh"] == "100755"
    routes = gh.stats.by_route()
    assert "POST /repos/{owner}/{repo}/git/refs" in routes
    assert not any("mutations" in r for r in routes)
    made = await gh.create_branch_with_commit(
        branch="no-id", base_sha=base.sha, repository_id="", message=MESSAGE, files={"a": "a\n"}
    )
    assert made.created
    assert emu.file_at("no-id", "a") == b"a\n"
