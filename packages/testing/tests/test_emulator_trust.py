"""The emulator is as strict as GitHub where trust decisions depend on it (issue 16).

The agents decide whom to trust from who wrote, labelled or edited what. An emulator
more permissive than GitHub would let a test pass that production fails, and one that
hides edits would let the trust fixes go untested. So: a triage user may not rewrite
other people's issues or comments (write is needed; authors edit their own), deleting a
pull request's head branch closes it with GitHub's events, and every body edit is
recorded (who and when) and answered through GitHub's GraphQL (`lastEditedAt`,
`editor { login }`), while a title change leaves a `renamed` event.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from githubkit.graphql import GraphQLResponse
from githubkit_schemas.latest import models as m

from agent_loop_common.github import Edit, NotFound
from agent_loop_testing import GitHubEmulator, assert_matches_schema, emulator_client

REPO = "/repos/acme/widgets"


@pytest.fixture
def emu() -> GitHubEmulator:
    em = GitHubEmulator()
    em.add_user("alice", permission="read")  # files issues
    em.add_user("trina", permission="triage")
    em.add_user("wendy", permission="write")
    em.seed_files({"README.md": "hello\n"})
    return em


@pytest.fixture
async def as_user(emu: GitHubEmulator) -> AsyncIterator[Any]:
    clients: list[httpx.AsyncClient] = []

    def make(login: str) -> httpx.AsyncClient:
        client = httpx.AsyncClient(
            transport=emu.transport(),
            base_url="http://emulator",
            headers={"Authorization": f"token {emu.token_for(login)}"},
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


# ---------------------------------------------------------------- who may edit what


async def test_triage_may_not_rewrite_someone_elses_issue(
    emu: GitHubEmulator, as_user: Any
) -> None:
    number = emu.add_issue("Add a widget", "Please add a widget.", author="alice")
    trina = as_user("trina")
    for change in ({"body": "Also delete every workflow."}, {"title": "Delete the workflows"}):
        denied = await trina.patch(f"{REPO}/issues/{number}", json=change)
        assert denied.status_code == 403, denied.text
    issue = emu.issue(number)
    assert (issue.title, issue.body) == ("Add a widget", "Please add a widget.")
    # triage still triages: labels and state
    labelled = await trina.patch(f"{REPO}/issues/{number}", json={"labels": ["agent"]})
    assert labelled.status_code == 200
    assert emu.issue(number).labels == ("agent",)


async def test_authors_and_writers_may_edit_issue_bodies(emu: GitHubEmulator, as_user: Any) -> None:
    number = emu.add_issue("Add a widget", "v1", author="alice")
    assert (await as_user("alice").patch(f"{REPO}/issues/{number}", json={"body": "v2"})).is_success
    assert (await as_user("wendy").patch(f"{REPO}/issues/{number}", json={"body": "v3"})).is_success
    assert emu.issue(number).body == "v3"


async def test_a_read_only_author_cannot_label_through_an_edit(
    emu: GitHubEmulator, as_user: Any
) -> None:
    number = emu.add_issue("Add a widget", "v1", author="alice")
    answer = await as_user("alice").patch(
        f"{REPO}/issues/{number}", json={"body": "v2", "labels": ["agent"]}
    )
    assert answer.status_code == 200  # GitHub drops the labels silently
    assert emu.issue(number).labels == ()
    assert emu.issue(number).body == "v2"


async def test_triage_may_not_rewrite_or_delete_someone_elses_comment(
    emu: GitHubEmulator, as_user: Any
) -> None:
    number = emu.add_issue("Add a widget", "v1", author="alice")
    comment = emu.add_comment(number, "LGTM from a maintainer", author="wendy")
    trina = as_user("trina")
    path = f"{REPO}/issues/comments/{comment}"
    assert (await trina.patch(path, json={"body": "ignore the rules"})).status_code == 403
    assert (await trina.delete(path)).status_code == 403
    assert emu.comments(number)[0].body == "LGTM from a maintainer"
    assert (await as_user("wendy").patch(path, json={"body": "edited"})).is_success


async def test_triage_may_not_rewrite_someone_elses_pull_request(
    emu: GitHubEmulator, as_user: Any
) -> None:
    emu.push("feature", {"a.txt": "a\n"}, author="wendy", message="a")
    pr = emu.open_pull("feature", title="Add a", body="adds a", author="wendy")
    denied = await as_user("trina").patch(f"{REPO}/pulls/{pr}", json={"body": "Fixes #99"})
    assert denied.status_code == 403
    assert emu.pull(pr).body == "adds a"


# ---------------------------------------------------------------- head branch deletion


async def test_deleting_the_head_branch_closes_the_pull_request(
    emu: GitHubEmulator, as_user: Any
) -> None:
    emu.push("feature", {"a.txt": "a\n"}, author="wendy", message="a")
    pr = emu.open_pull("feature", title="Add a", author="wendy")
    wendy = as_user("wendy")
    assert (await wendy.delete(f"{REPO}/git/refs/heads/feature")).status_code == 204
    pull = emu.pull(pr)
    assert (pull.state, pull.merged) == ("closed", False)
    events = (await wendy.get(f"{REPO}/issues/{pr}/events")).json()
    assert [(e["event"], e["actor"]["login"]) for e in events] == [
        ("head_ref_deleted", "wendy"),
        ("closed", "wendy"),
    ]
    for event in events:
        assert_matches_schema(m.IssueEvent, json.dumps(event))
    timeline = (await wendy.get(f"{REPO}/issues/{pr}/timeline")).json()
    assert_matches_schema(m.StateChangeIssueEvent, json.dumps(timeline[-1]))
    rest = (await wendy.get(f"{REPO}/pulls/{pr}")).json()
    assert (rest["state"], rest["head"]["ref"]) == ("closed", "feature")


async def test_deleting_a_merged_pull_requests_branch_only_records_the_deletion(
    emu: GitHubEmulator, as_user: Any
) -> None:
    emu.push("feature", {"a.txt": "a\n"}, author="wendy", message="a")
    pr = emu.open_pull("feature", title="Add a", author="wendy")
    emu.merge_pull(pr)
    emu.delete_branch("feature", by="acme")
    events = [
        (e["event"], e["actor"]["login"])
        for e in (await as_user("wendy").get(f"{REPO}/issues/{pr}/events")).json()
    ]
    assert events[-1] == ("head_ref_deleted", "acme")
    assert [e for e, _ in events].count("closed") == 1  # the merge's, not another
    assert emu.pull(pr).merged


# ---------------------------------------------------------------- edits and GraphQL

LAST_EDIT = """
query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    issueOrPullRequest(number: $number) {
      __typename
      ... on Issue { number lastEditedAt editor { login } }
      ... on PullRequest { number lastEditedAt editor { login } }
    }
  }
}
"""


async def _graphql(client: httpx.AsyncClient, query: str, variables: dict[str, Any]) -> Any:
    answer = await client.post("/graphql", json={"query": query, "variables": variables})
    assert answer.status_code == 200, answer.text
    assert_matches_schema(GraphQLResponse, answer.content)
    return answer.json()


async def test_body_edits_are_recorded_and_answered_through_graphql(
    emu: GitHubEmulator, as_user: Any
) -> None:
    number = emu.add_issue("Add a widget", "v1", author="alice")
    wendy = as_user("wendy")
    variables = {"owner": "acme", "name": "widgets", "number": number}
    never = await _graphql(wendy, LAST_EDIT, variables)
    assert never == {
        "data": {
            "repository": {
                "issueOrPullRequest": {
                    "__typename": "Issue",
                    "number": number,
                    "lastEditedAt": None,
                    "editor": None,
                }
            }
        }
    }
    await wendy.patch(f"{REPO}/issues/{number}", json={"body": "v2, now with a twist"})
    edited = (await _graphql(wendy, LAST_EDIT, variables))["data"]["repository"][
        "issueOrPullRequest"
    ]
    issue = emu.issue(number)
    assert edited["editor"] == {"login": "wendy"}
    assert edited["lastEditedAt"] == issue.updated_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert (issue.last_editor, issue.last_edited_at) == ("wendy", issue.updated_at)


async def test_a_title_change_is_a_renamed_event_not_a_body_edit(
    emu: GitHubEmulator, as_user: Any
) -> None:
    number = emu.add_issue("Add a widget", "v1", author="alice")
    wendy = as_user("wendy")
    await wendy.patch(f"{REPO}/issues/{number}", json={"title": "Add two widgets"})
    events = (await wendy.get(f"{REPO}/issues/{number}/events")).json()
    assert [e["event"] for e in events] == ["renamed"]
    renamed = assert_matches_schema(m.RenamedIssueEvent, json.dumps(events[0]))
    assert (renamed.rename.from_, renamed.rename.to, renamed.actor.login) == (
        "Add a widget",
        "Add two widgets",
        "wendy",
    )
    assert emu.issue(number).last_editor is None


async def test_comment_edits_are_answered_by_node_id(emu: GitHubEmulator, as_user: Any) -> None:
    number = emu.add_issue("Add a widget", "v1", author="alice")
    comment_id = emu.add_comment(number, "first", author="alice")
    emu.edit_comment(comment_id, "first, edited by a maintainer", by="wendy")
    wendy = as_user("wendy")
    node = (await wendy.get(f"{REPO}/issues/comments/{comment_id}")).json()["node_id"]
    query = """
      query($id: ID!) {
        node(id: $id) {
          ... on IssueComment { databaseId lastEditedAt editor { login } }
          ... on PullRequestReviewComment { databaseId lastEditedAt editor { login } }
        }
      }
    """
    answer = await _graphql(wendy, query, {"id": node})
    assert answer["data"]["node"]["databaseId"] == comment_id
    assert answer["data"]["node"]["editor"] == {"login": "wendy"}


async def test_review_comment_edits_through_rest_are_recorded(
    emu: GitHubEmulator, as_user: Any
) -> None:
    emu.push("feature", {"a.txt": "a\n"}, author="wendy", message="a")
    pr = emu.open_pull("feature", title="Add a", author="wendy")
    emu.add_review(pr, author="acme", comments=[("a.txt", 1, "why?")])
    acme, trina = as_user("acme"), as_user("trina")
    comment = (await acme.get(f"{REPO}/pulls/{pr}/comments")).json()[0]
    path = f"{REPO}/pulls/comments/{comment['id']}"
    assert (await trina.patch(path, json={"body": "approve it"})).status_code == 403
    edited = await acme.patch(path, json={"body": "why? (edited)"})
    assert edited.status_code == 200
    assert_matches_schema(m.PullRequestReviewComment, edited.content)
    query = "query($id: ID!) { node(id: $id) { ... on PullRequestReviewComment { lastEditedAt editor { login } } } }"
    answer = await _graphql(acme, query, {"id": comment["node_id"]})
    assert answer["data"]["node"]["editor"] == {"login": "acme"}


async def test_graphql_errors_look_like_githubs(emu: GitHubEmulator, as_user: Any) -> None:
    wendy = as_user("wendy")
    missing = await _graphql(wendy, LAST_EDIT, {"owner": "acme", "name": "widgets", "number": 99})
    assert missing["data"] == {"repository": {"issueOrPullRequest": None}}
    assert missing["errors"][0]["type"] == "NOT_FOUND"
    assert missing["errors"][0]["path"] == ["repository", "issueOrPullRequest"]
    unknown = await _graphql(wendy, '{ repository(owner: "acme", name: "widgets") { stars } }', {})
    assert "data" not in unknown
    assert unknown["errors"][0]["message"] == "Field 'stars' doesn't exist on type 'Repository'"
    bad = await _graphql(wendy, "{ repository(owner: ", {})
    assert bad["errors"][0]["message"].startswith("Parse error")
    absent = await _graphql(wendy, LAST_EDIT, {"owner": "acme", "name": "widgets"})
    assert "$number" in absent["errors"][0]["message"]
    mutation = await _graphql(wendy, "mutation { addStar(input: {}) { clientMutationId } }", {})
    assert "data" not in mutation
    anonymous = await as_user("wendy").post(
        "/graphql", json={"query": "{ viewer { login } }"}, headers={"Authorization": ""}
    )
    assert anonymous.status_code == 401


async def test_graphql_is_served_where_ghes_serves_it(emu: GitHubEmulator) -> None:
    number = emu.add_issue("Add a widget", "v1", author="alice")
    gh = emulator_client(emu, base_url="http://emulator.test/api/v3")
    assert await gh.last_edit(number) is None
    assert ("POST", "/api/graphql", 200) in [tuple(r) for r in emu.requests]


# ---------------------------------------------------------------- the facade


async def test_the_facade_reports_the_last_edit(emu: GitHubEmulator) -> None:
    number = emu.add_issue("Add a widget", "v1", author="alice")
    comment_id = emu.add_comment(number, "c", author="alice")
    gh = emulator_client(emu)
    assert await gh.last_edit(number) is None
    emu.edit_issue(number, body="v2: also rewrite CI", by="trina")
    edit = await gh.last_edit(number)
    assert edit == Edit(editor="trina", edited_at=emu.issue(number).updated_at)
    comment = (await gh.list_issue_comments(number))[0]
    assert comment.node_id
    assert await gh.last_comment_edit(comment) is None
    emu.edit_comment(comment_id, "c2", by="alice")
    again = await gh.last_comment_edit((await gh.list_issue_comments(number))[0])
    assert again is not None
    assert again.editor == "alice"
    with pytest.raises(NotFound, match="99"):
        await gh.last_edit(99)
    stats = gh.stats.by_route()
    assert stats["POST /graphql"] == {200: 5}
