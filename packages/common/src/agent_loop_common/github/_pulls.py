"""Pull requests, their files, diff, reviews, review comments, checks and statuses."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, cast

from githubkit.utils import UNSET

from agent_loop_common.github import _convert as conv
from agent_loop_common.github._base import translated
from agent_loop_common.github._errors import NotFound, describe
from agent_loop_common.github._graphql import GraphQLBase
from agent_loop_common.github._issues import raw_list
from agent_loop_common.github._models import (
    CheckRun,
    CommitStatus,
    PullFile,
    PullHistory,
    PullLinks,
    PullRequest,
    Review,
    ReviewComment,
)

PULL_HISTORY = """
query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100) { totalCount nodes { isResolved } }
      commits(first: 1) { nodes { commit { oid } } }
      mergeCommit { oid }
    }
  }
}
"""
"""Review threads (REST cannot tell a resolved one), the first commit and the merge
commit of a pull request, in one request."""


PULL_LINKS = """
query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      mergeCommit { oid }
      closingIssuesReferences(first: 50) {
        nodes { number repository { nameWithOwner } }
      }
    }
  }
}
"""
"""A pull request's merge commit and the issues it closes, in one request."""


class PullOps(GraphQLBase):
    """Operations on pull requests and on the checks of a commit."""

    async def list_pulls(
        self,
        *,
        state: Literal["open", "closed", "all"] = "open",
        head: str | None = None,
        base: str | None = None,
    ) -> list[PullRequest]:
        """All matching pull requests, every page.

        `head` is a branch name (`agent/issue-7`) or `owner:branch`; GitHub needs the
        owner, so a bare name is qualified with this repository's owner.
        """
        if head is not None and ":" not in head:
            head = f"{self._owner}:{head}"
        gh = await self._gh()
        paginator = gh.rest.paginate(
            gh.rest.pulls.async_list,
            owner=self._owner,
            repo=self._name,
            state=state,
            head=UNSET if head is None else head,
            base=UNSET if base is None else base,
            per_page=self._per_page,
        )
        return [conv.pull(p) for p in await self._all(paginator)]

    async def merged_pulls(self, *, since: datetime | None = None) -> list[PullRequest]:
        """Merged pull requests, most recently updated first, every page; with `since`,
        only those merged at or after it, and the listing stops at the first one last
        updated before it (a merge updates a pull request, so nothing older follows),
        once the listing has shown that it is newest first: a GitHub-like server that
        ignores `sort` is read to the end rather than cut short.
        """
        gh = await self._gh()
        paginator = gh.rest.paginate(
            gh.rest.pulls.async_list,
            owner=self._owner,
            repo=self._name,
            state="closed",
            sort="updated",
            direction="desc",
            per_page=self._per_page,
        )
        merged: list[PullRequest] = []
        previous: datetime | None = None
        sorted_so_far = True  # newest first, as asked, in every pair seen so far
        with translated():
            async for item in paginator:
                found = conv.pull(item)
                if previous is not None and found.updated_at > previous:
                    sorted_so_far = False
                old = since is not None and found.updated_at < since
                if old and sorted_so_far and previous is not None:
                    break
                previous = found.updated_at
                if found.merged_at is not None and (since is None or found.merged_at >= since):
                    merged.append(found)
        return merged

    async def get_pull(self, n: int) -> PullRequest:
        """One pull request (with an authoritative `merged`)."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.pulls.async_get(self._owner, self._name, n)
        return conv.pull(resp.parsed_data)

    async def create_pull(
        self, *, title: str, body: str, head: str, base: str, draft: bool = False
    ) -> PullRequest:
        """Open a pull request from `head` into `base` (not retried when ambiguous)."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.pulls.async_create(
                self._owner, self._name, title=title, body=body, head=head, base=base, draft=draft
            )
        return conv.pull(resp.parsed_data)

    async def update_pull(
        self,
        n: int,
        *,
        title: str | None = None,
        body: str | None = None,
        state: Literal["open", "closed"] | None = None,
    ) -> PullRequest:
        """Change the given fields of a pull request."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.pulls.async_update(
                self._owner,
                self._name,
                n,
                title=UNSET if title is None else title,
                body=UNSET if body is None else body,
                state=UNSET if state is None else state,
            )
        return conv.pull(resp.parsed_data)

    async def list_pull_files(self, n: int) -> list[PullFile]:
        """Every file the pull request changes (GitHub caps this listing at 3,000)."""
        gh = await self._gh()
        paginator = gh.rest.paginate(
            gh.rest.pulls.async_list_files,
            # The raw JSON, parsed leniently (`conv.pull_file`): githubkit's model needs
            # urls and shas this facade never reads.
            map_func=raw_list,
            owner=self._owner,
            repo=self._name,
            pull_number=n,
            per_page=self._per_page,
        )
        return [conv.pull_file(f) for f in await self._all(paginator)]

    async def get_pull_diff(self, n: int) -> str:
        """The pull request as one unified diff (`application/vnd.github.diff`)."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.pulls.async_get(
                self._owner, self._name, n, headers={"Accept": "application/vnd.github.diff"}
            )
        return resp.raw_response.text

    async def list_reviews(self, n: int) -> list[Review]:
        """Every review of the pull request, oldest first."""
        gh = await self._gh()
        paginator = gh.rest.paginate(
            gh.rest.pulls.async_list_reviews,
            owner=self._owner,
            repo=self._name,
            pull_number=n,
            per_page=self._per_page,
        )
        return [conv.review(r) for r in await self._all(paginator)]

    async def list_review_comments(self, n: int) -> list[ReviewComment]:
        """Every inline review comment of the pull request, replies included."""
        gh = await self._gh()
        paginator = gh.rest.paginate(
            gh.rest.pulls.async_list_review_comments,
            owner=self._owner,
            repo=self._name,
            pull_number=n,
            per_page=self._per_page,
        )
        return [conv.review_comment(c) for c in await self._all(paginator)]

    async def reply_to_review_comment(self, n: int, comment_id: int, body: str) -> ReviewComment:
        """Answer in the thread of a top-level review comment (not retried when ambiguous)."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.pulls.async_create_reply_for_review_comment(
                self._owner, self._name, n, comment_id, body=body
            )
        return conv.review_comment(resp.parsed_data)

    async def pull_history(self, n: int) -> PullHistory:
        """PR `n`'s review threads, first commit and merge commit (one GraphQL request).

        Raises:
            NotFound: there is no pull request `n`.
        """
        data = await self._graphql(
            PULL_HISTORY, {"owner": self._owner, "name": self._name, "number": n}
        )
        repository = cast("dict[str, Any] | None", data.get("repository")) or {}
        pull = cast("dict[str, Any] | None", repository.get("pullRequest"))
        if pull is None:
            said = f"Could not resolve to a PullRequest with the number of {n}."
            message = describe(NotFound, method="POST", url="graphql", status=None, said=said)
            raise NotFound(message, method="POST", url="graphql", github_message=said)
        threads = cast("dict[str, Any]", pull.get("reviewThreads") or {})
        nodes = cast("list[dict[str, Any]]", threads.get("nodes") or [])
        listing = cast("dict[str, Any]", pull.get("commits") or {})
        commits = cast("list[dict[str, Any]]", listing.get("nodes") or [])
        first = cast("dict[str, Any]", commits[0].get("commit") or {}) if commits else {}
        merge = cast("dict[str, Any]", pull.get("mergeCommit") or {})
        return PullHistory(
            threads=int(threads.get("totalCount") or len(nodes)),
            unresolved_threads=sum(1 for t in nodes if t.get("isResolved") is False),
            first_commit_sha=str(first.get("oid") or ""),
            merge_commit_sha=str(merge.get("oid") or ""),
        )

    async def pull_links(self, n: int) -> PullLinks:
        """PR `n`'s merge commit and the issues of this repository it closes (one GraphQL
        request; REST's pull request has neither the issues nor, in githubkit's schema,
        `merge_commit_sha`). Issues of other repositories are left out.

        Raises:
            NotFound: there is no pull request `n`.
        """
        data = await self._graphql(
            PULL_LINKS, {"owner": self._owner, "name": self._name, "number": n}
        )
        repository = cast("dict[str, Any] | None", data.get("repository")) or {}
        pull = cast("dict[str, Any] | None", repository.get("pullRequest"))
        if pull is None:
            said = f"Could not resolve to a PullRequest with the number of {n}."
            message = describe(NotFound, method="POST", url="graphql", status=None, said=said)
            raise NotFound(message, method="POST", url="graphql", github_message=said)
        merge = cast("dict[str, Any]", pull.get("mergeCommit") or {})
        closing = cast("dict[str, Any]", pull.get("closingIssuesReferences") or {})
        here = f"{self._owner}/{self._name}".casefold()
        numbers: list[int] = []
        for node in cast("list[dict[str, Any]]", closing.get("nodes") or []):
            repo = cast("dict[str, Any]", node.get("repository") or {})
            name = str(repo.get("nameWithOwner") or "")
            if name.casefold() == here and isinstance(node.get("number"), int):
                numbers.append(int(node["number"]))
        return PullLinks(
            merge_commit_sha=str(merge.get("oid") or ""),
            closing_issues=tuple(dict.fromkeys(numbers)),
        )

    async def list_check_runs(self, ref: str) -> list[CheckRun]:
        """The latest check run per name on a commit (SHA, branch or tag), every page."""
        gh = await self._gh()
        paginator = gh.rest.paginate(
            gh.rest.checks.async_list_for_ref,
            map_func=lambda r: r.parsed_data.check_runs,
            owner=self._owner,
            repo=self._name,
            ref=ref,
            per_page=self._per_page,
        )
        return [conv.check_run(c) for c in await self._all(paginator)]

    async def list_statuses(self, ref: str) -> list[CommitStatus]:
        """The combined status' latest state per context of a commit, every page."""
        gh = await self._gh()
        paginator = gh.rest.paginate(
            gh.rest.repos.async_get_combined_status_for_ref,
            map_func=lambda r: r.parsed_data.statuses,
            owner=self._owner,
            repo=self._name,
            ref=ref,
            per_page=self._per_page,
        )
        return [conv.commit_status(s) for s in await self._all(paginator)]
