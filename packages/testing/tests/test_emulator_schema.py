"""Every emulator endpoint answers in GitHub's schema, checked strictly against githubkit.

Each response body is validated with `assert_matches_schema` (pydantic strict mode plus
no undeclared keys plus GitHub's timestamp form) against the githubkit model for that
operation, so a field the emulator forgets, misspells or mistypes fails here.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from githubkit_schemas.latest import models as m

from agent_loop_testing import GitHubEmulator, SchemaMismatch, assert_matches_schema

REPO = "/repos/acme/widgets"


@pytest.fixture
def emulator() -> GitHubEmulator:
    em = GitHubEmulator()
    em.add_user("alice", permission="triage")
    em.seed_files({"README.md": "hello\n", "src/app.py": "print('hi')\n"})
    number = em.add_issue("Widget breaks", "steps", author="alice", labels=["bug"])
    em.label_issue(number, "agent", actor="acme")
    em.unlabel_issue(number, "bug", actor="acme")
    em.add_comment(number, "me too", author="alice")
    em.close_issue(number, by="acme")
    head = em.push(
        "feature",
        {"src/app.py": "print('hello')\n", "NEW.md": "new\n"},
        author="alice",
        message="feat",
    )
    pr = em.open_pull("feature", title="Feature", body="does things", author="alice")
    em.add_review(
        pr,
        author="acme",
        state="CHANGES_REQUESTED",
        body="fix",
        comments=[("src/app.py", 1, "why?")],
    )
    em.set_check_run(
        head, "ci", conclusion="failure", title="tests", summary="1 failed", text="trace"
    )
    em.set_status(head, "lint", "success", "ok")
    return em


@pytest.fixture
async def client(emulator: GitHubEmulator) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"token {emulator.owner_token}"}
    async with httpx.AsyncClient(
        transport=emulator.transport(), base_url="http://emulator", headers=headers
    ) as c:
        yield c


async def _ok(client: httpx.AsyncClient, method: str, path: str, model: Any, **kw: Any) -> Any:
    response = await client.request(method, path, **kw)
    assert response.status_code < 300, response.text
    return assert_matches_schema(model, response.content)


async def test_identity_and_repository(client: httpx.AsyncClient) -> None:
    me = await _ok(client, "GET", "/user", m.PrivateUser)
    assert me.login == "acme"
    await _ok(client, "GET", "/users/agent-loop%5Bbot%5D", m.PublicUser)
    repo = await _ok(client, "GET", REPO, m.FullRepository)
    assert repo.permissions.admin is True
    perm = await _ok(
        client, "GET", f"{REPO}/collaborators/alice/permission", m.RepositoryCollaboratorPermission
    )
    assert (perm.permission, perm.role_name) == ("read", "triage")


async def test_issues_comments_labels(client: httpx.AsyncClient) -> None:
    listed = await _ok(client, "GET", f"{REPO}/issues?state=all", list[m.Issue])
    assert [i.number for i in listed] == [2, 1]
    assert listed[0].pull_request is not None
    await _ok(client, "GET", f"{REPO}/issues/1", m.Issue)
    created = await _ok(
        client, "POST", f"{REPO}/issues", m.Issue, json={"title": "New", "labels": ["x"]}
    )
    n = created.number
    await _ok(
        client,
        "PATCH",
        f"{REPO}/issues/{n}",
        m.ReposOwnerRepoIssuesIssueNumberPatchResponse200,
        json={"state": "closed"},
    )
    comment = await _ok(
        client, "POST", f"{REPO}/issues/{n}/comments", m.IssueComment, json={"body": "hi"}
    )
    await _ok(
        client,
        "PATCH",
        f"{REPO}/issues/comments/{comment.id}",
        m.IssueComment,
        json={"body": "edited"},
    )
    await _ok(client, "GET", f"{REPO}/issues/{n}/comments", list[m.IssueComment])
    await _ok(client, "GET", f"{REPO}/issues/comments/{comment.id}", m.IssueComment)
    await _ok(client, "POST", f"{REPO}/issues/{n}/labels", list[m.Label], json={"labels": ["y"]})
    await _ok(
        client, "PUT", f"{REPO}/issues/{n}/labels", list[m.Label], json={"labels": ["x", "y", "z"]}
    )
    await _ok(client, "GET", f"{REPO}/issues/{n}/labels", list[m.Label])
    await _ok(client, "DELETE", f"{REPO}/issues/{n}/labels/y", list[m.Label])
    await _ok(client, "GET", f"{REPO}/labels", list[m.Label])
    await _ok(
        client, "POST", f"{REPO}/labels", m.Label, json={"name": "triaged", "color": "#00ff00"}
    )
    assert (await client.delete(f"{REPO}/issues/comments/{comment.id}")).status_code == 204


async def test_reactions(client: httpx.AsyncClient) -> None:
    comment = await _ok(
        client, "POST", f"{REPO}/issues/1/comments", m.IssueComment, json={"body": "hi"}
    )
    path = f"{REPO}/issues/comments/{comment.id}/reactions"
    first = await client.post(path, json={"content": "rocket"})
    assert first.status_code == 201
    made = assert_matches_schema(m.Reaction, first.content)
    again = await client.post(path, json={"content": "rocket"})
    assert again.status_code == 200
    assert assert_matches_schema(m.Reaction, again.content).id == made.id
    await _ok(client, "POST", path, m.Reaction, json={"content": "eyes"})
    listed = await _ok(client, "GET", path, list[m.Reaction])
    assert [r.content for r in listed] == ["rocket", "eyes"]
    only = await _ok(client, "GET", f"{path}?content=eyes", list[m.Reaction])
    assert [r.content for r in only] == ["eyes"]
    bad = await client.post(path, json={"content": "party"})
    assert bad.status_code == 422
    assert (await client.get(f"{REPO}/issues/comments/999/reactions")).status_code == 404


_EVENT_MODELS: dict[str, Any] = {
    "labeled": m.LabeledIssueEvent,
    "unlabeled": m.UnlabeledIssueEvent,
    "commented": m.TimelineCommentEvent,
}


async def test_events_and_timeline(client: httpx.AsyncClient) -> None:
    for path, fallback in (("events", m.IssueEvent), ("timeline", m.StateChangeIssueEvent)):
        response = await client.get(f"{REPO}/issues/1/{path}")
        kinds = []
        for item in response.json():
            kinds.append(item["event"])
            assert_matches_schema(_EVENT_MODELS.get(item["event"], fallback), json.dumps(item))
        expected = ["labeled", "labeled", "unlabeled", "closed"]
        assert kinds == (expected if path == "events" else [*expected[:3], "commented", "closed"])


async def test_pulls_reviews_checks(emulator: GitHubEmulator, client: httpx.AsyncClient) -> None:
    await _ok(client, "GET", f"{REPO}/pulls", list[m.PullRequestSimple])
    pr = await _ok(client, "GET", f"{REPO}/pulls/2", m.PullRequest)
    assert (pr.commits, pr.changed_files, pr.additions, pr.deletions) == (1, 2, 2, 1)
    await _ok(client, "PATCH", f"{REPO}/pulls/2", m.PullRequest, json={"title": "Feature!"})
    await _ok(client, "GET", f"{REPO}/pulls/2/files", list[m.DiffEntry])
    await _ok(client, "GET", f"{REPO}/pulls/2/reviews", list[m.PullRequestReview])
    await _ok(
        client,
        "POST",
        f"{REPO}/pulls/2/reviews",
        m.PullRequestReview,
        json={"event": "COMMENT", "body": "ok"},
    )
    comments = await _ok(
        client, "GET", f"{REPO}/pulls/2/comments", list[m.PullRequestReviewComment]
    )
    reply = await _ok(
        client,
        "POST",
        f"{REPO}/pulls/2/comments/{comments[0].id}/replies",
        m.PullRequestReviewComment,
        json={"body": "because"},
    )
    assert reply.in_reply_to_id == comments[0].id
    head = pr.head.sha
    runs = await _ok(
        client,
        "GET",
        f"{REPO}/commits/{head}/check-runs",
        m.ReposOwnerRepoCommitsRefCheckRunsGetResponse200,
    )
    assert runs.check_runs[0].output.text == "trace"
    await _ok(client, "GET", f"{REPO}/commits/feature/status", m.CombinedCommitStatus)
    await _ok(client, "GET", f"{REPO}/commits/{head}/statuses", list[m.Status])
    await _ok(
        client,
        "POST",
        f"{REPO}/statuses/{head}",
        m.Status,
        json={"state": "pending", "context": "x"},
    )
    merged = await _ok(client, "PUT", f"{REPO}/pulls/2/merge", m.PullRequestMergeResult, json={})
    assert merged.merged is True
    await _ok(client, "GET", f"{REPO}/pulls/2", m.PullRequest)


async def test_check_runs_through_the_api_need_an_app(
    emulator: GitHubEmulator, client: httpx.AsyncClient
) -> None:
    head = emulator.ref_sha("heads/feature")
    denied = await client.post(f"{REPO}/check-runs", json={"name": "ci", "head_sha": head})
    assert denied.status_code == 403
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    installation_id = emulator.register_app(99, public.decode(), slug="ci-app")
    now = int(time.time())
    app_jwt = jwt.encode({"iss": "99", "iat": now - 60, "exp": now + 500}, key, algorithm="RS256")
    minted = await client.post(
        f"/app/installations/{installation_id}/access_tokens",
        headers={"Authorization": f"Bearer {app_jwt}"},
    )
    installation = {"Authorization": f"token {minted.json()['token']}"}
    run = await _ok(
        client,
        "POST",
        f"{REPO}/check-runs",
        m.CheckRun,
        headers=installation,
        json={"name": "ci", "head_sha": head, "status": "in_progress"},
    )
    done = await _ok(
        client,
        "PATCH",
        f"{REPO}/check-runs/{run.id}",
        m.CheckRun,
        headers=installation,
        json={"conclusion": "success", "output": {"title": "t", "summary": "s"}},
    )
    assert (done.status, done.conclusion, done.output.summary) == ("completed", "success", "s")
    await _ok(client, "GET", f"{REPO}/check-runs/{run.id}", m.CheckRun)


async def test_contents_and_git_data(emulator: GitHubEmulator, client: httpx.AsyncClient) -> None:
    file = await _ok(client, "GET", f"{REPO}/contents/src/app.py?ref=main", m.ContentFile)
    assert base64.b64decode(file.content) == b"print('hi')\n"
    await _ok(client, "GET", f"{REPO}/contents/src", list[m.ContentDirectoryItems])
    blob = await _ok(
        client, "POST", f"{REPO}/git/blobs", m.ShortBlob, json={"content": "x", "encoding": "utf-8"}
    )
    await _ok(client, "GET", f"{REPO}/git/blobs/{blob.sha}", m.Blob)
    main = emulator.ref_sha("heads/main")
    assert main is not None
    tree = await _ok(
        client,
        "POST",
        f"{REPO}/git/trees",
        m.GitTree,
        json={
            "base_tree": emulator.log("main")[0].tree,
            "tree": [{"path": "a/b.txt", "mode": "100644", "type": "blob", "sha": blob.sha}],
        },
    )
    await _ok(client, "GET", f"{REPO}/git/trees/{tree.sha}?recursive=1", m.GitTree)
    commit = await _ok(
        client,
        "POST",
        f"{REPO}/git/commits",
        m.GitCommit,
        json={"message": "m", "tree": tree.sha, "parents": [main]},
    )
    await _ok(client, "GET", f"{REPO}/git/commits/{commit.sha}", m.GitCommit)
    await _ok(
        client,
        "POST",
        f"{REPO}/git/refs",
        m.GitRef,
        json={"ref": "refs/heads/x", "sha": commit.sha},
    )
    await _ok(client, "PATCH", f"{REPO}/git/refs/heads/x", m.GitRef, json={"sha": commit.sha})
    await _ok(client, "GET", f"{REPO}/git/ref/heads/x", m.GitRef)
    await _ok(client, "GET", f"{REPO}/git/matching-refs/heads", list[m.GitRef])
    history = await _ok(
        client, "GET", f"{REPO}/commits?sha=feature&path=src/app.py", list[m.Commit]
    )
    assert [c.author.login for c in history] == ["alice", "acme"]
    assert history[0].commit.message == "feat"
    untouched = await _ok(
        client, "GET", f"{REPO}/commits?sha=feature&path=README.md", list[m.Commit]
    )
    assert [c.sha for c in untouched] == [history[-1].sha]


async def test_error_bodies(emulator: GitHubEmulator, client: httpx.AsyncClient) -> None:
    missing = await client.get(f"{REPO}/issues/99")
    assert missing.status_code == 404
    assert_matches_schema(m.BasicError, missing.content)
    sha = emulator.ref_sha("heads/main")
    exists = await client.post(f"{REPO}/git/refs", json={"ref": "refs/heads/main", "sha": sha})
    body = assert_matches_schema(m.BasicError, exists.content)
    assert (exists.status_code, body.message, body.status) == (
        422,
        "Reference already exists",
        "422",
    )
    assert body.documentation_url.endswith("#create-a-reference")
    no_diff = await client.post(
        f"{REPO}/pulls", json={"title": "t", "head": "main", "base": "main"}
    )
    assert no_diff.status_code == 422
    err = assert_matches_schema(
        m.ValidationError, no_diff.content, allow_keys={"documentation_url", "status"}
    )
    assert err.errors[0].message == "No commits between main and main"


def test_schema_check_rejects_undeclared_keys_and_naive_timestamps() -> None:
    with pytest.raises(SchemaMismatch, match="keys not in ShortBlob"):
        assert_matches_schema(m.ShortBlob, b'{"url": "u", "sha": "s", "extra": 1}')
    with pytest.raises(SchemaMismatch, match="timestamp form"):
        assert_matches_schema(
            m.InstallationToken, b'{"token": "t", "expires_at": "2026-01-01 00:00"}'
        )
    with pytest.raises(SchemaMismatch, match="Input should be a valid string"):
        assert_matches_schema(
            m.PullRequestMergeResult, b'{"sha": 1, "merged": true, "message": "m"}'
        )


async def test_commit_verification_and_associated_pulls(
    emulator: GitHubEmulator, client: httpx.AsyncClient
) -> None:
    """What the lessons flow-back relies on, in GitHub's schema: each commit's
    `verification` (a user's key, GitHub's own, a key that is not the committer's) and
    the pull requests a commit belongs to, before and after the merge."""
    emulator.add_user("wendy", permission="write")
    own = emulator.push(
        "signed", {"s.md": "1\n"}, author="alice", committer="wendy", signed_by="wendy", message="s"
    )
    foreign = emulator.push(
        "signed", {"s.md": "2\n"}, author="alice", signed_by="wendy", message="t"
    )
    feature = emulator.ref_sha("heads/feature")
    assert feature is not None
    before = await _ok(client, "GET", f"{REPO}/commits/{feature}/pulls", list[m.PullRequestSimple])
    assert [p.number for p in before] == [2]  # open, not on the default branch yet
    await _ok(client, "PUT", f"{REPO}/pulls/2/merge", m.PullRequestMergeResult, json={})
    after = await _ok(client, "GET", f"{REPO}/commits/{feature}/pulls", list[m.PullRequestSimple])
    assert [(p.number, p.merged_at is not None) for p in after] == [(2, True)]
    assert await _ok(client, "GET", f"{REPO}/commits/{own}/pulls", list[m.PullRequestSimple]) == []
    history = await _ok(client, "GET", f"{REPO}/commits?sha=signed", list[m.Commit])
    by_sha = {c.sha: c for c in history}
    assert (by_sha[own].commit.verification.verified, by_sha[own].commit.verification.reason) == (
        True,
        "valid",
    )
    assert by_sha[foreign].commit.verification.reason == "bad_email"
    merges = await _ok(client, "GET", f"{REPO}/commits?sha=main", list[m.Commit])
    merge = merges[0]
    assert merge.commit.verification.verified is True  # GitHub signs the merges it makes
    assert merge.committer is not None
    assert merge.committer.login == "web-flow"
    await _ok(client, "GET", f"{REPO}/git/commits/{own}", m.GitCommit)
    missing = await client.get(f"{REPO}/commits/{'0' * 40}/pulls")
    assert missing.status_code == 422
