"""GitHub requests per facade operation, and per idle poll with and without ETags.

Runs the real `GitHub` facade against the in-process emulator (no network) and prints
Markdown tables: how many HTTP requests each operation sends (pages, token exchanges and
all), how many were 304s, and how much of the primary rate limit a poll consumes when
nothing changed. Run with `uv run --frozen python bench/github_requests.py`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from agent_loop_common.github import AppAuth, ETagCache, GitHub
from agent_loop_testing import GitHubEmulator, emulator_client

ISSUES = 120
COMMENTS = 75
PRS = 3


def seeded() -> tuple[GitHubEmulator, int, list[int]]:
    emu = GitHubEmulator()
    emu.add_user("alice", permission="maintain")
    emu.seed_files({f"src/mod{i}.py": f"X = {i}\n" for i in range(20)} | {"README.md": "hi\n"})
    for i in range(ISSUES):
        emu.add_issue(f"Issue {i}", author="acme", labels=["agent"] if i % 4 == 0 else ["other"])
    busy = emu.add_issue("Busy issue", author="alice", labels=["agent"])
    emu.label_issue(busy, "ready", actor="alice")
    for i in range(COMMENTS):
        emu.add_comment(busy, f"comment {i}", author="alice")
    pulls: list[int] = []
    for i in range(PRS):
        sha = emu.push(
            f"agent/issue-{i}", {f"src/mod{i}.py": "X = -1\n"}, author="acme", message="fix"
        )
        pulls.append(emu.open_pull(f"agent/issue-{i}", title=f"Fix {i}", author="acme"))
        emu.add_review(pulls[-1], author="alice", comments=[(f"src/mod{i}.py", 1, "why?")])
        emu.set_check_run(sha, "tests", conclusion="failure", text="boom")
        emu.set_status(sha, "ci", "failure")
    return emu, busy, pulls


class Meter:
    """Requests and rate-limit budget spent by each measured step."""

    def __init__(self, emu: GitHubEmulator, gh: GitHub) -> None:
        self.emu, self.gh = emu, gh
        self.rows: list[tuple[str, int, int, int]] = []

    async def __call__(self, label: str, step: Callable[[], Awaitable[Any]]) -> Any:
        stats, login = self.gh.stats, self.emu.bot
        before = (stats.total, stats.not_modified, self.emu.rate_limit_remaining(login))
        result = await step()
        spent = before[2] - self.emu.rate_limit_remaining(login)
        self.rows.append((label, stats.total - before[0], stats.not_modified - before[1], spent))
        return result


def table(title: str, rows: list[tuple[str, int, int, int]]) -> str:
    lines = [
        f"### {title}",
        "",
        "| operation | requests | 304s | rate limit used |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {label} | {n} | {nm} | {used} |" for label, n, nm, used in rows]
    return "\n".join(lines)


async def operations() -> str:
    emu, busy, pulls = seeded()
    gh = emulator_client(emu)
    m = Meter(emu, gh)
    pr = pulls[0]
    main = emu.ref_sha("heads/main") or ""
    emu.push("agent/new", {"new.txt": "n\n"}, author="acme", message="new")
    await m("viewer()", gh.viewer)
    await m("repository()", gh.repository)
    await m(f"list_issues() ({ISSUES + 1} open + {PRS} PRs)", gh.list_issues)
    await m("list_issues(labels=[agent])", lambda: gh.list_issues(labels=["agent"]))
    await m("get_issue()", lambda: gh.get_issue(busy))
    new = await m("create_issue()", lambda: gh.create_issue("t", "b", ["agent"]))
    await m("update_issue()", lambda: gh.update_issue(new.number, title="t2"))
    await m("close_issue(comment=...)", lambda: gh.close_issue(new.number, "done"))
    await m(f"list_issue_comments() ({COMMENTS})", lambda: gh.list_issue_comments(busy))
    c = await m("create_issue_comment()", lambda: gh.create_issue_comment(busy, "claim"))
    await m("update_issue_comment()", lambda: gh.update_issue_comment(c.id, "released"))
    await m("add_labels()", lambda: gh.add_labels(busy, ["x"]))
    await m("remove_label()", lambda: gh.remove_label(busy, "x"))
    await m("list_issue_events()", lambda: gh.list_issue_events(busy))
    await m("permission()", lambda: gh.permission("alice"))
    await m("list_pulls()", gh.list_pulls)
    await m("get_pull()", lambda: gh.get_pull(pr))
    await m("update_pull()", lambda: gh.update_pull(pr, body="more"))
    await m("list_pull_files()", lambda: gh.list_pull_files(pr))
    await m("get_pull_diff()", lambda: gh.get_pull_diff(pr))
    await m("list_reviews()", lambda: gh.list_reviews(pr))
    threads = await m("list_review_comments()", lambda: gh.list_review_comments(pr))
    await m(
        "reply_to_review_comment()", lambda: gh.reply_to_review_comment(pr, threads[0].id, "ok")
    )
    head = (await gh.get_pull(pr)).head_sha
    await m("list_check_runs()", lambda: gh.list_check_runs(head))
    await m("list_statuses()", lambda: gh.list_statuses(head))
    await m("get_ref()", lambda: gh.get_ref("heads/main"))
    await m("create_ref()", lambda: gh.create_ref("refs/heads/claim/1", main))
    commit = await m("get_commit()", lambda: gh.get_commit(main))
    await m("get_tree(recursive)", lambda: gh.get_tree(commit.tree_sha))
    await m("get_file()", lambda: gh.get_file("README.md", "main"))
    await m("download_archive()", lambda: gh.download_archive("main"))
    files: dict[str, str | bytes | None] = {
        "src/mod1.py": "X = 100\n",
        "src/new.py": "Y = 1\n",
        "docs/a.md": "# A\n",
        "logo.png": b"\x89PNG",
        "src/mod2.py": None,
    }
    sha = await m(
        "commit_files() (3 text, 1 binary, 1 delete)",
        lambda: gh.commit_files(parent_sha=main, message="m", files=files),
    )
    await m(
        "create_commit()",
        lambda: gh.create_commit(message="e", tree_sha=commit.tree_sha, parents=[main]),
    )
    await m("update_ref() (fast-forward)", lambda: gh.update_ref("heads/claim/1", sha))
    await m("delete_ref()", lambda: gh.delete_ref("heads/claim/1"))
    await m(
        "create_pull()",
        lambda: gh.create_pull(title="n", body="", head="agent/new", base="main"),
    )

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    emu.register_app(1, public, slug="agent-loop")  # its bot is the default agent identity
    app = emulator_client(emu, auth=AppAuth(1, private))
    ma = Meter(emu, app)
    await ma("App: first call (installation lookup + token + call)", app.repository)
    await ma("App: next call (token cached)", app.repository)
    return table("Requests per facade operation (per_page=100)", m.rows + ma.rows)


async def builder_poll(gh: GitHub) -> None:
    """What a builder run reads before deciding there is nothing to do."""
    for issue in await gh.list_issues(labels=["agent"]):
        await gh.list_issue_comments(issue.number)
        await gh.list_issue_events(issue.number)


async def reviewer_poll(gh: GitHub) -> None:
    """What a reviewer run reads about each open agent PR."""
    for pr in await gh.list_pulls():
        await gh.list_issue_comments(pr.number)
        await gh.list_reviews(pr.number)
        await gh.list_review_comments(pr.number)
        await gh.list_check_runs(pr.head_sha)
        await gh.list_statuses(pr.head_sha)


async def poll_rows(
    emu: GitHubEmulator, busy: int, name: str, poll: Callable[[GitHub], Awaitable[None]]
) -> list[tuple[str, int, int, int]]:
    run1 = emulator_client(emu)
    m1 = Meter(emu, run1)
    await m1(f"{name}: first poll (empty cache)", lambda: poll(run1))
    await m1(f"{name}: unchanged poll, same run", lambda: poll(run1))
    run2 = emulator_client(emu, etags=ETagCache.load(run1.etags.dump()))
    m2 = Meter(emu, run2)
    await m2(f"{name}: next run, cache loaded from memory", lambda: poll(run2))
    if name == "builder":
        emu.add_comment(busy, "a human replies", author="alice")
        await m2(f"{name}: after one new comment", lambda: poll(run2))
    nocache = emulator_client(emu, etags=ETagCache(max_entries=1, max_bytes=1))
    m3 = Meter(emu, nocache)
    await m3(f"{name}: unchanged poll without ETags", lambda: poll(nocache))
    size = len(json.dumps(run1.etags.dump()))
    print(f"<!-- {name}: ETag cache holds {len(run1.etags)} URLs, {size:,} bytes as JSON -->")
    return m1.rows + m2.rows + m3.rows


async def polls() -> str:
    emu, busy, _ = seeded()
    rows = await poll_rows(emu, busy, "builder", builder_poll)
    rows += await poll_rows(emu, busy, "reviewer", reviewer_poll)
    agent_issues = ISSUES // 4 + 1
    return table(
        f"Idle polls ({agent_issues} agent issues, one with {COMMENTS} comments; {PRS} open PRs)",
        rows,
    )


async def main() -> None:
    print(await operations())
    print()
    print(await polls())


if __name__ == "__main__":
    asyncio.run(main())
