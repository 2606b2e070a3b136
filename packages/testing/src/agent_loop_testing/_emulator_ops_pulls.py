"""Pull request, review, check and status operations over the real git store.

GitHub's rules that the agents depend on are kept: a PR needs commits between base and
head (422 otherwise), only one open PR per head and base (422), the head SHA follows the
branch as it is pushed, deleting the head branch closes an open PR (events
`head_ref_deleted` and `closed`), an author cannot approve their own PR, and a merge with
a stale `sha` answers 409. A pull request into the default branch closes the issues its
body names with a closing keyword (`Fixes #3`), and those linked to it by hand, when it
merges (`closing_issues`, GraphQL's `closingIssuesReferences`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from agent_loop_testing import _emulator_hooks as hooks
from agent_loop_testing._emulator_errors import ApiError, validation_failed
from agent_loop_testing._emulator_git import EMPTY_TREE, Identity, person_of
from agent_loop_testing._emulator_gitdiff import (
    FileChange,
    file_changes,
    hunk_for_line,
    merge_trees,
)
from agent_loop_testing._emulator_ops_issues import record_event, set_state
from agent_loop_testing._emulator_signing import GITHUB_KEY_ID, armored, web_flow_identity
from agent_loop_testing._emulator_state import (
    CheckRunRec,
    IssueRec,
    PullRec,
    ReviewCommentRec,
    ReviewRec,
    State,
    StatusRec,
    record_body_edit,
)

__all__ = [
    "add_review",
    "add_review_comment",
    "associated_pulls",
    "base_sha",
    "branch_deleted",
    "closing_issues",
    "combined_state",
    "edit_review_comment",
    "get_pull",
    "get_review_comment",
    "head_sha",
    "latest_statuses",
    "link_issue",
    "merge_base_tree",
    "merge_pull",
    "open_pull",
    "pull_commits",
    "pull_files",
    "set_check_run",
    "set_status",
]


def get_pull(st: State, number: int) -> tuple[IssueRec, PullRec]:
    issue = st.issues.get(number)
    if issue is None or issue.pull is None:
        raise ApiError(404, "Not Found")
    return issue, issue.pull


def get_review_comment(st: State, comment_id: int) -> ReviewCommentRec:
    comment = st.review_comments.get(comment_id)
    if comment is None:
        raise ApiError(404, "Not Found")
    return comment


def edit_review_comment(st: State, comment_id: int, body: str, editor: str) -> ReviewCommentRec:
    """Replace a review comment's body as `editor`; an actual change is an edit."""
    comment = get_review_comment(st, comment_id)
    st.user(editor)
    comment.updated_at = st.tick()
    if body != comment.body:
        record_body_edit(comment, editor, comment.updated_at, body)
    comment.body = body
    st.issues[comment.pull].updated_at = comment.updated_at
    return comment


def branch_deleted(st: State, branch: str, actor: str) -> None:
    """What GitHub does after `refs/heads/<branch>` is deleted, for PRs with that head.

    Each PR records `head_ref_deleted`; an open one is then closed by the same actor
    (it cannot stay open without a head). Call after the ref is gone.
    """
    for issue in sorted(st.issues.values(), key=lambda i: i.number):
        pull = issue.pull
        if pull is None or pull.head_ref != branch:
            continue
        st.tick()
        record_event(st, issue, "head_ref_deleted", actor)
        if issue.state == "open":
            set_state(st, issue, "closed", actor)


def head_sha(st: State, pull: PullRec) -> str:
    """The head branch's tip while it exists (it moves with pushes), else the last one."""
    current = st.git.refs.get(f"refs/heads/{pull.head_ref}")
    if current is not None and pull.merged_at is None:
        pull.head_sha = current
    return pull.head_sha


def base_sha(st: State, pull: PullRec) -> str:
    return st.git.refs.get(f"refs/heads/{pull.base_ref}") or head_sha(st, pull)


def merge_base_tree(st: State, pull: PullRec) -> str:
    """The tree the PR diff starts from: its merge base's tree (three-dot diff). Once
    merged, against the base as it was when it merged (the merge commit's first
    parent): GitHub keeps showing a merged PR's files and diff as they were."""
    head = head_sha(st, pull)
    base_tip = base_sha(st, pull)
    if pull.merge_commit_sha is not None:
        merged = st.git.commit(pull.merge_commit_sha)
        if merged is not None and merged.parents:
            base_tip = merged.parents[0].decode("ascii")
    base = st.git.merge_base(base_tip, head)
    return st.git.commit_tree(base) if base else EMPTY_TREE


_CLOSING = re.compile(
    r"(?<![A-Za-z0-9_])(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)(?::\s*|\s+)"
    r"(?:#|(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#"
    r"|https?://[^\s/]+/(?P<url>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/issues/)(?P<number>\d+)\b",
    re.IGNORECASE,
)


def closing_issues(st: State, issue: IssueRec) -> list[IssueRec]:
    """The issues PR `issue` closes when it merges, as GitHub's `closingIssuesReferences`
    lists them: those its body names with a closing keyword (`fixes #3`, `closes
    owner/name#3`, `resolves <issue URL>`, in this repository, when the PR targets the
    default branch), then those linked by hand. Pull requests are never among them."""
    pull = issue.pull
    if pull is None:
        return []
    numbers: list[int] = []
    if pull.base_ref == st.default_branch:
        for match in _CLOSING.finditer(issue.body or ""):
            named = match.group("repo") or match.group("url")
            if named is None or named.lower() == st.full_name.lower():
                numbers.append(int(match.group("number")))
    numbers.extend(pull.linked_issues)
    found: list[IssueRec] = []
    for number in dict.fromkeys(numbers):
        target = st.issues.get(number)
        if target is not None and target.pull is None:
            found.append(target)
    return found


def link_issue(st: State, pull_number: int, issue_number: int) -> None:
    """Link an issue to a PR by hand (GitHub's "Development" sidebar)."""
    _, pull = get_pull(st, pull_number)
    target = st.issues.get(issue_number)
    if target is None or target.pull is not None:
        raise ApiError(422, f"#{issue_number} is not an issue")
    if issue_number not in pull.linked_issues:
        pull.linked_issues.append(issue_number)


def pull_files(st: State, pull: PullRec) -> list[FileChange]:
    return file_changes(st.git, merge_base_tree(st, pull), st.git.commit_tree(head_sha(st, pull)))


def open_pull(
    st: State, *, title: str, body: str | None, head: str, base: str, author: str, draft: bool
) -> IssueRec:
    head_ref = head.split(":", 1)[1] if ":" in head else head
    if ":" in head and head.split(":", 1)[0].lower() != st.owner.lower():
        raise validation_failed("PullRequest", "head is invalid", field="head")
    head_tip = st.git.refs.get(f"refs/heads/{head_ref}")
    base_tip = st.git.refs.get(f"refs/heads/{base}")
    if base_tip is None:
        raise ApiError(
            422,
            "Validation Failed",
            errors=[{"resource": "PullRequest", "field": "base", "code": "invalid"}],
        )
    if head_tip is None:
        raise ApiError(
            422,
            "Validation Failed",
            errors=[{"resource": "PullRequest", "field": "head", "code": "invalid"}],
        )
    for other in st.issues.values():
        p = other.pull
        if p and other.state == "open" and p.head_ref == head_ref and p.base_ref == base:
            raise validation_failed(
                "PullRequest", f"A pull request already exists for {st.owner}:{head_ref}."
            )
    if st.git.is_ancestor(head_tip, base_tip):
        raise validation_failed("PullRequest", f"No commits between {base} and {head_ref}")
    st.user(author)
    now = st.tick()
    issue = IssueRec(st.next_number, st.new_id(), title, body, author, now, now)
    issue.pull = PullRec(head_ref, head_tip, base, draft=draft, base_at_open=base_tip)
    st.next_number += 1
    st.issues[issue.number] = issue
    hooks.pull_request(st, issue, "opened", author)
    return issue


def merge_pull(
    st: State,
    number: int,
    by: str,
    *,
    method: str = "merge",
    expected_sha: str | None = None,
    title: str | None = None,
    message: str | None = None,
) -> str:
    """Merge on the server like GitHub: a merge commit, a squash commit, or the PR's
    commits rebased one by one (`rebase`) on the base branch; returns the commit the
    base branch now points at (GitHub's `merge_commit_sha`: for a rebase, the last
    rebased commit)."""
    issue, pull = get_pull(st, number)
    if issue.state != "open" or pull.merged_at is not None:
        raise ApiError(405, "Pull Request is not mergeable")
    if method not in ("merge", "squash", "rebase"):
        raise ApiError(422, f"Invalid merge_method: {method}")
    head = head_sha(st, pull)
    if expected_sha is not None and expected_sha != head:
        raise ApiError(409, "Head branch was modified. Review and try the merge again.")
    base = base_sha(st, pull)
    common = st.git.merge_base(base, head)
    ancestor_tree = st.git.commit_tree(common) if common else None
    tree = merge_trees(st.git, ancestor_tree, st.git.commit_tree(base), st.git.commit_tree(head))
    if tree is None:
        raise ApiError(405, "Pull Request is not mergeable")
    st.tick()
    if method == "rebase":
        sha = _rebase(st, pull, base)
    else:
        if method == "merge":
            subject = title or f"Merge pull request #{number} from {st.owner}/{pull.head_ref}"
            text = f"{subject}\n\n{message if message is not None else issue.title}"
            parents = [base, head]
        else:
            subject = title or f"{issue.title} (#{number})"
            text = f"{subject}\n\n{message}" if message else subject
            parents = [base]
        # GitHub makes the commit itself: the merger is its author, GitHub its committer
        # and signer (web-flow), so it is verified whoever merged.
        sha = st.git.add_commit(
            tree=tree,
            parents=parents,
            message=text,
            author=st.identity(by),
            committer=web_flow_identity(st),
            signature=armored(GITHUB_KEY_ID),
        )
    st.git.refs[f"refs/heads/{pull.base_ref}"] = sha
    pull.merged_at, pull.merged_by, pull.merge_commit_sha = st.now, by, sha
    record_event(st, issue, "merged", by, commit_id=sha)
    set_state(st, issue, "closed", by)
    for closed in closing_issues(st, issue):
        if closed.state == "open":
            set_state(st, closed, "closed", by)
            event = next(e for e in reversed(st.events) if e.issue == closed.number)
            event.commit_id = sha  # GitHub's `closed` event names the merge commit
    return sha


def _rebase(st: State, pull: PullRec, base: str) -> str:
    """The PR's commits replayed on `base`, oldest first, each keeping its author and
    message, GitHub (web-flow) their committer; returns the last one. A commit that
    cannot be replayed (a merge commit, a conflict) refuses the whole rebase."""
    tip = base
    rebased: list[str] = []
    for sha in pull_commits(st, pull):
        original = st.git.commit(sha)
        parents = st.git.parents(sha)
        if original is None or len(parents) != 1:
            raise ApiError(405, "This branch can't be rebased")
        tree = merge_trees(
            st.git, st.git.commit_tree(parents[0]), st.git.commit_tree(tip), original.tree.decode()
        )
        if tree is None:
            raise ApiError(405, "This branch can't be rebased")
        name, email = person_of(original.author)
        when = datetime.fromtimestamp(original.author_time, UTC)
        tip = st.git.add_commit(
            tree=tree,
            parents=[tip],
            message=original.message.decode(),
            author=Identity(name, email, when),
            committer=web_flow_identity(st),
            signature=armored(GITHUB_KEY_ID),
        )
        rebased.append(tip)
    if not rebased:
        raise ApiError(405, "Pull Request is not mergeable")
    pull.rebased = rebased
    return tip


def add_review(
    st: State,
    number: int,
    *,
    author: str,
    state: str,
    body: str,
    comments: list[tuple[str, int, str]],
    commit_id: str | None = None,
) -> ReviewRec:
    issue, pull = get_pull(st, number)
    if state in ("APPROVED", "CHANGES_REQUESTED") and author == issue.author:
        verb = "approve" if state == "APPROVED" else "request changes on"
        raise ApiError(
            422,
            "Unprocessable Entity",
            errors=[
                {
                    "resource": "PullRequestReview",
                    "code": "custom",
                    "message": f"Review Can not {verb} your own pull request",
                }
            ],
        )
    st.user(author)
    now = st.tick()
    commit = commit_id or head_sha(st, pull)
    submitted = None if state == "PENDING" else now
    review = ReviewRec(st.new_id(), number, author, state, body, commit, submitted)
    st.reviews[review.id] = review
    for path, line, text in comments:
        add_review_comment(
            st,
            number,
            author=author,
            body=text,
            path=path,
            line=line,
            review_id=review.id,
            commit_id=commit,
        )
    issue.updated_at = now
    if submitted is not None:
        hooks.review(st, review, author)
    return review


def add_review_comment(
    st: State,
    number: int,
    *,
    author: str,
    body: str,
    path: str | None = None,
    line: int | None = None,
    side: str = "RIGHT",
    review_id: int | None = None,
    commit_id: str | None = None,
    in_reply_to: int | None = None,
) -> ReviewCommentRec:
    """A review comment on a diff line, or a reply in an existing thread."""
    issue, pull = get_pull(st, number)
    st.user(author)
    if in_reply_to is not None:
        parent = st.review_comments.get(in_reply_to)
        if parent is None or parent.pull != number:
            raise ApiError(404, "Not Found")
        root = parent.in_reply_to or parent.id
        path, line, side, commit_id = parent.path, parent.line, parent.side, parent.commit_id
        hunk = parent.diff_hunk
    else:
        if path is None:
            raise validation_failed("PullRequestReviewComment", "path is missing", field="path")
        root = None
        change = next((f for f in pull_files(st, pull) if f.filename == path), None)
        if change is None:
            raise validation_failed(
                "PullRequestReviewComment",
                "pull_request_review_thread.path is invalid",
                field="path",
            )
        found = hunk_for_line(change.patch, line) if line else None
        if line and change.patch is not None and found is None:
            raise validation_failed(  # as GitHub: a thread sits on a line the diff shows
                "PullRequestReviewComment",
                "pull_request_review_thread.line must be part of the diff",
                field="line",
            )
        hunk = found or (change.patch or "")
    now = st.tick()
    if review_id is None:
        review = ReviewRec(
            st.new_id(), number, author, "COMMENTED", "", commit_id or head_sha(st, pull), now
        )
        st.reviews[review.id] = review
        review_id = review.id
    comment = ReviewCommentRec(
        st.new_id(),
        number,
        review_id,
        author,
        body,
        path,
        line,
        side,
        commit_id or head_sha(st, pull),
        hunk,
        now,
        now,
        root,
    )
    st.review_comments[comment.id] = comment
    issue.updated_at = now
    hooks.review_comment(st, comment, author)
    return comment


def set_check_run(
    st: State,
    sha: str,
    name: str,
    *,
    status: str,
    conclusion: str | None,
    title: str | None,
    summary: str | None,
    text: str | None,
    details_url: str | None = None,
    external_id: str | None = None,
    actor: str | None = None,
) -> CheckRunRec:
    if st.git.commit(sha) is None:
        raise validation_failed("CheckRun", f"No commit found for SHA: {sha}", field="head_sha")
    now = st.tick()
    completed = now if status == "completed" else None
    run = CheckRunRec(
        st.new_id(),
        sha,
        name,
        status,
        conclusion if completed else None,
        title,
        summary,
        text,
        now,
        completed,
        external_id,
        details_url,
    )
    st.check_runs[run.id] = run
    hooks.check_run(st, run, "completed" if completed else "created", actor or st.owner)
    return run


def set_status(
    st: State,
    sha: str,
    context: str,
    state: str,
    description: str | None,
    target_url: str | None,
    creator: str,
) -> StatusRec:
    if state not in ("error", "failure", "pending", "success"):
        raise ApiError(
            422,
            "Validation Failed",
            errors=[
                {
                    "resource": "Status",
                    "field": "state",
                    "code": "custom",
                    "message": "state is not included in the list",
                }
            ],
        )
    status = StatusRec(
        st.new_id(), sha, context, state, description, target_url, creator, st.tick()
    )
    st.statuses.append(status)
    hooks.status(st, status)
    return status


def combined_state(statuses: list[StatusRec]) -> str:
    """GitHub's combined state: failure if any failed or errored, pending if any pending
    (or none at all), else success."""
    states = {s.state for s in statuses}
    if states & {"failure", "error"}:
        return "failure"
    if not states or "pending" in states:
        return "pending"
    return "success"


def latest_statuses(st: State, sha: str) -> list[StatusRec]:
    """The newest status per context for a commit, newest first."""
    seen: dict[str, StatusRec] = {}
    for status in reversed(st.statuses):
        if status.sha == sha and status.context not in seen:
            seen[status.context] = status
    return list(seen.values())


def pull_commits(st: State, pull: PullRec) -> list[str]:
    """The PR's commits, oldest first: the head's first-parent line back to where it
    left the base branch as it was when the PR was opened."""
    if not pull.base_at_open:
        return []
    known = st.git.ancestors(pull.base_at_open)
    line = reversed(st.git.first_parent_log(head_sha(st, pull)))
    return [sha for sha in line if sha not in known]


def associated_pulls(st: State, sha: str) -> list[IssueRec]:
    """The pull requests GitHub associates with a commit, by number
    (`GET /repos/{o}/{r}/commits/{sha}/pulls`, GraphQL `Commit.associatedPullRequests`).

    A commit on the default branch: the merged pull requests that brought it in (among
    their commits, or their merge or squash commit). Any other commit: the open pull
    requests that carry it.
    """
    head = st.git.refs.get(f"refs/heads/{st.default_branch}")
    landed = head is not None and sha in st.git.ancestors(head)
    found: list[IssueRec] = []
    for issue in sorted(st.issues.values(), key=lambda i: i.number):
        pull = issue.pull
        if pull is None:
            continue
        merged = pull.merged_at is not None
        if landed != merged or (not merged and issue.state != "open"):
            continue
        if sha == pull.merge_commit_sha or sha in pull.rebased or sha in pull_commits(st, pull):
            found.append(issue)
    return found
