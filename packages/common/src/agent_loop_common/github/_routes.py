"""Map request URLs to GitHub route templates, and say what each route tolerates.

The transports below githubkit only see URLs. Stats need a low-cardinality key
(`GET /repos/{owner}/{repo}/issues/{issue_number}`, not one key per issue), the retry
layer needs to know whether repeating a request can duplicate an effect, and the ETag
layer needs to know which reads are polled. All three questions are answered here, from
one table of the routes the facade uses.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import httpx

_R = "/repos/{owner}/{repo}"

# Routes the facade (and githubkit's App auth) calls. `{name+}` spans slashes
# (refs like `heads/feature/x`, file paths); `{..._number}` and `{..._id}` are digits.
ROUTES: tuple[str, ...] = (
    "/graphql",
    "/user",
    "/app",
    "/users/{username}",
    "/app/installations/{installation_id}/access_tokens",
    f"{_R}/installation",
    _R,
    f"{_R}/issues",
    f"{_R}/issues/comments/{{comment_id}}",
    f"{_R}/issues/comments/{{comment_id}}/reactions",
    f"{_R}/issues/{{issue_number}}",
    f"{_R}/issues/{{issue_number}}/comments",
    f"{_R}/issues/{{issue_number}}/labels",
    f"{_R}/issues/{{issue_number}}/labels/{{name}}",
    f"{_R}/issues/{{issue_number}}/events",
    f"{_R}/collaborators/{{username}}/permission",
    f"{_R}/pulls",
    f"{_R}/pulls/{{pull_number}}",
    f"{_R}/pulls/{{pull_number}}/files",
    f"{_R}/pulls/{{pull_number}}/reviews",
    f"{_R}/pulls/{{pull_number}}/comments",
    f"{_R}/pulls/{{pull_number}}/comments/{{comment_id}}/replies",
    f"{_R}/commits",
    f"{_R}/commits/{{ref+}}/check-runs",
    f"{_R}/commits/{{ref+}}/status",
    f"{_R}/git/ref/{{ref+}}",
    f"{_R}/git/matching-refs/{{ref+}}",
    f"{_R}/git/refs",
    f"{_R}/git/refs/{{ref+}}",
    f"{_R}/git/commits",
    f"{_R}/git/commits/{{commit_sha}}",
    f"{_R}/git/trees",
    f"{_R}/git/trees/{{tree_sha+}}",
    f"{_R}/git/blobs",
    f"{_R}/git/blobs/{{file_sha}}",
    f"{_R}/contents/{{path+}}",
    f"{_R}/tarball/{{ref+}}",
)

# POSTs that cannot duplicate anything when repeated: git objects are content-addressed
# (a repeated commit at worst leaves an unreferenced twin), adding a label that is there
# is a no-op, and a second installation token is harmless.
_IDEMPOTENT_POSTS = frozenset(
    t.replace("+}", "}")
    for t in {
        f"{_R}/git/blobs",
        f"{_R}/git/trees",
        f"{_R}/git/commits",
        f"{_R}/issues/{{issue_number}}/labels",
        # GitHub answers an existing reaction by the same user with 200 and that reaction.
        f"{_R}/issues/comments/{{comment_id}}/reactions",
        "/app/installations/{installation_id}/access_tokens",
        # GraphQL queries read (mutations are keyed `GRAPHQL_MUTATION`, not retried blindly).
        "/graphql",
    }
)

GRAPHQL_MUTATION = "/graphql (mutation)"
"""The route key of a GraphQL mutation (`Router.route`): a write, unlike a query. A
document of several mutations is keyed `/graphql (N mutations)`: one request, N writes
(`route_writes`)."""

_LEADING_COMMENTS = re.compile(r"^(?:\s|#[^\n]*\n?)*")
_SEVERAL = re.compile(r"/graphql \((\d+) mutations\)$")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|#[^\n]*|[_A-Za-z][_0-9A-Za-z]*|[{}()]')


def _mutations(request: httpx.Request) -> int:
    """How many mutations a `POST /graphql` body holds: its root fields when the
    operation is a mutation (each one a write, run in order), else 0 (anything
    unreadable is no mutation)."""
    try:
        query = json.loads(request.content).get("query")
    except (ValueError, AttributeError, httpx.RequestNotRead):
        return 0
    if not isinstance(query, str):
        return 0
    leading = _LEADING_COMMENTS.match(query)
    if not query[leading.end() if leading else 0 :].startswith("mutation"):
        return 0
    return max(1, _root_fields(query))


def _root_fields(query: str) -> int:
    """Root fields of the first operation's selection set (`alias: field` counts once)."""
    braces = parens = fields = 0
    aliased = False
    for match in _TOKEN.finditer(query):
        part = match.group()
        if part.startswith(("#", '"')):
            continue
        if part in ("(", ")"):
            parens += 1 if part == "(" else -1
        elif parens:
            continue
        elif part in ("{", "}"):
            braces += 1 if part == "{" else -1
            if braces == 0:
                return fields
        elif braces == 1:
            if aliased:  # the field an alias names
                aliased = False
            else:
                fields += 1
                aliased = query[match.end() :].lstrip().startswith(":")
    return fields


def route_writes(route: str) -> int:
    """The writes one request of `route` (`"METHOD /template"`, as `RequestStats` keys
    them) makes: none for a read (a GET, a GraphQL query), N for a document of N
    mutations, else one."""
    if route.startswith(("GET ", "HEAD ")) or route == "POST /graphql":
        return 0
    several = _SEVERAL.search(route)
    return int(several.group(1)) if several else 1


_WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
_NOT_CONTENT = frozenset({"/graphql", "/app/installations/{installation_id}/access_tokens"})
"""Write-method routes that create no content on GitHub."""


# Reads that agents repeat from run to run: worth a conditional request (a 304 is free).
# The identity (`/user`, or an App's `/app`, installation and bot user) is asked once
# per run, and permissions once per person per run: as conditional reads, an idle tick
# after the first costs no rate limit at all. A file's history (`/commits?path=`) and a
# branch's head (`/git/matching-refs/heads/x`) are how the distiller notices an edit of
# the lessons section, or of its pull request's branch, on an otherwise idle tick.
POLLED_READS = frozenset(
    t.replace("+}", "}")
    for t in {
        "/user",
        "/app",
        "/users/{username}",
        f"{_R}/installation",
        f"{_R}/collaborators/{{username}}/permission",
        f"{_R}/issues",
        f"{_R}/issues/{{issue_number}}/comments",
        f"{_R}/issues/{{issue_number}}/events",
        f"{_R}/pulls",
        f"{_R}/pulls/{{pull_number}}/reviews",
        f"{_R}/pulls/{{pull_number}}/comments",
        f"{_R}/commits",
        f"{_R}/git/matching-refs/{{ref+}}",
        f"{_R}/commits/{{ref+}}/check-runs",
        f"{_R}/commits/{{ref+}}/status",
    }
)

_PARAM = re.compile(r"\{(\w+)(\+?)\}")
_DIGITS = re.compile(r"^\d+$")
_SHA = re.compile(r"^[0-9a-f]{40}$")


def _compile(template: str) -> re.Pattern[str]:
    out: list[str] = []
    pos = 0
    for match in _PARAM.finditer(template):
        out.append(re.escape(template[pos : match.start()]))
        name, greedy = match.group(1), match.group(2)
        if greedy:
            out.append(".+")
        elif name.endswith(("_number", "_id")):
            out.append(r"\d+")
        else:
            out.append("[^/]+")
        pos = match.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out))


_COMPILED = tuple((_compile(t), t.replace("+}", "}")) for t in ROUTES)


@dataclass(frozen=True)
class Router:
    """Route templates relative to one API base URL (GHES serves under `/api/v3/`)."""

    base_url: httpx.URL

    def template(self, url: httpx.URL) -> str:
        """The route template of `url`, e.g. `/repos/{owner}/{repo}/pulls/{pull_number}`.

        Unknown paths keep their shape with digits and SHAs masked, and URLs on another
        host (the archive redirect to codeload) are keyed by host alone, so the stats
        never grow one key per object.
        """
        if url.host != self.base_url.host:
            return f"//{url.host}/..."
        # The raw path keeps `%2F` inside a label name or ref from splitting segments.
        path = url.raw_path.decode("ascii").split("?", 1)[0]
        prefix = self.base_url.path.rstrip("/")
        if prefix.endswith("/api/v3") and path == prefix.removesuffix("/v3") + "/graphql":
            return "/graphql"  # GHES serves GraphQL at /api/graphql, beside /api/v3
        if prefix and path.startswith(prefix + "/"):
            path = path[len(prefix) :]
        path = path.rstrip("/") or "/"
        for pattern, template in _COMPILED:
            if pattern.fullmatch(path):
                return template
        parts = [
            "{n}" if _DIGITS.match(p) else "{sha}" if _SHA.match(p) else p for p in path.split("/")
        ]
        return "/".join(parts)

    def route(self, request: httpx.Request) -> str:
        """The template of `request`, with GraphQL mutations told apart from queries.

        Both are `POST /graphql`, but a query reads and a mutation writes: the retry,
        pacing and stats layers key on `GRAPHQL_MUTATION` for the latter.
        """
        template = self.template(request.url)
        if template == "/graphql":
            mutations = _mutations(request)
            if mutations == 1:
                return GRAPHQL_MUTATION
            if mutations > 1:
                return f"/graphql ({mutations} mutations)"
        return template

    def is_idempotent(self, method: str, template: str) -> bool:
        """Whether repeating this request after an ambiguous failure is harmless.

        GET/HEAD/PUT/DELETE/PATCH set state rather than add to it. A POST that creates
        an issue, comment, pull request, review reply or ref is not: after a timeout or
        a 5xx GitHub may already have acted, and a blind retry would post twice (or, for
        a claim ref, turn our own success into a 422 "already exists").
        """
        return method.upper() != "POST" or template in _IDEMPOTENT_POSTS

    def is_content_write(self, method: str, template: str) -> bool:
        """Whether GitHub counts this request against its content-creation limits.

        GitHub's secondary limits cap "content-generating" requests (POST, PATCH, PUT,
        DELETE) per minute and per hour. GraphQL queries and minting an installation
        token create nothing, so they are not paced; mutations (`GRAPHQL_MUTATION`) are.
        """
        return method.upper() in _WRITE_METHODS and template not in _NOT_CONTENT

    def is_polled(self, method: str, template: str) -> bool:
        """Whether this read goes through the ETag cache."""
        return method.upper() == "GET" and template in POLLED_READS
