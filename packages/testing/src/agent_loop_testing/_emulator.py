"""`GitHubEmulator`: a stateful, faithful stand-in for one GitHub repository.

Tests and the offline demo talk to it through githubkit exactly as they would talk to
GitHub: in process with `transport()` (ASGI, no sockets) or over real HTTP on loopback
with `serve()`. The seeding helpers stand in for the humans and CI around the agents
(people filing issues, labelling, reviewing, pushing; CI reporting checks); the
inspection helpers let a test look at the result without going through the API.

```python
emulator = GitHubEmulator()
emulator.seed_files({"README.md": "hello\\n"})
number = emulator.add_issue("Fix the widget", labels=["agent"])
gh = GitHub(TokenAuthStrategy(emulator.bot_token), base_url="http://emulator",
            async_transport=emulator.transport())
emulator.add_webhook("http://127.0.0.1:8080/webhook", "s3cret", events=["issues"])
```

With a webhook registered, each state change GitHub would announce is delivered to it,
signed, from a background thread (`deliveries`, `wait_for_deliveries`, `redeliver`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

import httpx

from agent_loop_testing import _emulator_ops_issues as issues
from agent_loop_testing import _emulator_ops_pulls as pulls
from agent_loop_testing._emulator_app import EmulatorApp
from agent_loop_testing._emulator_auth import RateLimiter
from agent_loop_testing._emulator_faults import (
    Fault,
    FaultBook,
    TimeoutTransport,
)
from agent_loop_testing._emulator_git import MODE_EXEC, MODE_FILE, TreeWrite
from agent_loop_testing._emulator_history import History, HistoryStep, seed_history
from agent_loop_testing._emulator_inspect import EmulatorInspection
from agent_loop_testing._emulator_server import serve_app
from agent_loop_testing._emulator_signing import armored, key_id
from agent_loop_testing._emulator_state import PERMISSIONS, AppRec, State, UserRec
from agent_loop_testing._emulator_webhooks import Delivery, WebhookSender

__all__ = ["GitHubEmulator"]

_START = datetime(2026, 1, 1, tzinfo=UTC)


def _real_time() -> datetime:
    return datetime.now(UTC)


class GitHubEmulator(EmulatorInspection):
    """One emulated repository with its users, issues, PRs, checks and git objects.

    Every write moves the emulated clock one second from `start`, and ids come from one
    counter, so runs are reproducible. The owner (admin) and the agents' bot identity
    (`agent-loop[bot]`, type Bot, write) exist from the start.

    For a person trying the agents out (`agent-loop emulator serve`), `clock="real"`
    stamps each write with the real time (from now, whole seconds) and
    `random_tokens=True` gives every user a random token, different at every start
    (a predictable owner's token would let any web page the person opens act as them).
    """

    def __init__(
        self,
        owner: str = "acme",
        name: str = "widgets",
        *,
        default_branch: str = "main",
        page_size_default: int = 30,
        start: datetime = _START,
        rate_limit: int = 5000,
        bot_login: str = "agent-loop[bot]",
        rate_limiter: RateLimiter | None = None,
        clock: Literal["emulated", "real"] = "emulated",
        random_tokens: bool = False,
    ) -> None:
        if clock == "real":
            start = datetime.now(UTC).replace(microsecond=0)
        st = State(owner, name, default_branch, page_size_default, start, created_at=start)
        if clock == "real":
            st.clock = _real_time
        st.random_tokens = random_tokens
        st.repo_id = st.new_id()
        self._st = st
        self._faults = FaultBook()
        # GitHub's primary limit is per identity: a `GitHubHost` shares one limiter.
        self._limiter = rate_limiter if rate_limiter is not None else RateLimiter(rate_limit)
        self._app = EmulatorApp(st, self._faults, self._limiter)
        self._hooks = WebhookSender()
        self.owner_token = self.add_user(owner, permission="admin")
        self.bot_login = bot_login
        self.bot_token = self.add_user(bot_login, permission="write", type="Bot")

    # ------------------------------------------------------------------ identity
    @property
    def full_name(self) -> str:
        return self._st.full_name

    @property
    def owner(self) -> str:
        return self._st.owner

    @property
    def private(self) -> bool:
        """Whether GitHub reports the repository as private (public by default)."""
        return self._st.private

    @private.setter
    def private(self, value: bool) -> None:
        with self._st.lock:
            self._st.private = value

    @property
    def name(self) -> str:
        return self._st.name

    @property
    def default_branch(self) -> str:
        return self._st.default_branch

    @property
    def bot(self) -> str:
        """The agents' login (`agent-loop[bot]` unless chosen otherwise)."""
        return self.bot_login

    def add_user(self, login: str, *, permission: str = "write", type: str = "User") -> str:
        """Create a user with a repository role; returns the user's token."""
        if permission not in PERMISSIONS:
            raise ValueError(f"permission must be one of {PERMISSIONS}, got {permission!r}")
        with self._st.lock:
            st = self._st
            user = UserRec(login, st.new_id(), type, permission, st.now)
            st.users[login] = user
            token = st.new_token("ghp_", f"emulator{user.id:06d}{login.replace('[bot]', 'bot')}")
            st.tokens[token] = login
            return token

    def set_permission(self, login: str, permission: str) -> None:
        if permission not in PERMISSIONS:
            raise ValueError(f"permission must be one of {PERMISSIONS}, got {permission!r}")
        with self._st.lock:
            self._st.user(login).permission = permission

    def set_rate_limit_remaining(self, login: str, remaining: int) -> None:
        """Leave `login` this many requests in its current rate-limit window.

        For tests of a nearly spent budget: the next answers report it in
        `x-ratelimit-remaining`, and GitHub's 403 follows once it reaches zero.
        """
        with self._st.lock:
            self._limiter.set_remaining(login, remaining)

    def reset_rate_limit(self, login: str) -> None:
        """Give `login` a fresh rate-limit window, as when the hour's reset time passes."""
        with self._st.lock:
            self._limiter.reset(login)

    def token_for(self, login: str) -> str:
        with self._st.lock:
            return next(t for t, who in self._st.tokens.items() if who == login)

    def register_app(self, app_id: int, public_key_pem: str, *, slug: str = "agent-loop") -> int:
        """Register a GitHub App key; returns the installation id on this repository.

        JWTs signed with the matching private key authenticate as the App, and the
        installation tokens it mints act as the user `{slug}[bot]`.
        """
        login = f"{slug}[bot]"
        if login not in self._st.users:
            self.add_user(login, permission="write", type="Bot")
        with self._st.lock:
            st = self._st
            installation_id = st.new_id()
            st.apps[app_id] = AppRec(app_id, slug, public_key_pem, installation_id, st.now)
            return installation_id

    # ------------------------------------------------------------------ git seeding
    def _commit_files(
        self,
        branch: str,
        files: Mapping[str, str | bytes | None],
        author: str,
        message: str,
        modes: Mapping[str, int] | None = None,
        *,
        committer: str | None = None,
        signed_by: str | None = None,
    ) -> str:
        with self._st.lock:
            st = self._st
            git = st.git
            parent = git.refs.get(f"refs/heads/{branch}") or git.refs.get(
                f"refs/heads/{st.default_branch}"
            )
            writes: list[TreeWrite] = []
            for path, content in files.items():
                if content is None:
                    writes.append(TreeWrite(path, MODE_FILE, None))
                    continue
                data = content.encode() if isinstance(content, str) else content
                writes.append(
                    TreeWrite(path, (modes or {}).get(path, MODE_FILE), git.add_blob(data))
                )
            tree = git.write_tree(git.commit_tree(parent) if parent else None, writes)
            st.tick()
            signature = None if signed_by is None else armored(key_id(st.user(signed_by)))
            sha = git.add_commit(
                tree=tree,
                parents=[parent] if parent else [],
                message=message,
                author=st.identity(author),
                committer=st.identity(committer or author),
                signature=signature,
            )
            git.refs[f"refs/heads/{branch}"] = sha
            return sha

    def seed_files(
        self, files: Mapping[str, str | bytes], *, message: str = "seed", branch: str | None = None
    ) -> str:
        """Commit files (by the owner) on a branch (default branch by default)."""
        return self._commit_files(branch or self._st.default_branch, files, self._st.owner, message)

    def seed_from_dir(
        self, path: str | os.PathLike[str], *, message: str = "seed", branch: str | None = None
    ) -> str:
        """Commit every file under a folder (`.git` skipped, exec bits kept)."""
        root = Path(path)
        files: dict[str, str | bytes | None] = {}
        modes: dict[str, int] = {}
        for file in sorted(root.rglob("*")):
            if file.is_file() and ".git" not in file.relative_to(root).parts:
                rel = file.relative_to(root).as_posix()
                files[rel] = file.read_bytes()
                if os.access(file, os.X_OK):
                    modes[rel] = MODE_EXEC
        return self._commit_files(
            branch or self._st.default_branch, files, self._st.owner, message, modes
        )

    def push(
        self,
        branch: str,
        files: Mapping[str, str | bytes | None],
        *,
        author: str,
        message: str,
        committer: str | None = None,
        signed_by: str | None = None,
    ) -> str:
        """A push: one commit on `branch` (created from the default branch if missing); a
        `None` content deletes the file. Returns the new commit sha.

        `author` and `committer` (default: the author) are the commit's fields, which
        whoever creates a commit writes freely: `author="maint"` is a commit that merely
        claims maint's email, as anyone with push access can make. `signed_by` signs it
        with that user's registered key; GitHub verifies it only when the committer is
        that user (`_emulator_signing`). Who pushed is recorded nowhere, as on GitHub.
        """
        return self._commit_files(
            branch, files, author, message, committer=committer, signed_by=signed_by
        )

    # ------------------------------------------------------------------ conversation
    def add_issue(
        self, title: str, body: str = "", *, author: str | None = None, labels: Iterable[str] = ()
    ) -> int:
        with self._st.lock:
            return issues.create_issue(
                self._st, title, body, author or self._st.owner, labels
            ).number

    def add_comment(self, number: int, body: str, *, author: str) -> int:
        with self._st.lock:
            return issues.create_comment(self._st, number, body, author).id

    def edit_issue(
        self, number: int, *, title: str | None = None, body: str | None = None, by: str
    ) -> None:
        """A person edits an issue or PR: a new body is an edit (editor and time), a new
        title a `renamed` event. No permission check: seeding acts as GitHub's UI would
        for someone allowed to."""
        with self._st.lock:
            st = self._st
            issues.edit_issue_text(st, issues.get_issue(st, number), by, title=title, body=body)

    def delete_issue_revision(self, number: int, revision: int, *, by: str) -> None:
        """A person deletes an earlier revision of an issue's or PR's body from its edit
        history (GitHub's "Delete revision from history"): its text is gone for good, its
        editor and time stay listed. `revision` counts from 0, the text as created; the
        current text is no revision to delete."""
        with self._st.lock:
            st = self._st
            issue = issues.get_issue(st, number)
            if not 0 <= revision < len(issue.edits) - 1:
                raise ValueError(
                    f"#{number} has no earlier revision {revision} "
                    f"({len(issue.edits)} revision(s), the last one current)"
                )
            st.user(by)
            issue.edits[revision] = replace(
                issue.edits[revision], body=None, deleted_at=st.tick(), deleted_by=by
            )

    def advance_clock(self, delta: timedelta) -> datetime:
        """Move the emulated clock forward (days pass between a merge and its revert);
        returns the new time."""
        if delta < timedelta(0):
            raise ValueError("the emulated clock only moves forward")
        with self._st.lock:
            self._st.now += delta
            return self._st.now

    @property
    def now(self) -> datetime:
        """The emulated clock (the time of the last write)."""
        return self._st.now

    @contextmanager
    def same_second(self) -> Generator[None]:
        """Writes made inside share one timestamp, as two writes within one second do on
        GitHub (its timestamps are whole seconds): a label and a scripted edit right
        after it then compare equal."""
        with self._st.lock:
            self._st.tick()
            self._st.frozen = True
        try:
            yield
        finally:
            with self._st.lock:
                self._st.frozen = False

    def delete_comment(self, comment_id: int) -> None:
        """A person deletes an issue comment (its reactions go with it)."""
        with self._st.lock:
            st = self._st
            issues.get_comment(st, comment_id)
            st.tick()
            del st.comments[comment_id]
            for key in [k for k, r in st.reactions.items() if r.comment == comment_id]:
                del st.reactions[key]

    def edit_comment(self, comment_id: int, body: str, *, by: str | None = None) -> None:
        """Edit an issue comment as `by` (default: its author)."""
        with self._st.lock:
            st = self._st
            editor = by or issues.get_comment(st, comment_id).author
            issues.edit_comment(st, comment_id, body, editor)

    def edit_review_comment(self, comment_id: int, body: str, *, by: str | None = None) -> None:
        """Edit a pull request review comment as `by` (default: its author)."""
        with self._st.lock:
            st = self._st
            editor = by or pulls.get_review_comment(st, comment_id).author
            pulls.edit_review_comment(st, comment_id, body, editor)

    def delete_branch(self, branch: str, *, by: str | None = None) -> None:
        """A person deletes a branch; PRs with it as head record it, open ones close."""
        with self._st.lock:
            st = self._st
            name = f"refs/heads/{branch}"
            if name not in st.git.refs:
                raise KeyError(f"no branch {branch!r}")
            st.tick()
            del st.git.refs[name]
            pulls.branch_deleted(st, branch, by or st.owner)

    def assign_issue(self, number: int, login: str, *, actor: str | None = None) -> None:
        """Assign `login` to an issue, as `actor` (the owner by default)."""
        with self._st.lock:
            issues.assign(self._st, number, login, actor or self._st.owner)

    def label_issue(self, number: int, label: str, *, actor: str) -> None:
        """Apply a label as `actor` (records the `labeled` event with that actor)."""
        with self._st.lock:
            issues.add_labels(self._st, number, [label], actor)

    def unlabel_issue(self, number: int, label: str, *, actor: str) -> None:
        with self._st.lock:
            issues.remove_label(self._st, number, label, actor)

    def close_issue(self, number: int, *, by: str | None = None) -> None:
        with self._st.lock:
            st = self._st
            issues.set_state(st, issues.get_issue(st, number), "closed", by or st.owner)

    def open_pull(
        self,
        head: str,
        *,
        title: str,
        body: str = "",
        base: str | None = None,
        author: str | None = None,
        draft: bool = False,
    ) -> int:
        """Open a PR as a person would (same 422 rules as the API)."""
        with self._st.lock:
            st = self._st
            return pulls.open_pull(
                st,
                title=title,
                body=body,
                head=head,
                base=base or st.default_branch,
                author=author or st.owner,
                draft=draft,
            ).number

    def add_review(
        self,
        pr: int,
        *,
        author: str,
        state: str = "COMMENTED",
        body: str = "",
        comments: Sequence[tuple[str, int, str]] = (),
    ) -> int:
        """A submitted review; `comments` are `(path, line, body)` on the PR diff."""
        with self._st.lock:
            return pulls.add_review(
                self._st, pr, author=author, state=state, body=body, comments=list(comments)
            ).id

    def add_review_comment_reply(self, pr: int, comment_id: int, body: str, *, author: str) -> int:
        with self._st.lock:
            return pulls.add_review_comment(
                self._st, pr, author=author, body=body, in_reply_to=comment_id
            ).id

    def resolve_review_thread(self, comment_id: int, *, by: str) -> None:
        """Mark the thread that review comment `comment_id` starts as resolved by `by`."""
        with self._st.lock:
            comment = self._st.review_comments[comment_id]
            if comment.in_reply_to is not None:
                raise ValueError(f"review comment {comment_id} replies to a thread")
            self._st.user(by)
            comment.resolved_by = by

    def set_check_run(
        self,
        sha: str,
        name: str,
        *,
        status: str = "completed",
        conclusion: str | None = "failure",
        title: str = "",
        summary: str = "",
        text: str = "",
    ) -> int:
        """CI reports a check run on a commit (a new run; the latest per name counts)."""
        with self._st.lock:
            return pulls.set_check_run(
                self._st,
                sha,
                name,
                status=status,
                conclusion=conclusion,
                title=title,
                summary=summary,
                text=text,
            ).id

    def set_status(self, sha: str, context: str, state: str, description: str = "") -> int:
        with self._st.lock:
            return pulls.set_status(
                self._st, sha, context, state, description or None, None, self._st.owner
            ).id

    def merge_pull(self, number: int, *, by: str | None = None, method: str = "merge") -> str:
        """Merge on the server (`merge`, `squash` or `rebase`) as `by`; closes the issues the PR
        closes (`closingIssuesReferences`) when its base is the default branch. Returns
        the merge commit."""
        with self._st.lock:
            return pulls.merge_pull(self._st, number, by or self._st.owner, method=method)

    def link_issue(self, pull: int, issue: int) -> None:
        """Link an issue to a pull request by hand (GitHub's "Development" sidebar): it is
        then among the PR's `closingIssuesReferences`, and closed when the PR merges."""
        with self._st.lock:
            pulls.link_issue(self._st, pull, issue)

    def seed_history(self, steps: Sequence[HistoryStep]) -> History:
        """Play a repository's history: issues filed, pull requests opened and merged in
        order (see `HistoryIssue`, `HistoryPull`, `HistoryMerge`)."""
        return seed_history(self, steps)

    def close_pull(self, number: int, *, by: str | None = None) -> None:
        with self._st.lock:
            st = self._st
            issue, _ = pulls.get_pull(st, number)
            issues.set_state(st, issue, "closed", by or st.owner)

    # ------------------------------------------------------------------ webhooks
    def add_webhook(self, url: str, secret: str, *, events: Iterable[str] | None = None) -> int:
        """Deliver state changes to `url`, signed with `secret`; returns the hook id.

        Args:
            url: The receiver (a gateway's `/webhook`), reached over real HTTP.
            secret: The shared secret for `X-Hub-Signature-256`.
            events: Event names to send (`issues`, `issue_comment`, `pull_request`,
                `pull_request_review`, `pull_request_review_comment`, `check_run`,
                `status`); `None` sends every event.
        """
        with self._st.lock:
            hook = self._hooks.add(url, secret, events)
            self._st.hook_sink = self._hooks
            return hook.id

    def remove_webhook(self, hook_id: int) -> None:
        with self._st.lock:
            self._hooks.remove(hook_id)

    @property
    def deliveries(self) -> list[Delivery]:
        """Every delivery attempt so far, with the receiver's answer, in order."""
        return self._hooks.deliveries()

    def wait_for_deliveries(self, timeout: float = 10.0) -> list[Delivery]:
        """Wait until every queued delivery was answered; returns all deliveries."""
        return self._hooks.wait_idle(timeout)

    def redeliver(self, delivery_id: str) -> None:
        """Send a delivery again with the same id and body (GitHub's "Redeliver")."""
        with self._st.lock:
            self._hooks.redeliver(delivery_id)

    # ------------------------------------------------------------------ serving
    @property
    def app(self) -> object:
        """The ASGI app (Starlette), for embedding in another server."""
        return self._app.app

    def transport(self) -> httpx.AsyncBaseTransport:
        """An in-process transport for `httpx.AsyncClient` / githubkit `async_transport`."""
        inner = httpx.ASGITransport(app=self._app.app)
        return TimeoutTransport(inner, self._faults, self._app.log, self._st.lock)

    @contextmanager
    def serve(self, port: int = 0) -> Generator[str]:
        """Serve over HTTP on 127.0.0.1 (`port`, 0: an ephemeral one); yields the base URL.

        Requests must address the loopback port (`Host` of 127.0.0.1, localhost or
        [::1] with the port); any other host answers 421 (DNS rebinding)."""
        with serve_app(self._app.app, self._app.closing, port=port, check_host=True) as url:
            previous = self._hooks.base_url, self._hooks.web_url
            self._hooks.base_url = self._hooks.web_url = url
            try:
                yield url
            finally:
                self._hooks.base_url, self._hooks.web_url = previous

    def inject_fault(
        self,
        method: str,
        path_regex: str,
        *,
        status: int | None = 500,
        times: int = 1,
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
        timeout: bool = False,
        body: object = None,
        after: bool = False,
        before: Callable[[], None] | None = None,
        body_regex: str | None = None,
    ) -> Fault:
        """Make the next `times` matching requests fail (or stall); see `_emulator_faults`.

        With `after`, each request takes effect first and then answers the error. With
        `before` (and `status=None`), `before()` runs just before the request is handled:
        a change made on GitHub in the middle of a client's reads. With `body_regex`, only
        requests whose body holds it match (one GraphQL query, say).
        """
        fault = Fault(
            method.upper(),
            re.compile(path_regex),
            status,
            times,
            dict(headers or {}),
            delay,
            timeout,
            body,
            after,
            before,
            body_pattern=None if body_regex is None else re.compile(body_regex),
        )
        return self._faults.add(fault)

    def clear_faults(self) -> None:
        self._faults.clear()
