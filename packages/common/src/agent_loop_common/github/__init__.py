"""The async GitHub facade every agent uses (over githubkit).

One `GitHub` per run and repository. It returns the frozen models below (never githubkit
types), raises the typed errors below (never githubkit or httpx exceptions), retries per
`GitHubRetryPolicy`, answers unchanged polls from an `ETagCache` with free 304s, and counts
every request in `RequestStats`, keeps the rate budget GitHub last reported
(`rate_budget`, checked against a `RateReserve` before new work) and spaces bursts of
content-creating requests (`WritePacing`). The few answers REST cannot give (who last edited a
body: `last_edit`, `last_comment_edit`) come from GitHub's GraphQL API.

```python
async with GitHub("acme/widgets", auth=TokenAuth(token), base_url=api_url) as gh:
    issues = await gh.list_issues(labels=["agent"])
```
"""

from typing import TYPE_CHECKING

from agent_loop_common._lazy import lazy_exports

if TYPE_CHECKING:
    from agent_loop_common.github._auth import AppAuth, TokenAuth, github_auth
    from agent_loop_common.github._client import DEFAULT_BASE_URL, GitHub
    from agent_loop_common.github._errors import (
        AuthError,
        Conflict,
        GitHubError,
        GitHubUnavailable,
        NotFastForward,
        NotFound,
        RateLimited,
        RefExists,
        Unprocessable,
    )
    from agent_loop_common.github._etag import REREAD_HEADERS, ETagCache, PolledRead, ReadLog
    from agent_loop_common.github._models import (
        BodyHistory,
        BodyRevision,
        BranchHead,
        CheckRun,
        Comment,
        CommitProvenance,
        CommitStatus,
        Edit,
        GitCommit,
        GitTree,
        Issue,
        IssueEvent,
        MergedPull,
        NewBranch,
        PathCommit,
        PullFile,
        PullHistory,
        PullLinks,
        PullRequest,
        Reaction,
        Repository,
        Review,
        ReviewComment,
        TreeEntry,
        User,
    )
    from agent_loop_common.github._offline import GitHubOffline, OfflineTransport
    from agent_loop_common.github._pace import WritePacing
    from agent_loop_common.github._ratelimit import RateBudget, RateReserve, rate_budget_of
    from agent_loop_common.github._retry import GitHubRetryPolicy
    from agent_loop_common.github._routes import route_writes
    from agent_loop_common.github._stats import NO_RESPONSE, RequestStats

__all__ = [
    "DEFAULT_BASE_URL",
    "NO_RESPONSE",
    "REREAD_HEADERS",
    "AppAuth",
    "AuthError",
    "BodyHistory",
    "BodyRevision",
    "BranchHead",
    "CheckRun",
    "Comment",
    "CommitProvenance",
    "CommitStatus",
    "Conflict",
    "ETagCache",
    "Edit",
    "GitCommit",
    "GitHub",
    "GitHubError",
    "GitHubOffline",
    "GitHubRetryPolicy",
    "GitHubUnavailable",
    "GitTree",
    "Issue",
    "IssueEvent",
    "MergedPull",
    "NewBranch",
    "NotFastForward",
    "NotFound",
    "OfflineTransport",
    "PathCommit",
    "PolledRead",
    "PullFile",
    "PullHistory",
    "PullLinks",
    "PullRequest",
    "RateBudget",
    "RateLimited",
    "RateReserve",
    "Reaction",
    "ReadLog",
    "RefExists",
    "Repository",
    "RequestStats",
    "Review",
    "ReviewComment",
    "TokenAuth",
    "TreeEntry",
    "Unprocessable",
    "User",
    "WritePacing",
    "github_auth",
    "rate_budget_of",
    "route_writes",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
