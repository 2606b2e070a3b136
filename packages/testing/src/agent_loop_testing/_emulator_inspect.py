"""Read-only inspection of the emulator, for test assertions (mixed into `GitHubEmulator`).

A test checks outcomes here rather than through the REST API, so its assertions do not
add requests to the log or spend rate limit, and see state the API would not show
(such as refs outside `refs/heads`).
"""

from __future__ import annotations

from agent_loop_testing import _emulator_ops_issues as issues
from agent_loop_testing import _emulator_ops_pulls as pulls
from agent_loop_testing._emulator_app import EmulatorApp
from agent_loop_testing._emulator_auth import RateLimiter
from agent_loop_testing._emulator_faults import LoggedRequest
from agent_loop_testing._emulator_state import State
from agent_loop_testing._emulator_views import (
    CommitView,
    EmulatedComment,
    EmulatedIssue,
    EmulatedPull,
    comment_view,
    commit_view,
    issue_view,
    pull_view,
)

__all__ = ["EmulatorInspection"]


class EmulatorInspection:
    """Snapshots of issues, comments, PRs, refs, files, history and the request log."""

    _st: State
    _app: EmulatorApp
    _limiter: RateLimiter

    @property
    def requests(self) -> list[LoggedRequest]:
        """Every answered request so far: `(method, path, status)`, in order."""
        with self._st.lock:
            return list(self._app.log)

    def clear_requests(self) -> None:
        with self._st.lock:
            self._app.log.clear()

    def rate_limit_remaining(self, login: str) -> int:
        with self._st.lock:
            return self._limiter.remaining(login)

    def issue(self, number: int) -> EmulatedIssue:
        with self._st.lock:
            return issue_view(issues.get_issue(self._st, number))

    def issues(self) -> list[EmulatedIssue]:
        """Every issue (not pull requests), open or not, by number."""
        with self._st.lock:
            found = [i for i in self._st.issues.values() if i.pull is None]
            return [issue_view(i) for i in sorted(found, key=lambda i: i.number)]

    def comments(self, number: int) -> list[EmulatedComment]:
        with self._st.lock:
            found = [c for c in self._st.comments.values() if c.issue == number]
            return [comment_view(c) for c in sorted(found, key=lambda c: c.id)]

    def reactions(self, comment_id: int) -> list[tuple[str, str]]:
        """`(login, content)` of every reaction on an issue comment, oldest first."""
        with self._st.lock:
            found = [r for r in self._st.reactions.values() if r.comment == comment_id]
            return [(r.author, r.content) for r in sorted(found, key=lambda r: r.id)]

    def pull(self, number: int) -> EmulatedPull:
        with self._st.lock:
            issue, _ = pulls.get_pull(self._st, number)
            return pull_view(self._st, issue)

    def pulls(self) -> list[EmulatedPull]:
        """Every pull request, open or not, by number."""
        with self._st.lock:
            found = [i for i in self._st.issues.values() if i.pull is not None]
            return [pull_view(self._st, i) for i in sorted(found, key=lambda i: i.number)]

    def ref_sha(self, ref: str) -> str | None:
        """The sha of `heads/main` (or `refs/heads/main`), None when the ref is missing."""
        name = ref if ref.startswith("refs/") else f"refs/{ref}"
        with self._st.lock:
            return self._st.git.refs.get(name)

    def refs(self, prefix: str = "refs/") -> dict[str, str]:
        with self._st.lock:
            return {n: s for n, s in sorted(self._st.git.refs.items()) if n.startswith(prefix)}

    def file_at(self, ref: str, path: str) -> bytes | None:
        """File content at a branch, tag, `heads/x` ref or sha; None when absent."""
        with self._st.lock:
            git = self._st.git
            sha = git.resolve(ref)
            item = git.lookup(git.commit_tree(sha), path) if sha else None
            blob = git.blob(item.sha) if item else None
            return blob.data if blob is not None else None

    def log(self, commit_or_ref: str) -> list[CommitView]:
        """First-parent history, newest first."""
        with self._st.lock:
            sha = self._st.git.resolve(commit_or_ref)
            if sha is None:
                raise KeyError(f"no commit or ref {commit_or_ref!r}")
            return [commit_view(self._st, s) for s in self._st.git.first_parent_log(sha)]
