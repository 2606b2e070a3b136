"""The facade's own GitHub objects: small, frozen, and free of githubkit types.

Pipelines, records and tests depend on these few fields, not on githubkit's generated
schema (hundreds of fields, renamed across API versions), so an upgrade of either side
touches only the conversion in `_convert.py`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class User(_Frozen):
    """A GitHub account; bots (App identities) have `type == "Bot"`."""

    login: str
    id: int
    type: str


class Repository(_Frozen):
    """Repository metadata the agents need."""

    full_name: str
    default_branch: str
    private: bool
    html_url: str


class Issue(_Frozen):
    """An issue, or a pull request seen through the issues API (`is_pull_request`)."""

    number: int
    title: str
    body: str
    """Empty string when GitHub has no body."""
    state: Literal["open", "closed"]
    user: User
    labels: tuple[str, ...]
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None
    is_pull_request: bool
    html_url: str
    author_association: str
    """GitHub's relation of the author to the repository (`OWNER`, `MEMBER`, `NONE`...)."""


class Comment(_Frozen):
    """A comment on an issue or on a pull request's conversation."""

    id: int
    body: str
    user: User
    created_at: datetime
    updated_at: datetime
    html_url: str
    node_id: str = ""
    """GraphQL id (for `GitHub.last_comment_edit`); empty when not read from GitHub."""


class Edit(_Frozen):
    """The last edit of a body: who made it and when (GraphQL `editor`, `lastEditedAt`)."""

    editor: str | None
    """Login of whoever made the last edit; `None` when GitHub no longer knows the
    account (deleted): treat that as untrusted."""
    edited_at: datetime


class BodyRevision(_Frozen):
    """One revision of a body in its edit history (GraphQL `UserContentEdit`)."""

    edited_at: datetime
    editor: str | None
    """Who wrote this revision; `None` when GitHub no longer knows the account."""
    body: str | None
    """The whole body this revision left (GitHub's `diff` holds it); `None` when the
    revision was deleted from the history and its text is gone."""


class BodyHistory(_Frozen):
    """A body's edit history, as GitHub keeps it (GraphQL `userContentEdits`)."""

    last_edited_at: datetime | None
    """When the body was last edited (`lastEditedAt`); `None`: never."""
    revisions: tuple[BodyRevision, ...]
    """The revisions read, oldest first (empty for a body never edited)."""
    includes_creation: bool
    """The oldest revision is the text as created (`includesCreatedEdit`); False for a
    body edited before GitHub kept its history, or never edited."""
    complete: bool
    """Every revision GitHub holds was read (not cut short by a page)."""

    def text_before(self, moment: datetime) -> BodyRevision | None:
        """The revision that was the body just before `moment` (one made in the same
        second counts as after: timestamps are whole seconds), or `None` when the
        history cannot tell (cut short, the text as created not kept, no revision before).
        A revision deleted from the history is returned with its `body` `None`."""
        if not self.complete:
            return None
        earlier = [r for r in self.revisions if r.edited_at < moment]
        if earlier:
            return earlier[-1]
        return None


class Reaction(_Frozen):
    """An emoji reaction on a comment (how the agents acknowledge a command)."""

    id: int
    content: str
    """`+1`, `-1`, `laugh`, `confused`, `heart`, `hooray`, `rocket` or `eyes`."""
    user: User
    created_at: datetime


class IssueEvent(_Frozen):
    """A timeline event; for `labeled`/`unlabeled`, `actor` applied `label`."""

    id: int
    event: str
    actor: User | None
    label: str | None
    created_at: datetime
    commit_id: str | None = None
    """The commit the event names: for a pull request's `merged` event, the commit GitHub
    made on the base branch (REST's word for GraphQL's `mergeCommit`)."""
    rename_from: str | None = None
    """For a `renamed` event, the title before it (REST `rename.from`)."""


class PullRequest(_Frozen):
    """A pull request with its head and base."""

    number: int
    title: str
    body: str
    state: Literal["open", "closed"]
    user: User
    head_ref: str
    head_sha: str
    base_ref: str
    base_sha: str
    merged: bool
    """Always known on `get_pull`; on listings it is derived from `merged_at`."""
    merged_at: datetime | None
    closed_at: datetime | None
    draft: bool
    html_url: str
    created_at: datetime
    updated_at: datetime


class PullFile(_Frozen):
    """One file changed by a pull request."""

    filename: str
    status: str
    """`added`, `removed`, `modified`, `renamed`, `copied`, `changed` or `unchanged`."""
    additions: int
    deletions: int
    patch: str | None
    """Unified diff hunk; None for binary or very large files."""
    previous_filename: str | None = None
    """The file's path before a rename (or copy)."""


class Review(_Frozen):
    """A submitted (or pending) pull request review."""

    id: int
    user: User
    state: str
    """`APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED` or `PENDING`."""
    body: str
    submitted_at: datetime | None
    commit_id: str | None


class ReviewComment(_Frozen):
    """An inline review comment on a pull request diff."""

    id: int
    user: User
    body: str
    path: str
    line: int | None
    in_reply_to_id: int | None
    commit_id: str
    created_at: datetime
    updated_at: datetime
    html_url: str
    node_id: str = ""
    """GraphQL id (for `GitHub.last_comment_edit`); empty when not read from GitHub."""


class CheckRun(_Frozen):
    """A check run on a commit, with the output a fixer needs."""

    id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    output_title: str
    output_summary: str
    output_text: str
    started_at: datetime | None = None
    """When the run started (GitHub's clock)."""
    completed_at: datetime | None = None
    """When the run completed; `None` while queued or in progress. With `started_at`
    it tells a failure that arrived after a given moment from one seen before it."""


class CommitStatus(_Frozen):
    """The latest commit status of one context."""

    context: str
    state: str
    """`error`, `failure`, `pending` or `success`."""
    description: str
    target_url: str
    updated_at: datetime | None = None
    """When this context last changed state (GitHub's clock)."""


class TreeEntry(_Frozen):
    """One entry of a git tree (paths are relative to the tree's root)."""

    path: str
    type: Literal["blob", "tree", "commit"]
    sha: str
    size: int | None
    mode: str = "100644"
    """Git file mode (`100644`, `100755`, `120000` symlink, `040000` tree, `160000`)."""


class GitTree(_Frozen):
    """A commit's tree as read: its own sha and its entries (paths from its root)."""

    sha: str
    entries: tuple[TreeEntry, ...]

    def around(self, paths: Iterable[str]) -> GitTree:
        """This tree with only the entries a commit of `paths` is checked against (the
        paths and every folder above them): what `commit_files` needs of its parent,
        small enough to travel in a durable write's inputs."""
        keep: set[str] = set()
        for path in paths:
            parts = path.split("/")
            keep.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
        return GitTree(sha=self.sha, entries=tuple(e for e in self.entries if e.path in keep))


class GitCommit(_Frozen):
    """A git commit object."""

    sha: str
    tree_sha: str
    parents: tuple[str, ...]
    message: str
    author_email: str = ""
    """The author's email as the commit records it (kept when a commit is rebased)."""
    authored_at: datetime | None = None
    """The author's date (kept when a commit is rebased, unlike the committer's)."""


class PathCommit(_Frozen):
    """One commit of a file's history (`GET /repos/{o}/{r}/commits?path=`), with the
    GitHub account its author email belongs to."""

    sha: str
    parents: tuple[str, ...]
    author_login: str
    """The account GitHub maps the author email to; empty when it maps to none. Whoever
    creates a commit writes its author freely: this says whose email the commit
    carries, never who made it (`CommitProvenance` says what GitHub vouches for)."""
    message: str
    committed_at: datetime | None = None
    """The committer's date (when it landed on the branch, for a merge or a push)."""
    committer_login: str = ""
    """The account GitHub maps the committer email to (`web-flow` for the commits GitHub
    makes itself); empty when none. As freely written as the author."""
    verified: bool = False
    """GitHub verified its signature (REST `verification.verified`): the committer's own
    key, or GitHub's for the commits it makes itself (merges, web and API edits)."""


class MergedPull(_Frozen):
    """A merged pull request a commit belongs to, and who merged it (GitHub's word)."""

    number: int
    base_ref: str
    """The branch it was merged into."""
    merged_by: str
    """The login of the person (or App) who merged it; empty when GitHub names nobody."""
    merged_by_type: str = ""
    """GitHub's type of that account (`mergedBy { __typename }`): `User` for a person's
    account, `Bot` for a GitHub App or bot account (a merge bot, a workflow's token),
    `Mannequin` for an imported placeholder; empty when GitHub did not say."""


class CommitProvenance(_Frozen):
    """What GitHub itself says about how a commit got where it is, unlike its author
    and committer fields, which whoever made the commit wrote (one GraphQL request for
    many commits: `GitHub.commit_provenance`)."""

    sha: str
    merged: tuple[MergedPull, ...] = ()
    """The merged pull requests that brought it in (GitHub's `associatedPullRequests`)."""
    signature_state: str = "UNSIGNED"
    """GitHub's verdict on its signature (`VALID`, `UNSIGNED`, `BAD_EMAIL`,
    `UNKNOWN_KEY`, ...)."""
    signer: str = ""
    """The account whose own registered key made a `VALID` signature: GitHub checked
    the key is theirs and the committer email is one of their verified emails. Empty
    for any other state, and for GitHub's own signature (`signed_by_github`), which
    vouches that GitHub made the commit (a merge, a web or API edit), not for a person."""
    signed_by_github: bool = False


class PullLinks(_Frozen):
    """What a merged pull request is linked to, from GraphQL (REST shows neither)."""

    merge_commit_sha: str
    """The commit GitHub made on the base branch when it merged (the merge commit, the
    squashed commit, or the last rebased one); empty when not merged."""
    closing_issues: tuple[int, ...]
    """Issues of this repository the pull request closes (`closingIssuesReferences`:
    closing keywords in its body, or linked by hand), in GitHub's order."""


class PullHistory(_Frozen):
    """What a decided pull request left behind: its review threads, its first commit and
    its merge commit (one GraphQL request; REST has no thread resolution, and API
    version 2026-03-10 dropped `merge_commit_sha`)."""

    threads: int
    """Review threads on the PR."""
    unresolved_threads: int
    """Of those, threads nobody resolved (counted over the first 100 threads)."""
    first_commit_sha: str
    """The PR's oldest commit: for an agent PR, the head the builder pushed."""
    merge_commit_sha: str
    """The merge (or squash, or rebased head) commit on the base branch; empty unless
    merged."""


class BranchHead(_Frozen):
    """A branch and the commit it points at, read in one request."""

    name: str
    """The branch name, without `refs/heads/`."""
    sha: str
    """The commit the branch points at."""
    private: bool = False
    """Whether the repository is private (GraphQL `isPrivate`, read in the same request)."""
    tree_sha: str = ""
    """The head commit's tree ("" when not read)."""
    disk_usage_kb: int | None = None
    """What the repository occupies on GitHub's disks, every commit packed (GraphQL
    `diskUsage`): an upper bound, roughly, of its tarball's size."""
    repository_id: str = ""
    """The repository's GraphQL node id (read in the same request; "" when not read),
    which `createRef` takes."""


class NewBranch(_Frozen):
    """What `GitHub.create_branch_with_commit` made: the commit, and whether the branch
    was created (not, when it stood at the base already and the commit went on it)."""

    sha: str
    created: bool
