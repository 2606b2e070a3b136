"""A body's edit history, as GitHub keeps it (GraphQL `userContentEdits`).

The benchmark shows a model an issue's text as it was when the fix's pull request was
opened, not as it reads today (a later edit could hint at the fix), and REST keeps no
history. GitHub's GraphQL API does: once a body is edited, `userContentEdits` lists
every revision, newest first, the oldest being the text as created (its author's, at
its creation; `includesCreatedEdit`), each with `editedAt`, `editor` and the whole body
it left in `diff` (what GitHub answers, though its schema calls it "a summary"). A
revision deleted from the history keeps its time and editor, its text is gone
(`deletedAt`, `diff: null`). Before any edit there is no history at all. The emulator
answers that shape, and the facade reads it (`GitHub.body_history`, oldest first).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from githubkit.graphql import GraphQLResponse

from agent_loop_testing import GitHubEmulator, assert_matches_schema, emulator_client

HISTORY = """
query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    issue(number: $number) {
      createdAt lastEditedAt includesCreatedEdit
      userContentEdits(first: 10) {
        totalCount
        nodes { id createdAt editedAt deletedAt deletedBy { login } diff editor { login } }
      }
    }
  }
}
"""


@pytest.fixture
def emu() -> GitHubEmulator:
    em = GitHubEmulator()
    em.add_user("alice", permission="read")
    em.add_user("wendy", permission="write")
    em.seed_files({"README.md": "hello\n"})
    return em


async def _history(emu: GitHubEmulator, number: int, query: str = HISTORY) -> Any:
    async with httpx.AsyncClient(
        transport=emu.transport(),
        base_url="http://emulator",
        headers={"Authorization": f"token {emu.bot_token}"},
    ) as client:
        answer = await client.post(
            "/graphql",
            json={
                "query": query,
                "variables": {"owner": "acme", "name": "widgets", "number": number},
            },
        )
    assert answer.status_code == 200, answer.text
    assert_matches_schema(GraphQLResponse, answer.content)
    return answer.json()


def _ts(emu: GitHubEmulator, number: int) -> str:
    return emu.issue(number).created_at.strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_a_body_never_edited_has_no_history(emu: GitHubEmulator) -> None:
    number = emu.add_issue("Add a widget", "v1", author="alice")
    emu.edit_issue(number, title="Add two widgets", by="wendy")  # a title is no body edit
    issue = (await _history(emu, number))["data"]["repository"]["issue"]
    assert issue == {
        "createdAt": _ts(emu, number),
        "lastEditedAt": None,
        "includesCreatedEdit": False,
        "userContentEdits": {"totalCount": 0, "nodes": []},
    }


async def test_every_revision_is_listed_newest_first_from_the_text_as_created(
    emu: GitHubEmulator,
) -> None:
    number = emu.add_issue("Add a widget", "v1", author="alice")
    emu.edit_issue(number, body="v2", by="alice")
    second = emu.now
    emu.edit_issue(number, body="v3: the fix is in widget.py", by="wendy")
    issue = (await _history(emu, number))["data"]["repository"]["issue"]
    assert issue["includesCreatedEdit"] is True
    assert issue["lastEditedAt"] == emu.now.strftime("%Y-%m-%dT%H:%M:%SZ")
    nodes = issue["userContentEdits"]["nodes"]
    assert issue["userContentEdits"]["totalCount"] == 3
    assert [(n["diff"], n["editor"]["login"]) for n in nodes] == [
        ("v3: the fix is in widget.py", "wendy"),
        ("v2", "alice"),
        ("v1", "alice"),
    ]
    assert nodes[2]["editedAt"] == _ts(emu, number)  # the text as created
    assert nodes[1]["editedAt"] == second.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert len({n["id"] for n in nodes}) == 3
    assert all(n["deletedAt"] is None and n["deletedBy"] is None for n in nodes)


async def test_a_revision_deleted_from_the_history_keeps_its_time_not_its_text(
    emu: GitHubEmulator,
) -> None:
    number = emu.add_issue("Add a widget", "v1", author="alice")
    emu.edit_issue(number, body="v2", by="wendy")
    emu.delete_issue_revision(number, 0, by="wendy")
    nodes = (await _history(emu, number))["data"]["repository"]["issue"]["userContentEdits"][
        "nodes"
    ]
    created = nodes[1]
    assert created["diff"] is None
    assert created["deletedBy"] == {"login": "wendy"}
    assert created["deletedAt"] is not None
    assert created["editedAt"] == _ts(emu, number)
    with pytest.raises(ValueError, match="no earlier revision 1"):
        emu.delete_issue_revision(number, 1, by="wendy")  # the current text


async def test_the_connection_takes_first_or_last_as_github_does(emu: GitHubEmulator) -> None:
    number = emu.add_issue("Add a widget", "v1", author="alice")
    for k in (2, 3, 4):
        emu.edit_issue(number, body=f"v{k}", by="alice")
    last = HISTORY.replace("first: 10", "last: 2")
    nodes = (await _history(emu, number, last))["data"]["repository"]["issue"]["userContentEdits"][
        "nodes"
    ]
    assert [n["diff"] for n in nodes] == ["v2", "v1"]
    unbounded = await _history(emu, number, HISTORY.replace("(first: 10)", ""))
    assert unbounded["errors"][0]["type"] == "MISSING_PAGINATION_BOUNDARIES"


async def test_the_facade_reads_the_history_oldest_first(emu: GitHubEmulator) -> None:
    number = emu.add_issue("Add a widget", "v1", author="alice")
    gh = emulator_client(emu)
    never = await gh.body_history(number)
    assert (never.revisions, never.last_edited_at, never.includes_creation) == ((), None, False)
    assert never.complete
    created = emu.issue(number).created_at
    emu.edit_issue(number, body="v2", by="alice")
    opened = emu.advance_clock(timedelta(minutes=5))
    emu.edit_issue(number, body="v3: the fix is in widget.py", by="wendy")
    history = await gh.body_history(number)
    assert [(r.body, r.editor) for r in history.revisions] == [
        ("v1", "alice"),
        ("v2", "alice"),
        ("v3: the fix is in widget.py", "wendy"),
    ]
    assert history.revisions[0].edited_at == created
    assert history.includes_creation
    assert history.complete
    before = history.text_before(opened)
    assert before is not None
    assert before.body == "v2"
    assert history.text_before(created) is None  # nothing before the issue existed
    events = await gh.list_issue_events(number)
    assert events == []
    emu.edit_issue(number, title="Add two widgets", by="wendy")
    (renamed,) = await gh.list_issue_events(number)
    assert (renamed.event, renamed.rename_from) == ("renamed", "Add a widget")
    await gh.aclose()
