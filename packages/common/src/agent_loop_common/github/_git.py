"""Git data: refs (the atomic claim step), commits, trees, files, archives, and
multi-file commits built without a clone."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, cast
from urllib.parse import quote

from githubkit.utils import UNSET

from agent_loop_common.github import _convert as conv
from agent_loop_common.github._base import retype, translated
from agent_loop_common.github._errors import (
    GitHubUnavailable,
    NotFastForward,
    NotFound,
    RefExists,
    Unprocessable,
    describe,
)
from agent_loop_common.github._graphql import GraphQLBase
from agent_loop_common.github._models import (
    BranchHead,
    CommitProvenance,
    GitCommit,
    GitTree,
    NewBranch,
    PathCommit,
    TreeEntry,
)
from agent_loop_common.github._retry import attempt_timeout

_PROVENANCE = """
... on Commit {
  oid
  associatedPullRequests(first: 10) {
    nodes { number merged baseRefName mergedBy { __typename login } }
  }
  signature { isValid state wasSignedByGitHub signer { login } }
}
"""
"""Per commit: the pull requests it belongs to, with who merged them, and its signature
as GitHub verified it (REST's `verification` does not name the signer)."""
_PROVENANCE_BATCH = 25

_KEEP_MODES = frozenset({"100755"})  # an agent editing a script must not drop its x bit


def _short(ref: str) -> str:
    """`refs/heads/x` or `heads/x` -> `heads/x` (the form the ref endpoints take)."""
    return ref.removeprefix("refs/")


def _path(path: str) -> str:
    """Percent-encode a path segment list so `#`, `?` or spaces stay in the path."""
    return quote(path, safe="/")


def _check_tree_shape(
    files: Mapping[str, object], blobs: Mapping[str, str], directories: set[str]
) -> None:
    """Refuse a change that turns a directory into a file or a kept file into a directory.

    GitHub's tree API applies a blob entry at a directory's path by replacing the whole
    directory, so this is the last check that a change cannot delete a tree (every
    workflow under `.github/workflows`) by naming it as one file.
    """
    for path, content in files.items():
        if path in directories:
            raise ValueError(
                f"commit_files: {path!r} is a directory at the parent commit; a file there "
                "would replace, and a deletion remove, everything in it"
            )
        if content is None:
            continue
        parts = path.split("/")
        for i in range(1, len(parts)):
            above = "/".join(parts[:i])
            if above in blobs and files.get(above, "") is not None:
                raise ValueError(
                    f"commit_files: {above!r} is a file at the parent commit, so {path!r} "
                    "cannot be created inside it unless the change deletes it"
                )


COMMIT_ON_BRANCH = """
mutation($input: CreateCommitOnBranchInput!) {
  createCommitOnBranch(input: $input) { commit { oid } }
}
"""
"""GitHub's one-request commit: the files, the message and the head it must build on."""

BRANCH_WITH_COMMIT = """
mutation($ref: CreateRefInput!, $commit: CreateCommitOnBranchInput!) {
  createRef(input: $ref) { ref { name } }
  createCommitOnBranch(input: $commit) { commit { oid } }
}
"""
"""A new branch and its first commit in one request: two mutations, run in order (the
commit goes on the branch the first one made)."""

DEFAULT_BRANCH_HEAD = """
query($owner: String!, $name: String!) {
  repository(owner: $owner, name: $name) {
    id
    isPrivate
    diskUsage
    defaultBranchRef { name target { oid ... on Commit { tree { oid } } } }
  }
}
"""
"""The default branch's name and head commit (and the repository's visibility), which
REST answers in two requests."""

_PLAIN_MODE = "100644"


def _check_paths(files: Mapping[str, object]) -> None:
    for path in files:
        if not path or path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"commit_files needs repository-relative paths, got {path!r}")


def _moved(branch: str, expected: str, found: str | None) -> NotFastForward:
    said = f"{branch} points at {found or 'nothing'}, not {expected}"
    message = describe(NotFastForward, method="POST", url="graphql", status=None, said=said)
    return NotFastForward(message, method="POST", url="graphql", github_message=said)


class GitOps(GraphQLBase):
    """Low-level git operations through GitHub's git data API."""

    async def default_branch(self) -> BranchHead:
        """The default branch, its head commit and whether the repository is private, in
        one GraphQL query (REST needs the repository, then the branch's ref).

        Raises:
            NotFound: the repository does not exist, or has no branch yet.
        """
        data = await self._graphql(DEFAULT_BRANCH_HEAD, {"owner": self._owner, "name": self._name})
        repository = cast("dict[str, Any] | None", data.get("repository")) or {}
        ref = cast("dict[str, Any] | None", repository.get("defaultBranchRef"))
        target = cast("dict[str, Any] | None", ref.get("target")) if ref else None
        if ref is None or target is None:
            said = f"{self.full_name} has no default branch (an empty repository)"
            message = describe(NotFound, method="POST", url="graphql", status=None, said=said)
            raise NotFound(message, method="POST", url="graphql", github_message=said)
        return BranchHead(
            name=str(ref["name"]),
            sha=str(target["oid"]),
            private=repository.get("isPrivate") is True,
            tree_sha=str(cast("dict[str, Any]", target.get("tree") or {}).get("oid") or ""),
            disk_usage_kb=usage if isinstance(usage := repository.get("diskUsage"), int) else None,
            repository_id=str(repository.get("id") or ""),
        )

    async def get_ref(self, ref: str) -> str | None:
        """The SHA a ref (`heads/main`) points to, or None when there is no such ref."""
        gh = await self._gh()
        try:
            with translated():
                resp = await gh.rest.git.async_get_ref(self._owner, self._name, _path(_short(ref)))
        except NotFound:
            return None
        return resp.parsed_data.object_.sha

    async def branch_head(self, branch: str) -> str | None:
        """The head commit of `branch`, or None when there is no such branch.

        A conditional read (the matching-refs listing, which answers `[]` rather than a
        404 for a missing branch): asked again while the branch has not moved, GitHub
        answers a free 304, so a tick can watch a branch at no cost (`get_ref`'s 404 for
        a branch not made yet would be billed on every tick).
        """
        gh = await self._gh()
        with translated():
            resp = await gh.rest.git.async_list_matching_refs(
                self._owner, self._name, _path(f"heads/{branch}")
            )
        wanted = f"refs/heads/{branch}"
        return next((r.object_.sha for r in resp.parsed_data if r.ref == wanted), None)

    async def matching_refs(self, prefix: str) -> list[tuple[str, str]]:
        """Every ref whose name starts with `refs/<prefix>`, as `(full name, sha)` (the
        claim refs under `agent-loop/claims/`, for `agent-loop claims list`)."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.git.async_list_matching_refs(
                self._owner, self._name, _path(_short(prefix))
            )
        return [(r.ref, r.object_.sha) for r in resp.parsed_data]

    async def create_ref(self, ref: str, sha: str) -> None:
        """Create `refs/...` at `sha`; atomic, so exactly one racer wins.

        Raises:
            RefExists: the ref already exists (another run claimed first).
        """
        gh = await self._gh()
        try:
            with translated():
                await gh.rest.git.async_create_ref(
                    self._owner, self._name, ref=f"refs/{_short(ref)}", sha=sha
                )
        except Unprocessable as exc:
            if "already exists" in exc.github_message.lower():
                raise retype(exc, RefExists) from None
            raise

    async def update_ref(self, ref: str, sha: str, *, force: bool = False) -> None:
        """Move a ref; without `force` only a fast-forward succeeds (compare-and-swap).

        Raises:
            NotFastForward: `sha` does not descend from the ref's current commit.
            NotFound: the ref does not exist.
        """
        gh = await self._gh()
        try:
            with translated():
                await gh.rest.git.async_update_ref(
                    self._owner, self._name, _path(_short(ref)), sha=sha, force=force
                )
        except Unprocessable as exc:
            if "does not exist" in exc.github_message.lower():
                raise retype(exc, NotFound) from None
            raise retype(exc, NotFastForward) from None

    async def delete_ref(self, ref: str) -> None:
        """Delete a ref.

        Raises:
            NotFound: there is no such ref (GitHub answers 422 or 404).
        """
        gh = await self._gh()
        try:
            with translated():
                await gh.rest.git.async_delete_ref(self._owner, self._name, _path(_short(ref)))
        except Unprocessable as exc:
            raise retype(exc, NotFound) from None

    async def get_commit(self, sha: str) -> GitCommit:
        """A commit object: its tree, parents and message."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.git.async_get_commit(self._owner, self._name, sha)
        return conv.git_commit(resp.parsed_data)

    async def path_commits(
        self, path: str, ref: str | None, *, limit: int = 10
    ) -> list[PathCommit]:
        """The newest commits of `ref` (`None`: the default branch, without asking its
        name) that changed `path`, newest first (one request, conditional: a repeated
        listing that did not change is a free 304).

        GitHub's history simplification applies: a merge that took the file from one
        side is not listed, the commit that changed it on that side is.
        """
        gh = await self._gh()
        with translated():
            resp = await gh.rest.repos.async_list_commits(
                self._owner,
                self._name,
                sha=UNSET if ref is None else ref,
                path=path,
                per_page=max(1, min(limit, 100)),
            )
        return [conv.path_commit(c) for c in resp.parsed_data]

    async def commit_provenance(self, shas: Sequence[str]) -> dict[str, CommitProvenance]:
        """What GitHub vouches for about each commit: the merged pull requests it belongs
        to (and who merged each), and its signature's state and signer (one GraphQL
        request per 25 commits). A sha GitHub does not know is left out.
        """
        wanted = list(dict.fromkeys(s.lower() for s in shas))
        bad = [s for s in wanted if len(s) != 40 or any(c not in "0123456789abcdef" for c in s)]
        if bad:
            raise ValueError(f"not a full commit sha: {bad[0]!r}")
        found: dict[str, CommitProvenance] = {}
        for start in range(0, len(wanted), _PROVENANCE_BATCH):
            batch = wanted[start : start + _PROVENANCE_BATCH]
            fields = " ".join(
                f'c{i}: object(oid: "{sha}") {{ {_PROVENANCE} }}' for i, sha in enumerate(batch)
            )
            query = (
                "query($owner: String!, $name: String!) { "
                f"repository(owner: $owner, name: $name) {{ {fields} }} }}"
            )
            data = await self._graphql(query, {"owner": self._owner, "name": self._name})
            repository = cast("dict[str, Any]", data.get("repository") or {})
            for i, sha in enumerate(batch):
                node = cast("dict[str, Any] | None", repository.get(f"c{i}"))
                if node is not None:
                    found[sha] = conv.commit_provenance(sha, node)
        return found

    async def commits_since(self, ref: str | None, since: datetime) -> list[PathCommit]:
        """Commits of `ref` (`None`: the default branch, with no request to name it)
        committed at or after `since`, newest first, every page.

        The URL stays the same while `since` does, so a poll whose branch did not move is
        a free `304` from the ETag cache.
        """
        gh = await self._gh()
        paginator = gh.rest.paginate(
            gh.rest.repos.async_list_commits,
            owner=self._owner,
            repo=self._name,
            sha=ref if ref is not None else UNSET,
            since=since,
            per_page=self._per_page,
        )
        return [conv.path_commit(c) for c in await self._all(paginator)]

    async def create_commit(self, *, message: str, tree_sha: str, parents: Sequence[str]) -> str:
        """Create a commit object (no ref moves); returns its SHA."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.git.async_create_commit(
                self._owner, self._name, message=message, tree=tree_sha, parents=list(parents)
            )
        return resp.parsed_data.sha

    async def get_tree(self, ref_or_sha: str, *, recursive: bool = True) -> list[TreeEntry]:
        """Entries of a tree, given a tree SHA, commit SHA or branch name (see `read_tree`)."""
        return list((await self.read_tree(ref_or_sha, recursive=recursive)).entries)

    async def read_tree(self, ref_or_sha: str, *, recursive: bool = True) -> GitTree:
        """A tree with its own sha, given a tree SHA, commit SHA or branch name.

        GitHub truncates very large recursive listings; then the tree is walked one
        sub-tree at a time so the answer is always complete.
        """
        gh = await self._gh()
        with translated():
            resp = await gh.rest.git.async_get_tree(
                self._owner, self._name, _path(ref_or_sha), recursive="1" if recursive else UNSET
            )
        tree = resp.parsed_data
        if not (recursive and tree.truncated):
            return GitTree(sha=tree.sha, entries=tuple(conv.tree_entry(e) for e in tree.tree))
        return GitTree(sha=tree.sha, entries=tuple(await self._walk(tree.sha, "")))

    async def _walk(self, tree_sha: str, prefix: str) -> list[TreeEntry]:
        out: list[TreeEntry] = []
        for entry in await self.get_tree(tree_sha, recursive=False):
            entry = entry.model_copy(update={"path": prefix + entry.path})
            out.append(entry)
            if entry.type == "tree":
                out.extend(await self._walk(entry.sha, entry.path + "/"))
        return out

    async def get_file(self, path: str, ref: str) -> bytes | None:
        """A file's bytes at `ref`, or None when no file is there (missing, or a directory)."""
        gh = await self._gh()
        try:
            with translated():
                resp = await gh.rest.repos.async_get_content(
                    self._owner, self._name, _path(path), ref=ref
                )
        except NotFound:
            return None
        raw: Any = resp.json()
        if not isinstance(raw, dict):
            return None  # a directory listing
        data = cast("dict[str, Any]", raw)
        if data.get("type") != "file":
            return None
        if data.get("encoding") == "base64":
            return base64.b64decode(str(data.get("content", "")))
        # Files over 1 MB come without content ("encoding": "none"): read the blob.
        with translated():
            blob = await gh.rest.git.async_get_blob(self._owner, self._name, str(data["sha"]))
        return base64.b64decode(blob.parsed_data.content)

    async def download_archive(self, ref: str) -> bytes:
        """A gzipped tarball of the repository at `ref` (follows GitHub's redirect).

        Each attempt may take the client's `archive_timeout` rather than its `timeout`.
        """
        gh = await self._gh()
        with translated(), attempt_timeout(self._archive_timeout):
            resp = await gh.rest.repos.async_download_tarball_archive(
                self._owner, self._name, _path(ref)
            )
        return resp.raw_response.content

    async def commit_files(
        self,
        *,
        parent_sha: str,
        message: str,
        files: Mapping[str, str | bytes | None],
        parent_tree: GitTree | None = None,
    ) -> str:
        """Commit several file changes on top of `parent_sha`; returns the new commit SHA.

        Text goes inline in the tree request, bytes as base64 blobs, None deletes (a path
        already absent is skipped, as GitHub would refuse it). Existing executable bits
        are kept. No ref moves: the caller decides how (fast-forward, force, new branch).

        Args:
            parent_sha: The new commit's parent.
            message: The commit message.
            files: Path -> new content (`str` text, `bytes` binary, `None` deletes).
            parent_tree: The parent's tree as the caller read it already (at least
                `GitTree.around(files)`); without it the parent commit and its tree are
                read here (two requests).

        Raises:
            ValueError: a path is not repository-relative, names a directory (or
                submodule) of the parent, since a file written there would replace and a
                deletion remove everything in it, or lies below a file of the parent
                that the change does not delete (the file would become a directory).
        """
        _check_paths(files)
        if parent_tree is None:
            parent_tree = await self.read_tree((await self.get_commit(parent_sha)).tree_sha)
        tree = parent_tree.entries
        existing = {e.path: e.mode for e in tree if e.type == "blob"}
        _check_tree_shape(files, existing, {e.path for e in tree if e.type != "blob"})
        gh = await self._gh()
        entries: list[dict[str, Any]] = []
        for path, content in sorted(files.items()):
            mode: Literal["100644", "100755"] = (
                "100755" if existing.get(path) in _KEEP_MODES else "100644"
            )
            entry: dict[str, Any] = {"path": path, "mode": mode, "type": "blob"}
            if content is None:
                if path not in existing:
                    continue
                entry["sha"] = None
            elif isinstance(content, str):
                entry["content"] = content
            else:
                with translated():
                    blob = await gh.rest.git.async_create_blob(
                        self._owner,
                        self._name,
                        content=base64.b64encode(content).decode("ascii"),
                        encoding="base64",
                    )
                entry["sha"] = blob.parsed_data.sha
            entries.append(entry)
        tree_sha = parent_tree.sha
        if entries:
            with translated():
                tree = await gh.rest.git.async_create_tree(
                    self._owner,
                    self._name,
                    data={"base_tree": parent_tree.sha, "tree": entries},  # pyright: ignore[reportArgumentType]
                )
            tree_sha = tree.parsed_data.sha
        return await self.create_commit(message=message, tree_sha=tree_sha, parents=[parent_sha])

    async def commit_on_branch(
        self,
        *,
        branch: str,
        expected_head: str,
        message: str,
        files: Mapping[str, str | bytes | None],
        parent_tree: GitTree | None = None,
    ) -> str:
        """Commit `files` on top of `branch`, which must point at `expected_head`; returns
        the new head.

        A compare-and-swap in one write: GraphQL's `createCommitOnBranch` builds the
        commit and moves the branch only if its head is still `expected_head`, where the
        git data API takes a tree, a commit and a ref update (three writes) and a read to
        compare. That mutation writes every file as a regular file, so a change to an
        executable or a symlink of the parent goes through the git data API instead (the
        ref read, `commit_files`, a non-forced update). The branch must exist. Paths are
        checked as by `commit_files`; deleting a path the parent lacks is skipped.

        Args:
            branch: The branch (without `refs/heads/`).
            expected_head: The commit the change was built on: the new commit's parent.
            message: The commit message (its first line is the headline).
            files: Path -> new content (`str` text, `bytes` binary, `None` deletes).
            parent_tree: `expected_head`'s tree as the caller read it (at least
                `GitTree.around(files)`); without it the commit and its tree are read.

        Raises:
            NotFastForward: the branch points elsewhere (someone pushed meanwhile).
            NotFound: there is no such branch.
            ValueError: as `commit_files`.
        """
        _check_paths(files)
        if parent_tree is None:
            parent_tree = await self.read_tree((await self.get_commit(expected_head)).tree_sha)
        commit = self._commit_input(branch, expected_head, message, files, parent_tree)
        if commit is None:
            return await self._commit_by_refs(branch, expected_head, message, files, parent_tree)
        try:
            data = await self._graphql(COMMIT_ON_BRANCH, {"input": commit})
        except GitHubUnavailable:
            landed = await self._landed(branch, expected_head, commit["message"]["headline"])
            if landed is None:
                raise
            return landed
        return str(data["createCommitOnBranch"]["commit"]["oid"])

    async def create_branch_with_commit(
        self,
        *,
        branch: str,
        base_sha: str,
        repository_id: str,
        message: str,
        files: Mapping[str, str | bytes | None],
        parent_tree: GitTree | None = None,
    ) -> NewBranch:
        """Create `branch` at `base_sha` and commit `files` on it: one request, two writes.

        One GraphQL document holds `createRef` and then `createCommitOnBranch` (with
        `expectedHeadOid` the base); GitHub runs them in order, and an error in the
        first does not stop the second. So:

        - the branch is new: it is created and carries the commit (`created`);
        - the branch existed at `base_sha` (nobody's commits on it but the base's
          history): the commit went on it (not `created`);
        - the branch existed elsewhere: nothing was written, `RefExists` is raised;
        - the branch was created but the commit refused: the new branch is deleted
          again and the commit's error raised.

        A change to an executable, which the mutation cannot keep, and a repository
        whose node id is unknown take `create_ref` and `commit_on_branch` (more
        requests, the same outcomes). `repository_id` is `BranchHead.repository_id`;
        `parent_tree` is as for `commit_on_branch`.

        Raises:
            RefExists: the branch exists and does not point at `base_sha`.
            ValueError: as `commit_files`.
        """
        _check_paths(files)
        if parent_tree is None:
            parent_tree = await self.read_tree((await self.get_commit(base_sha)).tree_sha)
        commit = self._commit_input(branch, base_sha, message, files, parent_tree)
        if commit is None or not repository_id:
            await self.create_ref(f"refs/heads/{branch}", base_sha)
            sha = await self._after_create(branch, base_sha, message, files, parent_tree)
            return NewBranch(sha=sha, created=True)
        ref = {"repositoryId": repository_id, "name": f"refs/heads/{branch}", "oid": base_sha}
        try:
            data, errors = await self._graphql_fields(
                BRANCH_WITH_COMMIT, {"ref": ref, "commit": commit}
            )
        except GitHubUnavailable:
            landed = await self._landed(branch, base_sha, commit["message"]["headline"])
            if landed is None:
                raise
            return NewBranch(sha=landed, created=True)
        ref_error, commit_error = errors.get("createRef"), errors.get("createCommitOnBranch")
        made = cast("dict[str, Any] | None", data.get("createCommitOnBranch"))
        if ref_error is not None:
            if "already exists" not in ref_error.github_message.lower():
                raise ref_error
            if made is None:
                raise retype(ref_error, RefExists) from None
            return NewBranch(sha=str(made["commit"]["oid"]), created=False)
        if made is None:
            try:
                await self.delete_ref(f"heads/{branch}")
            except Exception as nested:  # the commit's refusal matters more
                raise (commit_error or _moved(branch, base_sha, None)) from nested
            raise commit_error or _moved(branch, base_sha, None)
        return NewBranch(sha=str(made["commit"]["oid"]), created=True)

    async def _after_create(
        self,
        branch: str,
        base_sha: str,
        message: str,
        files: Mapping[str, str | bytes | None],
        parent_tree: GitTree,
    ) -> str:
        """The commit on a branch just created at `base_sha`; the branch goes again if
        the commit is refused."""
        try:
            return await self.commit_on_branch(
                branch=branch,
                expected_head=base_sha,
                message=message,
                files=files,
                parent_tree=parent_tree,
            )
        except BaseException:
            with contextlib.suppress(Exception):  # the commit's failure matters more
                await self.delete_ref(f"heads/{branch}")
            raise

    def _commit_input(
        self,
        branch: str,
        expected_head: str,
        message: str,
        files: Mapping[str, str | bytes | None],
        parent_tree: GitTree,
    ) -> dict[str, Any] | None:
        """`createCommitOnBranch`'s input for `files` on `parent_tree`, checked as by
        `commit_files`; None when a path is an executable or a symlink of the parent
        (the mutation would write it as a regular file)."""
        _check_paths(files)
        modes = {e.path: e.mode for e in parent_tree.entries if e.type == "blob"}
        _check_tree_shape(files, modes, {e.path for e in parent_tree.entries if e.type != "blob"})
        if any(modes.get(path, _PLAIN_MODE) != _PLAIN_MODE for path in files):
            return None
        headline, _, body = message.partition("\n")
        additions = [
            {
                "path": path,
                "contents": base64.b64encode(
                    content.encode() if isinstance(content, str) else content
                ).decode("ascii"),
            }
            for path, content in sorted(files.items())
            if content is not None
        ]
        deletions = [
            {"path": path}
            for path, content in sorted(files.items())
            if content is None and path in modes
        ]
        return {
            "branch": {"repositoryNameWithOwner": self.full_name, "branchName": branch},
            "expectedHeadOid": expected_head,
            "message": {"headline": headline, "body": body.strip("\n")},
            "fileChanges": {"additions": additions, "deletions": deletions},
        }

    async def _landed(self, branch: str, expected_head: str, headline: str) -> str | None:
        """After an answer was lost: the commit GitHub made anyway, if the branch now
        points at a child of `expected_head` with our headline (a mutation is never
        retried blindly, since a repeat would find the head moved by the first)."""
        head = await self.get_ref(f"heads/{branch}")
        if head is None or head == expected_head:
            return None
        commit = await self.get_commit(head)
        ours = commit.parents == (expected_head,) and commit.message.startswith(headline)
        return head if ours else None

    async def _commit_by_refs(
        self,
        branch: str,
        expected_head: str,
        message: str,
        files: Mapping[str, str | bytes | None],
        parent_tree: GitTree,
    ) -> str:
        ref = f"heads/{branch}"
        found = await self.get_ref(ref)
        if found is None:
            raise NotFound(f"no branch {branch}", method="GET", url=f"git/ref/{ref}")
        if found != expected_head:
            raise _moved(branch, expected_head, found)
        sha = await self.commit_files(
            parent_sha=expected_head, message=message, files=files, parent_tree=parent_tree
        )
        await self.update_ref(ref, sha, force=False)
        return sha
