"""`GitHub.commit_on_branch`: one compare-and-swap write through GraphQL's
`createCommitOnBranch`, and the git data API where that mutation would drop an exec bit.

The emulator serves the mutation as GitHub's schema has it (`input {branch
{repositoryNameWithOwner, branchName}, expectedHeadOid, message {headline, body},
fileChanges {additions [{path, contents}], deletions [{path}]}}` -> `commit {oid}`), so
these tests also pin its answers: a stale head is a `STALE_DATA` error and writes
nothing, a missing branch is not created, every added file is a regular file.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_loop_common.github import GitHub, NotFastForward, NotFound
from agent_loop_testing import GitHubEmulator, emulator_client

SEED = {"README.md": "hello\n", "src/app.py": "print('hi')\n", "docs/guide.md": "# Guide\n"}


@pytest.fixture
def emu() -> GitHubEmulator:
    emulator = GitHubEmulator()
    emulator.seed_files(SEED)
    return emulator


@pytest.fixture
def gh(emu: GitHubEmulator) -> GitHub:
    return emulator_client(emu)


async def test_a_commit_on_a_branch_is_one_mutation(emu: GitHubEmulator, gh: GitHub) -> None:
    base = emu.push("feature", {"src/app.py": "print('hi')\n"}, author=emu.owner, message="b")
    tree = await gh.read_tree(base)
    before = gh.stats.total

    sha = await gh.commit_on_branch(
        branch="feature",
        expected_head=base,
        message="Apply the fix\n\nWhy it matters.\n\nAgent-Loop-Run: r1",
        files={
            "src/app.py": "print('fixed')\n",
            "assets/logo.bin": bytes(range(256)),
            "docs/guide.md": None,
            "already/absent.txt": None,
        },
        parent_tree=tree,
    )

    assert gh.stats.total - before == 1
    assert gh.stats.by_route()["POST /graphql (mutation)"] == {200: 1}
    assert emu.ref_sha("heads/feature") == sha
    [commit, parent] = emu.log("feature")[:2]
    assert (commit.parents, parent.sha) == ((base,), base)
    assert commit.message == "Apply the fix\n\nWhy it matters.\n\nAgent-Loop-Run: r1"
    assert emu.file_at(sha, "src/app.py") == b"print('fixed')\n"
    assert emu.file_at(sha, "assets/logo.bin") == bytes(range(256))
    assert emu.file_at(sha, "docs/guide.md") is None
    assert emu.file_at(sha, "README.md") == b"hello\n"
    assert {e.path: e.mode for e in await gh.get_tree(sha)}["assets/logo.bin"] == "100644"


async def test_a_moved_branch_refuses_the_commit_and_nothing_is_written(
    emu: GitHubEmulator, gh: GitHub
) -> None:
    base = emu.push("feature", {"a.txt": "a\n"}, author=emu.owner, message="a")
    human = emu.push("feature", {"b.txt": "b\n"}, author=emu.owner, message="b")
    with pytest.raises(NotFastForward, match="Expected branch to point to"):
        await gh.commit_on_branch(
            branch="feature", expected_head=base, message="m", files={"a.txt": "mine\n"}
        )
    assert emu.ref_sha("heads/feature") == human
    with pytest.raises(NotFound):
        await gh.commit_on_branch(
            branch="nowhere", expected_head=base, message="m", files={"a.txt": "x\n"}
        )
    assert emu.ref_sha("heads/nowhere") is None
    with pytest.raises(ValueError, match="directory"):
        await gh.commit_on_branch(
            branch="feature", expected_head=human, message="m", files={"docs": "x"}
        )


async def test_a_change_to_an_executable_keeps_its_mode_through_the_git_data_api(
    emu: GitHubEmulator, gh: GitHub, tmp_path: Path
) -> None:
    """`createCommitOnBranch` writes regular files only: an executable of the parent is
    committed with a tree, a commit and a non-forced update instead, checked first."""
    script = tmp_path / "bin" / "run.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    emu.seed_from_dir(tmp_path, message="exec", branch="tools")
    head = emu.ref_sha("heads/tools")
    assert head is not None

    sha = await gh.commit_on_branch(
        branch="tools", expected_head=head, message="m", files={"bin/run.sh": "#!/bin/sh\necho\n"}
    )

    assert emu.ref_sha("heads/tools") == sha
    assert {e.path: e.mode for e in await gh.get_tree(sha)}["bin/run.sh"] == "100755"
    assert "POST /graphql (mutation)" not in gh.stats.by_route()

    # The branch moves between the check and the update: the non-forced update refuses.
    original = gh.commit_files

    async def commit_then_push(**kwargs: Any) -> str:
        made = await original(**kwargs)
        emu.push("tools", {"NOTES.md": "again\n"}, author=emu.owner, message="more")
        return made

    gh.commit_files = commit_then_push  # type: ignore[method-assign]
    with pytest.raises(NotFastForward):
        await gh.commit_on_branch(
            branch="tools", expected_head=sha, message="m", files={"bin/run.sh": "#!/bin/sh\n"}
        )
    assert emu.log("tools")[0].message.startswith("more")


async def test_a_commit_whose_answer_was_lost_is_found_not_repeated(
    emu: GitHubEmulator,
) -> None:
    """A mutation is never retried blindly (a repeat would find the head moved by the
    first): after a 502 that GitHub applied anyway, the branch is read back."""
    base = emu.push("feature", {"a.txt": "a\n"}, author=emu.owner, message="a")
    inner = emu.transport()

    class LoseTheAnswer(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response = await inner.handle_async_request(request)
            if request.url.path.endswith("/graphql"):
                return httpx.Response(502, json={"message": "Server Error"})
            return response

    async with emulator_client(emu, transport=LoseTheAnswer()) as gh:
        sha = await gh.commit_on_branch(
            branch="feature", expected_head=base, message="fix it", files={"a.txt": "b\n"}
        )
        routes = gh.stats.by_route()
    assert emu.ref_sha("heads/feature") == sha
    assert emu.log("feature")[0].parents == (base,)
    assert routes["POST /graphql (mutation)"] == {502: 1}


async def test_the_emulator_answers_the_mutation_as_github_does(emu: GitHubEmulator) -> None:
    """Field errors in GitHub's shape; a deletion of a path the head lacks is refused."""
    base = emu.ref_sha("heads/main")
    mutation = (
        "mutation($input: CreateCommitOnBranchInput!) {"
        " createCommitOnBranch(input: $input) { commit { oid } ref { name } } }"
    )

    def variables(**changes: Any) -> dict[str, Any]:
        return {
            "input": {
                "branch": {"repositoryNameWithOwner": emu.full_name, "branchName": "main"},
                "expectedHeadOid": base,
                "message": {"headline": "h"},
                "fileChanges": changes,
            }
        }

    async with httpx.AsyncClient(
        transport=emu.transport(),
        base_url="https://api.github.com",
        headers={"Authorization": f"token {emu.bot_token}"},
    ) as client:
        gone = (
            await client.post(
                "/graphql",
                json={"query": mutation, "variables": variables(deletions=[{"path": "nope"}])},
            )
        ).json()
        made = (
            await client.post(
                "/graphql",
                json={
                    "query": mutation,
                    "variables": variables(
                        additions=[{"path": "x.txt", "contents": base64.b64encode(b"x").decode()}]
                    ),
                },
            )
        ).json()
        stale = (
            await client.post("/graphql", json={"query": mutation, "variables": variables()})
        ).json()
    assert gone["data"] == {"createCommitOnBranch": None}
    assert gone["errors"][0]["type"] == "UNPROCESSABLE"
    assert gone["errors"][0]["path"] == ["createCommitOnBranch"]
    assert made["data"]["createCommitOnBranch"]["ref"] == {"name": "main"}
    assert made["data"]["createCommitOnBranch"]["commit"]["oid"] == emu.ref_sha("heads/main")
    assert stale["errors"][0]["type"] == "STALE_DATA"
    assert stale["errors"][0]["message"] == (
        f'Expected branch to point to "{base}" but it did not.  Pull and try again.'
    )


async def test_the_default_branch_and_its_head_are_one_query() -> None:
    """What a builder run starts from: REST needs `GET /repos/{o}/{r}` and the ref."""
    emu = GitHubEmulator()
    main = emu.seed_files(SEED)
    async with emulator_client(emu) as client:
        head = await client.default_branch()
        routes = client.stats.by_route()
    assert (head.name, head.sha, head.private) == ("main", main, False)
    assert routes == {"POST /graphql": {200: 1}}
    emu.private = True  # the visibility lessons are scoped by comes with the same query
    async with emulator_client(emu) as client:
        assert (await client.default_branch()).private is True
    empty = GitHubEmulator()
    async with emulator_client(empty) as client:
        with pytest.raises(NotFound, match="no default branch"):
            await client.default_branch()
