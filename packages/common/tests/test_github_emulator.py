"""Every facade operation, end to end against the in-process GitHub emulator."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from agent_loop_common.github import (
    GitHub,
    NotFastForward,
    NotFound,
    RefExists,
)
from agent_loop_testing import GitHubEmulator, emulator_client

SEED = {
    "README.md": "hello\n",
    "src/app.py": "print('hi')\n",
    "docs/guide.md": "# Guide\n",
}


@pytest.fixture
def emu() -> GitHubEmulator:
    emulator = GitHubEmulator()
    emulator.seed_files(SEED)
    return emulator


@pytest.fixture
def gh(emu: GitHubEmulator) -> GitHub:
    return emulator_client(emu, per_page=30)


async def test_identity_and_repository(emu: GitHubEmulator, gh: GitHub) -> None:
    me = await gh.viewer()
    assert (me.login, me.type) == ("agent-loop[bot]", "Bot")
    owner = await emulator_client(emu, token=emu.owner_token).viewer()
    assert (owner.login, owner.type) == ("acme", "User")
    repo = await gh.repository()
    assert (repo.full_name, repo.default_branch, repo.private) == ("acme/widgets", "main", False)
    assert repo.html_url.endswith("/acme/widgets")


async def test_issue_lifecycle(emu: GitHubEmulator, gh: GitHub) -> None:
    created = await gh.create_issue("Fix the widget", "It wobbles.", labels=["agent", "bug"])
    assert created.user.login == "agent-loop[bot]"
    assert set(created.labels) == {"agent", "bug"}
    other = emu.add_issue("Unrelated", author="acme")

    fetched = await gh.get_issue(created.number)
    assert fetched == created
    assert [i.number for i in await gh.list_issues(labels=["agent"])] == [created.number]
    assert {i.number for i in await gh.list_issues()} == {created.number, other}

    updated = await gh.update_issue(created.number, title="Fix it", body="", labels=["agent"])
    assert (updated.title, updated.body, updated.labels) == ("Fix it", "", ("agent",))
    assert emu.issue(created.number).title == "Fix it"

    closed = await gh.close_issue(created.number, comment="Done in #2.")
    assert closed.state == "closed"
    assert closed.closed_at is not None
    assert [c.body for c in emu.comments(created.number)] == ["Done in #2."]
    assert [i.number for i in await gh.list_issues(state="closed")] == [created.number]
    with pytest.raises(NotFound):
        await gh.get_issue(999)


async def test_comments_all_pages_create_and_update(emu: GitHubEmulator, gh: GitHub) -> None:
    number = emu.add_issue("Chatty", author="acme")
    for i in range(75):
        emu.add_comment(number, f"comment {i}", author="acme")

    comments = await gh.list_issue_comments(number)
    assert [c.body for c in comments] == [f"comment {i}" for i in range(75)]
    route = "GET /repos/{owner}/{repo}/issues/{issue_number}/comments"
    assert gh.stats.by_route()[route] == {200: 3}  # 30 + 30 + 15

    mine = await gh.create_issue_comment(number, "claim marker")
    assert mine.user.login == "agent-loop[bot]"
    edited = await gh.update_issue_comment(mine.id, "released")
    assert (edited.id, edited.body) == (mine.id, "released")
    assert emu.comments(number)[-1].body == "released"
    latest = await gh.list_issue_comments(number, since=mine.created_at)
    assert [c.id for c in latest] == [mine.id]


async def test_labels_events_and_permissions(emu: GitHubEmulator, gh: GitHub) -> None:
    emu.add_user("alice", permission="maintain")
    emu.add_user("bob", permission="read")
    number = emu.add_issue("Please build", author="bob")
    emu.label_issue(number, "agent", actor="alice")

    assert set(await gh.add_labels(number, ["bug", "p1"])) == {"agent", "bug", "p1"}
    await gh.remove_label(number, "p1")
    await gh.remove_label(number, "never-there")  # a no-op, not an error
    assert set((await gh.get_issue(number)).labels) == {"agent", "bug"}
    with pytest.raises(NotFound):
        await gh.remove_label(999, "bug")

    events = await gh.list_issue_events(number)
    labeled = [(e.event, e.label, e.actor.login if e.actor else None) for e in events]
    assert labeled[0] == ("labeled", "agent", "alice")
    assert ("unlabeled", "p1", "agent-loop[bot]") in labeled

    assert await gh.permission("acme") == "admin"
    assert await gh.permission("alice") == "maintain"
    assert await gh.permission("bob") == "read"
    assert await gh.permission("agent-loop[bot]") == "write"
    assert await gh.permission("nobody-here") == "none"


async def test_pull_request_flow(emu: GitHubEmulator, gh: GitHub) -> None:
    emu.add_user("rita", permission="write")
    head_sha = emu.push(
        "agent/issue-1", {"src/app.py": "print('fixed')\n"}, author="acme", message="fix"
    )
    pr = await gh.create_pull(
        title="Fix app", body="Closes #1", head="agent/issue-1", base="main", draft=True
    )
    assert (pr.head_ref, pr.head_sha, pr.base_ref, pr.draft) == (
        "agent/issue-1",
        head_sha,
        "main",
        True,
    )
    assert pr.base_sha == emu.ref_sha("heads/main")
    assert [p.number for p in await gh.list_pulls(head="agent/issue-1")] == [pr.number]
    assert await gh.list_pulls(head="agent/other") == []
    assert [p.number for p in await gh.list_pulls(base="main")] == [pr.number]
    as_issue = [i for i in await gh.list_issues() if i.number == pr.number]
    assert as_issue[0].is_pull_request

    updated = await gh.update_pull(pr.number, title="Fix the app")
    assert updated.title == "Fix the app"
    assert (await gh.get_pull(pr.number)).merged is False

    files = await gh.list_pull_files(pr.number)
    assert [(f.filename, f.status, f.additions, f.deletions) for f in files] == [
        ("src/app.py", "modified", 1, 1)
    ]
    assert files[0].patch is not None
    assert "+print('fixed')" in files[0].patch
    diff = await gh.get_pull_diff(pr.number)
    assert "diff --git a/src/app.py b/src/app.py" in diff
    assert "-print('hi')" in diff

    review_id = emu.add_review(
        pr.number,
        author="rita",
        state="CHANGES_REQUESTED",
        body="Almost",
        comments=[("src/app.py", 1, "Use logging")],
    )
    reviews = await gh.list_reviews(pr.number)
    assert [(r.id, r.user.login, r.state, r.body, r.commit_id) for r in reviews] == [
        (review_id, "rita", "CHANGES_REQUESTED", "Almost", head_sha)
    ]
    (thread,) = await gh.list_review_comments(pr.number)
    assert (thread.path, thread.line, thread.body, thread.in_reply_to_id) == (
        "src/app.py",
        1,
        "Use logging",
        None,
    )
    reply = await gh.reply_to_review_comment(pr.number, thread.id, "Switched to logging.")
    assert reply.in_reply_to_id == thread.id
    assert [c.body for c in await gh.list_review_comments(pr.number)] == [
        "Use logging",
        "Switched to logging.",
    ]

    closed = await gh.update_pull(pr.number, state="closed")
    assert closed.state == "closed"
    assert await gh.list_pulls() == []
    emu.merge_pull(
        (
            await gh.create_pull(
                title="again", body="", head="agent/issue-1", base="main", draft=False
            )
        ).number
    )
    merged = await gh.list_pulls(state="closed")
    assert sorted(p.merged for p in merged) == [False, True]


async def test_checks_and_statuses(emu: GitHubEmulator, gh: GitHub) -> None:
    sha = emu.ref_sha("heads/main")
    assert sha is not None
    emu.set_check_run(sha, "tests", conclusion="failure", title="2 failed", text="assert 1 == 2")
    emu.set_check_run(sha, "lint", conclusion="success", summary="clean")
    emu.set_status(sha, "ci/build", "pending", "building")
    emu.set_status(sha, "ci/build", "failure", "broken")
    emu.set_status(sha, "ci/docs", "success")

    runs = {r.name: r for r in await gh.list_check_runs(sha)}
    assert set(runs) == {"tests", "lint"}
    tests = runs["tests"]
    assert (tests.head_sha, tests.status, tests.conclusion) == (sha, "completed", "failure")
    assert (tests.output_title, tests.output_text) == ("2 failed", "assert 1 == 2")
    assert runs["lint"].output_summary == "clean"
    assert [r.name for r in await gh.list_check_runs("main")] != []

    statuses = {s.context: s for s in await gh.list_statuses(sha)}
    assert {c: (s.state, s.description) for c, s in statuses.items()} == {
        "ci/build": ("failure", "broken"),
        "ci/docs": ("success", ""),
    }


async def test_refs_are_atomic_compare_and_swap(emu: GitHubEmulator, gh: GitHub) -> None:
    main = await gh.get_ref("heads/main")
    assert main == emu.ref_sha("heads/main")
    assert await gh.get_ref("heads/missing") is None

    await gh.create_ref("refs/heads/claim/issue-1", main or "")
    assert emu.ref_sha("heads/claim/issue-1") == main
    with pytest.raises(RefExists):
        await gh.create_ref("refs/heads/claim/issue-1", main or "")

    ahead = emu.push("side", {"x.txt": "x"}, author="acme", message="side work")
    await gh.update_ref("heads/claim/issue-1", ahead)  # a fast-forward
    assert emu.ref_sha("heads/claim/issue-1") == ahead
    with pytest.raises(NotFastForward):
        await gh.update_ref("heads/claim/issue-1", main or "")
    await gh.update_ref("refs/heads/claim/issue-1", main or "", force=True)
    assert emu.ref_sha("heads/claim/issue-1") == main

    await gh.delete_ref("heads/claim/issue-1")
    assert emu.ref_sha("heads/claim/issue-1") is None
    with pytest.raises(NotFound):
        await gh.delete_ref("heads/claim/issue-1")
    with pytest.raises(NotFound):
        await gh.update_ref("heads/claim/issue-1", main or "")


async def test_a_watched_branch_and_file_history_cost_nothing_while_unmoved(
    emu: GitHubEmulator,
) -> None:
    from agent_loop_common.github import ETagCache

    gh = emulator_client(emu, etags=ETagCache())
    assert await gh.branch_head("lessons") is None  # no branch yet: [] (not a 404)
    assert await gh.branch_head("lessons") is None  # a free 304
    emu.push("lessons-old", {"x.txt": "x"}, author="acme", message="a prefix, not the branch")
    history = await gh.path_commits("README.md", None)
    assert await gh.branch_head("lessons") is None
    emu.clear_requests()
    assert await gh.branch_head("lessons") is None
    assert await gh.path_commits("README.md", None) == history
    assert [r.status for r in emu.requests] == [304, 304]

    head = emu.push("lessons", {"x.txt": "y"}, author="acme", message="lessons")
    assert await gh.branch_head("lessons") == head
    assert await gh.branch_head("refs-are-not-branches") is None
    edit = emu.push("main", {"README.md": "changed\n"}, author="acme", message="edit")
    newest, *_ = await gh.path_commits("README.md", None)
    assert newest.sha == edit
    assert gh.stats.not_modified == 3


async def test_commits_trees_files_and_archive(emu: GitHubEmulator, gh: GitHub) -> None:
    main = emu.ref_sha("heads/main")
    assert main is not None
    commit = await gh.get_commit(main)
    assert (commit.sha, commit.message, commit.parents) == (main, "seed", ())

    tree = await gh.get_tree(commit.tree_sha)
    blobs = {e.path: e for e in tree if e.type == "blob"}
    assert set(blobs) == set(SEED)
    assert blobs["README.md"].size == len("hello\n")
    assert {e.path for e in tree if e.type == "tree"} == {"src", "docs"}
    assert {e.path for e in await gh.get_tree("main", recursive=False)} == {
        "README.md",
        "src",
        "docs",
    }

    assert await gh.get_file("src/app.py", "main") == b"print('hi')\n"
    assert await gh.get_file("nope.txt", "main") is None
    assert await gh.get_file("src", "main") is None  # a directory is not a file

    again = await gh.create_commit(message="empty", tree_sha=commit.tree_sha, parents=[main])
    assert (await gh.get_commit(again)).parents == (main,)

    archive = await gh.download_archive("main")
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        names = {m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile()}
    assert names == set(SEED)


async def test_commit_files_writes_one_commit_with_adds_edits_and_deletes(
    emu: GitHubEmulator, gh: GitHub, tmp_path: Path
) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    emu.seed_from_dir(tmp_path, message="exec")
    parent = emu.ref_sha("heads/main")
    assert parent is not None

    sha = await gh.commit_files(
        parent_sha=parent,
        message="Apply the fix",
        files={
            "src/app.py": "print('fixed')\n",
            "src/new/module.py": "X = 1\n",
            "assets/logo.bin": bytes(range(256)),
            "docs/guide.md": None,
            "already/absent.txt": None,
            "run.sh": "#!/bin/sh\necho hi\n",
        },
    )
    assert emu.ref_sha("heads/main") == parent  # no ref moved
    await gh.update_ref("heads/main", sha)

    history = emu.log("main")
    assert [c.message for c in history[:2]] == ["Apply the fix", "exec"]
    assert emu.file_at("main", "src/app.py") == b"print('fixed')\n"
    assert emu.file_at("main", "src/new/module.py") == b"X = 1\n"
    assert emu.file_at("main", "assets/logo.bin") == bytes(range(256))
    assert emu.file_at("main", "docs/guide.md") is None
    assert emu.file_at("main", "README.md") == b"hello\n"
    modes = {e.path: e.mode for e in await gh.get_tree("main")}
    assert modes["run.sh"] == "100755"
    assert modes["src/new/module.py"] == "100644"

    posts = {
        route: statuses
        for route, statuses in gh.stats.by_route().items()
        if route.startswith("POST")
    }
    # Text rides inline in the tree request: one blob (the bytes), one tree, one commit.
    assert posts == {
        "POST /repos/{owner}/{repo}/git/blobs": {201: 1},
        "POST /repos/{owner}/{repo}/git/trees": {201: 1},
        "POST /repos/{owner}/{repo}/git/commits": {201: 1},
    }
    with pytest.raises(ValueError, match="repository-relative"):
        await gh.commit_files(parent_sha=sha, message="m", files={"../evil": "x"})


async def test_commit_files_on_a_tree_already_read_reads_nothing(
    emu: GitHubEmulator, gh: GitHub, tmp_path: Path
) -> None:
    """Given the parent's tree as the run read it (only the entries around the files),
    a commit is one tree and one commit request, with the same checks and modes."""
    script = tmp_path / "bin" / "run.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    emu.seed_from_dir(tmp_path, message="exec")
    parent = emu.ref_sha("heads/main")
    assert parent is not None
    tree = await gh.read_tree(parent)
    files: dict[str, str | bytes | None] = {"bin/run.sh": "#!/bin/sh\necho hi\n", "new.txt": "n\n"}
    around = tree.around(files)
    assert {e.path for e in around.entries} == {"bin", "bin/run.sh"}
    before = gh.stats.total

    sha = await gh.commit_files(parent_sha=parent, message="m", files=files, parent_tree=around)

    assert gh.stats.total - before == 2  # POST tree, POST commit: no reads
    await gh.update_ref("heads/main", sha)
    modes = {e.path: e.mode for e in await gh.get_tree("main")}
    assert modes["bin/run.sh"] == "100755"
    assert emu.file_at("main", "README.md") == b"hello\n"
    with pytest.raises(ValueError, match="directory"):
        await gh.commit_files(
            parent_sha=parent, message="m", files={"bin": "x"}, parent_tree=tree.around(["bin"])
        )
