"""Read-only tools over one PR at its reviewed head, shared by the reviewer and its verifier.

Each tool is a plain async closure (the Agent builds the schema from its signature and
docstring). Everything is read at the head commit the pass reviews, never at the moving
branch, so the agent, the verifier and the final compare-and-swap agree on one commit.
Results are bounded and fenced as untrusted data: file contents and diffs were written
by others and may contain text aimed at the model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agent_loop_common.agents import fence_untrusted
from agent_loop_common.github import GitHub, PullRequest
from agent_loop_reviewer._feedback import FeedbackItem
from agent_loop_reviewer._prompts import describe_item

__all__ = ["HeadFiles", "read_tools"]

_FILE_CHARS = 60_000
_DIFF_CHARS = 80_000
_LIST_LIMIT = 2_000


class HeadFiles:
    """Cached reads of the repository at one commit (tree once, files on demand)."""

    def __init__(self, github: GitHub, sha: str) -> None:
        self._github = github
        self.sha = sha
        self._paths: frozenset[str] | None = None

    async def paths(self) -> frozenset[str]:
        """Every file path at the commit (one tree request per run)."""
        if self._paths is None:
            tree = await self._github.get_tree(self.sha)
            self._paths = frozenset(e.path for e in tree if e.type == "blob")
        return self._paths

    async def exists(self, path: str) -> bool:
        """Whether `path` is a file at the commit (for `delete_file`)."""
        return path in await self.paths()

    async def text(self, path: str) -> str | None:
        """The file's text (undecodable bytes replaced), or `None` when it is missing."""
        data = await self._github.get_file(path, self.sha)
        return None if data is None else data.decode("utf-8", errors="replace")


def read_tools(
    github: GitHub,
    pull: PullRequest,
    head: HeadFiles,
    feedback: Sequence[FeedbackItem],
) -> list[Callable[..., Awaitable[Any]]]:
    """The read-only tools: PR, diff, files at head, file list, all feedback with ids."""
    diff_cache: list[str] = []

    async def get_pull_request() -> str:
        """Show the pull request: number, title, branches, head commit, description and changed files."""
        files = await github.list_pull_files(pull.number)
        listing = "\n".join(
            f"- {f.filename} ({f.status}, +{f.additions} -{f.deletions})" for f in files
        )
        return (
            f"Pull request #{pull.number}: {pull.title}\n"
            f"{pull.head_ref} -> {pull.base_ref}, head commit {pull.head_sha}\n"
            f"Changed files:\n{listing or '(none)'}\n\n" + fence_untrusted("description", pull.body)
        )

    async def get_diff() -> str:
        """The pull request's unified diff against its base branch."""
        if not diff_cache:
            diff_cache.append(await github.get_pull_diff(pull.number))
        return fence_untrusted(f"diff of PR #{pull.number}", diff_cache[0], _DIFF_CHARS)

    async def read_file(path: str) -> str:
        """Read one file of the repository at the pull request's head commit. `path` is relative to the repository root."""
        content = await head.text(path.strip().lstrip("/"))
        if content is None:
            return f"There is no file {path!r} at the head commit {head.sha[:7]}."
        return fence_untrusted(path, content, _FILE_CHARS)

    async def list_files(prefix: str = "") -> str:
        """List the repository's files at the head commit, optionally only those under a folder prefix such as 'src/'."""
        clean = prefix.strip().lstrip("/")
        paths = sorted(p for p in await head.paths() if p.startswith(clean))
        shown = paths[:_LIST_LIMIT]
        more = f"\n... and {len(paths) - len(shown)} more" if len(paths) > len(shown) else ""
        return "\n".join(shown) + more if shown else f"No files under {clean!r}."

    async def list_feedback() -> str:
        """Every feedback item on this pull request with its id: people's comments, reviews and inline comments, and failing checks."""
        if not feedback:
            return "No feedback from people and no failing checks."
        return "\n\n".join(
            f"{describe_item(item)}\n{fence_untrusted(f'item {item.id}', item.body, 6_000)}"
            for item in feedback
        )

    return [get_pull_request, get_diff, read_file, list_files, list_feedback]
