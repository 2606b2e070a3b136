"""Reactions through the facade: how the agents acknowledge a command without a comment."""

from __future__ import annotations

from agent_loop_testing import GitHubEmulator, emulator_client


async def test_react_to_a_comment_and_list_the_reactions() -> None:
    emulator = GitHubEmulator()
    emulator.add_user("alice", permission="write")
    number = emulator.add_issue("Fix it", author="alice")
    comment = emulator.add_comment(number, "/agent-loop build", author="alice")
    async with emulator_client(emulator) as gh:
        first = await gh.add_reaction(comment, "rocket")
        again = await gh.add_reaction(comment, "rocket")
        listed = await gh.list_reactions(comment)
    assert first.id == again.id
    assert (first.content, first.user.login) == ("rocket", emulator.bot)
    assert [(r.user.login, r.content) for r in listed] == [(emulator.bot, "rocket")]
    assert emulator.reactions(comment) == [(emulator.bot, "rocket")]
    assert [r.status for r in emulator.requests if "reactions" in r.path] == [201, 200, 200]
