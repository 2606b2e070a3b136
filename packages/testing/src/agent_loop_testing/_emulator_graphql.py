"""`POST /graphql`: the corner of GitHub's GraphQL API that REST cannot answer.

REST shows who wrote an issue or comment, not who last rewrote it; GitHub's GraphQL API
does (`lastEditedAt`, `editor { login }`), and the trust checks need it. This module
parses real GraphQL (operations, variables with types, aliases, inline fragments,
`__typename`) and resolves a small schema over the emulator's state:

```graphql
type Query { repository(owner: String!, name: String!): Repository
             node(id: ID!): Node   viewer: User! }
type Repository { id name nameWithOwner isPrivate defaultBranchRef: Ref issue(number: Int!): Issue
                  pullRequest(number: Int!): PullRequest
                  issueOrPullRequest(number: Int!): IssueOrPullRequest }
Issue, PullRequest, IssueComment, PullRequestReviewComment {
  id databaseId body createdAt updatedAt lastEditedAt author { login } editor { login }
  includesCreatedEdit userContentEdits(first: Int, last: Int) { totalCount nodes {
    id createdAt updatedAt editedAt deletedAt deletedBy { login } diff editor { login } } }
  # Issue and PullRequest also: number title
}
type Ref { name prefix target: Commit }   type Commit { oid abbreviatedOid message tree { oid } }
PullRequest also: reviewThreads(first: Int) { totalCount nodes { id isResolved resolvedBy } }
                  commits(first: Int) { totalCount nodes { commit: Commit } }  mergeCommit: Commit
                  closingIssuesReferences(first: Int) { totalCount nodes { Issue } }
                  merged mergedAt mergedBy { login } baseRefName headRefName state
Issue and PullRequest also: repository: Repository
Repository also: isPrivate diskUsage  object(oid: GitObjectID): GitObject (a commit)
Commit also: associatedPullRequests(first: Int) { totalCount nodes: PullRequest }
             signature: GitSignature (a GpgSignature, null when unsigned)
GitSignature { email isValid state signer { login } wasSignedByGitHub signature payload
               verifiedAt }   GpgSignature also: keyId
```

Answers have GitHub's shape: `{"data": ...}`, with `NOT_FOUND` errors (and a `null`)
for a missing object, and `{"errors": [...]}` without data for a query that does not
parse or names a field or variable wrongly. Anything outside this schema is such an
error: a test that needs more should extend the schema here. Two mutations are served,
`createRef` and `createCommitOnBranch` (`_emulator_graphql_mutations`), with their
payloads' `Commit` and `Ref`, the root fields of a document run in order; a resolver's `FieldError` becomes a typed field error (`STALE_DATA`, ...) with a
`null` value, as GitHub answers.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

from agent_loop_testing._emulator_errors import ApiError
from agent_loop_testing._emulator_graphql_mutations import (
    FieldError,
    create_commit_on_branch,
    create_ref,
)
from agent_loop_testing._emulator_graphql_parse import (
    FieldNode,
    FragmentNode,
    Operation,
    Parser,
    QueryFailure,
    Var,
)
from agent_loop_testing._emulator_http import Ctx, Reply, Route
from agent_loop_testing._emulator_ops_pulls import associated_pulls, closing_issues, pull_commits
from agent_loop_testing._emulator_render import Json, node_id, ts
from agent_loop_testing._emulator_signing import Verification, key_of, verify
from agent_loop_testing._emulator_state import (
    CommentRec,
    EditRec,
    IssueRec,
    PullRec,
    ReviewCommentRec,
    State,
    UserRec,
)

__all__ = ["GHES_GRAPHQL_PATH", "ROUTES", "execute"]

GHES_GRAPHQL_PATH = "/api/graphql"
"""Where GitHub Enterprise Server serves GraphQL (not under `/api/v3`)."""

_DOCS = "https://docs.github.com/graphql"

# ---------------------------------------------------------------- the schema

Obj = tuple[str, object]
"""A resolved object: its GraphQL type name and the record behind it."""


@dataclass(frozen=True)
class FieldNodeDef:
    returns: str
    """`scalar`, or the object type (`Actor`, `Repository`...) it resolves to."""
    resolve: Callable[[State, object, Mapping[str, object]], object]
    args: Mapping[str, str] = field(default_factory=dict[str, str])
    """Argument name -> type as written (`Int!`)."""
    not_found: str = ""
    """Message of the `NOT_FOUND` error when the resolver returns `None`."""


def _edit_of(record: object) -> EditRec | None:
    edits = cast("IssueRec | CommentRec | ReviewCommentRec", record).edits
    return edits[-1] if edits else None


def _actor(st: State, login: str | None) -> Obj | None:
    if login is None or login not in st.users:
        return None
    user = st.users[login]
    return ("Bot" if user.type == "Bot" else "User", user)


def _content_fields(kind: Callable[[object], str]) -> dict[str, FieldNodeDef]:
    """Fields every body-carrying object has (GitHub's `Comment` interface and `Node`)."""

    def record(obj: object) -> IssueRec | CommentRec | ReviewCommentRec:
        return cast("IssueRec | CommentRec | ReviewCommentRec", obj)

    def last_edited(st: State, obj: object, args: Mapping[str, object]) -> object:
        edit = _edit_of(obj)
        return None if edit is None else ts(edit.edited_at)

    def editor(st: State, obj: object, args: Mapping[str, object]) -> object:
        edit = _edit_of(obj)
        return None if edit is None else _actor(st, edit.editor)

    def history(st: State, obj: object, args: Mapping[str, object]) -> object:
        rec = record(obj)
        base = 1000 * rec.id
        # Newest first, as GitHub lists them; the oldest is the text as created.
        revisions = [(base + k, e) for k, e in enumerate(rec.edits)][::-1]
        return (
            "UserContentEditConnection",
            _window(list[object](revisions), args, "userContentEdits"),
        )

    return {
        "id": FieldNodeDef("scalar", lambda st, o, a: node_id(kind(o), record(o).id)),
        "databaseId": FieldNodeDef("scalar", lambda st, o, a: record(o).id),
        "body": FieldNodeDef("scalar", lambda st, o, a: record(o).body or ""),
        "createdAt": FieldNodeDef("scalar", lambda st, o, a: ts(record(o).created_at)),
        "updatedAt": FieldNodeDef("scalar", lambda st, o, a: ts(record(o).updated_at)),
        "lastEditedAt": FieldNodeDef("scalar", last_edited),
        "author": FieldNodeDef("Actor", lambda st, o, a: _actor(st, record(o).author)),
        "editor": FieldNodeDef("Actor", editor),
        "includesCreatedEdit": FieldNodeDef("scalar", lambda st, o, a: bool(record(o).edits)),
        "userContentEdits": FieldNodeDef(
            "UserContentEditConnection", history, {"first": "Int", "last": "Int"}
        ),
    }


def _revision(obj: object) -> EditRec:
    return cast("tuple[int, EditRec]", obj)[1]


_REVISION_FIELDS = {
    "id": FieldNodeDef(
        "scalar", lambda st, o, a: node_id("UCE", cast("tuple[int, EditRec]", o)[0])
    ),
    "createdAt": FieldNodeDef("scalar", lambda st, o, a: ts(_revision(o).edited_at)),
    "updatedAt": FieldNodeDef(
        "scalar", lambda st, o, a: ts(_revision(o).deleted_at or _revision(o).edited_at)
    ),
    "editedAt": FieldNodeDef("scalar", lambda st, o, a: ts(_revision(o).edited_at)),
    "deletedAt": FieldNodeDef(
        "scalar", lambda st, o, a: None if (t := _revision(o).deleted_at) is None else ts(t)
    ),
    "deletedBy": FieldNodeDef("Actor", lambda st, o, a: _actor(st, _revision(o).deleted_by)),
    "diff": FieldNodeDef("scalar", lambda st, o, a: _revision(o).body),
    "editor": FieldNodeDef("Actor", lambda st, o, a: _actor(st, _revision(o).editor)),
}
"""GitHub's `UserContentEdit`: one revision; `diff` holds the whole body it left (what
GitHub answers, though its schema calls it "a summary of the changes"), `null` once the
revision was deleted from the history."""


def _issue_kind(obj: object) -> str:
    return "PR" if cast("IssueRec", obj).pull is not None else "I"


_ISSUE_FIELDS = {
    **_content_fields(_issue_kind),
    "number": FieldNodeDef("scalar", lambda st, o, a: cast("IssueRec", o).number),
    "title": FieldNodeDef("scalar", lambda st, o, a: cast("IssueRec", o).title),
    "repository": FieldNodeDef("Repository", lambda st, o, a: ("Repository", st)),
}


def _by_number(
    want: str,
) -> Callable[[State, object, Mapping[str, object]], object]:
    def resolve(st: State, obj: object, args: Mapping[str, object]) -> object:
        issue = st.issues.get(cast("int", args["number"]))
        if issue is None:
            return None
        typename = "PullRequest" if issue.pull is not None else "Issue"
        return (typename, issue) if want in (typename, "IssueOrPullRequest") else None

    return resolve


def _repository(st: State, obj: object, args: Mapping[str, object]) -> object:
    owner, name = str(args["owner"]), str(args["name"])
    if (owner.lower(), name.lower()) != (st.owner.lower(), st.name.lower()):
        return None
    return ("Repository", st)


def _node(st: State, obj: object, args: Mapping[str, object]) -> object:
    raw = str(args["id"])
    kind, _, encoded = raw.partition("_")
    try:
        decoded = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True).decode()
        prefix, _, ident_text = decoded.partition(":")
        ident = int(ident_text)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if prefix != kind:
        return None
    if kind in ("I", "PR"):
        issue = next((i for i in st.issues.values() if i.id == ident), None)
        if issue is None or _issue_kind(issue) != kind:
            return None
        return ("PullRequest" if kind == "PR" else "Issue", issue)
    if kind == "IC" and ident in st.comments:
        return ("IssueComment", st.comments[ident])
    if kind == "PRRC" and ident in st.review_comments:
        return ("PullRequestReviewComment", st.review_comments[ident])
    return None


def _payload(obj: object) -> dict[str, object]:
    return cast("dict[str, object]", obj)


def _commit_message(st: State, sha: str) -> str:
    commit = st.git.commit(sha)
    return commit.message.decode() if commit is not None else ""


def _default_ref(st: State) -> Obj | None:
    name = f"refs/heads/{st.default_branch}"
    return ("Ref", name) if name in st.git.refs else None


def _disk_usage(st: State) -> int:
    """Kilobytes of every object, compressed as a pack stores them (GitHub's `diskUsage`)."""
    store = st.git.objects
    return sum(len(zlib.compress(store[oid].as_raw_string())) for oid in store) // 1024


def _ref_target(st: State, name: str) -> Obj | None:
    sha = st.git.refs.get(name)
    return None if sha is None else ("Commit", sha)


_NUMBER = {"number": "Int!"}
_FIRST = {"first": "Int"}


def _connection(node: str) -> dict[str, FieldNodeDef]:
    """A connection over a list already cut to `first` (`totalCount` counts them all)."""

    def page(o: object) -> tuple[list[object], int]:
        return cast("tuple[list[object], int]", o)

    return {
        "totalCount": FieldNodeDef("scalar", lambda st, o, a: page(o)[1]),
        "nodes": FieldNodeDef(node, lambda st, o, a: [(node, item) for item in page(o)[0]]),
    }


def _window(items: list[object], args: Mapping[str, object], name: str) -> tuple[list[object], int]:
    """`first` or `last` of `items` (one of them, 1 to 100, as GitHub insists)."""
    first, last = args.get("first"), args.get("last")
    if first is None and last is None:
        raise FieldError(
            "MISSING_PAGINATION_BOUNDARIES",
            f"You must provide a `first` or `last` value to properly paginate the `{name}` "
            "connection.",
        )
    if first is not None and last is not None:
        raise FieldError(
            "ARGUMENT_LIMIT",
            f"Passing both `first` and `last` to paginate the `{name}` connection is not "
            "supported.",
        )
    count = first if first is not None else last
    if not isinstance(count, int) or not 1 <= count <= 100:
        raise FieldError("ARGUMENT_LIMIT", "Requesting 1 to 100 records is allowed.")
    return (items[:count] if first is not None else items[-count:]), len(items)


def _first(items: list[object], args: Mapping[str, object]) -> tuple[list[object], int]:
    first = args.get("first")
    if not isinstance(first, int) or not 1 <= first <= 100:
        raise FieldError("ARGUMENT_LIMIT", "Requesting 1 to 100 records is allowed (first).")
    return items[:first], len(items)


def _thread(obj: object) -> ReviewCommentRec:
    return cast("ReviewCommentRec", obj)


def _threads(st: State, obj: object, args: Mapping[str, object]) -> tuple[list[object], int]:
    """A PR's review threads: its review comments that reply to none, oldest first."""
    number = cast("IssueRec", obj).number
    roots = [c for c in st.review_comments.values() if c.pull == number and c.in_reply_to is None]
    roots.sort(key=lambda c: c.id)
    return _first(list[object](roots), args)


def _pull_commits(st: State, obj: object, args: Mapping[str, object]) -> tuple[list[object], int]:
    pull = cast("IssueRec", obj).pull
    assert pull is not None
    return _first(list[object](pull_commits(st, pull)), args)


def _closing_issues(st: State, obj: object, args: Mapping[str, object]) -> tuple[list[object], int]:
    return _first(list[object](closing_issues(st, cast("IssueRec", obj))), args)


def _merge_commit(st: State, obj: object, args: Mapping[str, object]) -> object:
    pull = cast("IssueRec", obj).pull
    sha = pull.merge_commit_sha if pull is not None else None
    return ("Commit", sha) if sha else None


def _object(st: State, obj: object, args: Mapping[str, object]) -> object:
    """`Repository.object(oid:)`: a commit by its full sha (`null` when there is none)."""
    oid = str(args.get("oid") or "").lower()
    return ("Commit", oid) if st.git.commit(oid) is not None else None


def _associated(st: State, obj: object, args: Mapping[str, object]) -> object:
    return _first(list[object](associated_pulls(st, str(obj))), args)


def _signature(st: State, obj: object, args: Mapping[str, object]) -> object:
    """`Commit.signature`: `null` for an unsigned commit."""
    commit = st.git.commit(str(obj))
    if commit is None or not commit.gpgsig:
        return None
    return ("GpgSignature", verify(st, commit))


def _verification(obj: object) -> Verification:
    return cast("Verification", obj)


def _key_id(v: Verification) -> str | None:
    return key_of(v.signature) or None


def _pull_rec(obj: object) -> PullRec:
    pull = cast("IssueRec", obj).pull
    assert pull is not None
    return pull


def _pull_state(obj: object) -> str:
    if _pull_rec(obj).merged_at is not None:
        return "MERGED"
    return cast("IssueRec", obj).state.upper()


_SIGNATURE_FIELDS = {
    "email": FieldNodeDef("scalar", lambda st, o, a: _verification(o).email),
    "isValid": FieldNodeDef("scalar", lambda st, o, a: _verification(o).verified),
    "state": FieldNodeDef("scalar", lambda st, o, a: _verification(o).state),
    "signer": FieldNodeDef(
        "User",
        lambda st, o, a: None if (u := _verification(o).signer) is None else ("User", u),
    ),
    "wasSignedByGitHub": FieldNodeDef("scalar", lambda st, o, a: _verification(o).by_github),
    "signature": FieldNodeDef("scalar", lambda st, o, a: _verification(o).signature),
    "payload": FieldNodeDef("scalar", lambda st, o, a: _verification(o).payload),
    "verifiedAt": FieldNodeDef(
        "scalar",
        lambda st, o, a: None if (t := _verification(o).verified_at) is None else ts(t),
    ),
}


_SCHEMA: dict[str, dict[str, FieldNodeDef]] = {
    "Query": {
        "repository": FieldNodeDef(
            "Repository",
            _repository,
            {"owner": "String!", "name": "String!"},
            "Could not resolve to a Repository with the name '{owner}/{name}'.",
        ),
        "node": FieldNodeDef(
            "Node", _node, {"id": "ID!"}, "Could not resolve to a node with the global id of '{id}'"
        ),
        "viewer": FieldNodeDef("User", lambda st, o, a: _actor(st, cast("UserRec", o).login)),
    },
    "Repository": {
        "id": FieldNodeDef("scalar", lambda st, o, a: node_id("R", cast("State", o).repo_id)),
        "name": FieldNodeDef("scalar", lambda st, o, a: cast("State", o).name),
        "nameWithOwner": FieldNodeDef("scalar", lambda st, o, a: cast("State", o).full_name),
        "isPrivate": FieldNodeDef("scalar", lambda st, o, a: cast("State", o).private),
        "defaultBranchRef": FieldNodeDef("Ref", lambda st, o, a: _default_ref(cast("State", o))),
        "diskUsage": FieldNodeDef("scalar", lambda st, o, a: _disk_usage(cast("State", o))),
        "issue": FieldNodeDef(
            "Issue",
            _by_number("Issue"),
            _NUMBER,
            "Could not resolve to an Issue with the number of {number}.",
        ),
        "pullRequest": FieldNodeDef(
            "PullRequest",
            _by_number("PullRequest"),
            _NUMBER,
            "Could not resolve to a PullRequest with the number of {number}.",
        ),
        "issueOrPullRequest": FieldNodeDef(
            "IssueOrPullRequest",
            _by_number("IssueOrPullRequest"),
            _NUMBER,
            "Could not resolve to an issue or pull request with the number of {number}.",
        ),
        "object": FieldNodeDef("GitObject", _object, {"oid": "GitObjectID"}),
    },
    "Mutation": {
        "createRef": FieldNodeDef(
            "CreateRefPayload",
            lambda st, o, a: create_ref(st, cast("UserRec", o), a),
            {"input": "CreateRefInput!"},
        ),
        "createCommitOnBranch": FieldNodeDef(
            "CreateCommitOnBranchPayload",
            lambda st, o, a: create_commit_on_branch(st, cast("UserRec", o), a),
            {"input": "CreateCommitOnBranchInput!"},
        ),
    },
    "CreateRefPayload": {
        "clientMutationId": FieldNodeDef(
            "scalar", lambda st, o, a: _payload(o)["clientMutationId"]
        ),
        "ref": FieldNodeDef("Ref", lambda st, o, a: ("Ref", _payload(o)["ref"])),
    },
    "CreateCommitOnBranchPayload": {
        "clientMutationId": FieldNodeDef(
            "scalar", lambda st, o, a: _payload(o)["clientMutationId"]
        ),
        "commit": FieldNodeDef("Commit", lambda st, o, a: ("Commit", _payload(o)["commit"])),
        "ref": FieldNodeDef("Ref", lambda st, o, a: ("Ref", _payload(o)["ref"])),
    },
    "Commit": {
        "oid": FieldNodeDef("scalar", lambda st, o, a: o),
        "abbreviatedOid": FieldNodeDef("scalar", lambda st, o, a: str(o)[:7]),
        "message": FieldNodeDef("scalar", lambda st, o, a: _commit_message(st, str(o))),
        "tree": FieldNodeDef("Tree", lambda st, o, a: ("Tree", st.git.commit_tree(str(o)))),
        "associatedPullRequests": FieldNodeDef(
            "PullRequestConnection",
            lambda st, o, a: ("PullRequestConnection", _associated(st, o, a)),
            _FIRST,
        ),
        "signature": FieldNodeDef("GitSignature", _signature),
    },
    "GpgSignature": {
        **_SIGNATURE_FIELDS,
        "keyId": FieldNodeDef("scalar", lambda st, o, a: _key_id(_verification(o))),
    },
    "PullRequestConnection": _connection("PullRequest"),
    "Tree": {"oid": FieldNodeDef("scalar", lambda st, o, a: o)},
    "Ref": {
        "name": FieldNodeDef("scalar", lambda st, o, a: str(o).split("/", 2)[-1]),
        "prefix": FieldNodeDef("scalar", lambda st, o, a: str(o).rsplit("/", 1)[0] + "/"),
        "target": FieldNodeDef("Commit", lambda st, o, a: _ref_target(st, str(o))),
    },
    "Issue": _ISSUE_FIELDS,
    "PullRequest": {
        **_ISSUE_FIELDS,
        "reviewThreads": FieldNodeDef(
            "PullRequestReviewThreadConnection",
            lambda st, o, a: ("PullRequestReviewThreadConnection", _threads(st, o, a)),
            _FIRST,
        ),
        "commits": FieldNodeDef(
            "PullRequestCommitConnection",
            lambda st, o, a: ("PullRequestCommitConnection", _pull_commits(st, o, a)),
            _FIRST,
        ),
        "mergeCommit": FieldNodeDef("Commit", _merge_commit),
        "closingIssuesReferences": FieldNodeDef(
            "IssueConnection",
            lambda st, o, a: ("IssueConnection", _closing_issues(st, o, a)),
            _FIRST,
        ),
        "merged": FieldNodeDef("scalar", lambda st, o, a: _pull_rec(o).merged_at is not None),
        "mergedAt": FieldNodeDef(
            "scalar",
            lambda st, o, a: None if (t := _pull_rec(o).merged_at) is None else ts(t),
        ),
        "mergedBy": FieldNodeDef("Actor", lambda st, o, a: _actor(st, _pull_rec(o).merged_by)),
        "baseRefName": FieldNodeDef("scalar", lambda st, o, a: _pull_rec(o).base_ref),
        "headRefName": FieldNodeDef("scalar", lambda st, o, a: _pull_rec(o).head_ref),
        "state": FieldNodeDef("scalar", lambda st, o, a: _pull_state(o)),
    },
    "IssueConnection": _connection("Issue"),
    "PullRequestReviewThreadConnection": _connection("PullRequestReviewThread"),
    "PullRequestReviewThread": {
        "id": FieldNodeDef("scalar", lambda st, o, a: node_id("PRRT", _thread(o).id)),
        "isResolved": FieldNodeDef("scalar", lambda st, o, a: _thread(o).resolved_by is not None),
        "resolvedBy": FieldNodeDef("Actor", lambda st, o, a: _actor(st, _thread(o).resolved_by)),
    },
    "PullRequestCommitConnection": _connection("PullRequestCommit"),
    "PullRequestCommit": {"commit": FieldNodeDef("Commit", lambda st, o, a: ("Commit", o))},
    "UserContentEditConnection": _connection("UserContentEdit"),
    "UserContentEdit": _REVISION_FIELDS,
    "IssueComment": _content_fields(lambda o: "IC"),
    "PullRequestReviewComment": _content_fields(lambda o: "PRRC"),
    "User": {"login": FieldNodeDef("scalar", lambda st, o, a: cast("UserRec", o).login)},
    "Bot": {"login": FieldNodeDef("scalar", lambda st, o, a: cast("UserRec", o).login)},
}
_INTERFACES: dict[str, frozenset[str]] = {
    "Commit": frozenset({"Node", "GitObject"}),
    "Tree": frozenset({"Node", "GitObject"}),
    "Ref": frozenset({"Node"}),
    "Issue": frozenset({"Node", "Comment", "UpdatableComment", "IssueOrPullRequest"}),
    "PullRequest": frozenset({"Node", "Comment", "UpdatableComment", "IssueOrPullRequest"}),
    "PullRequestReviewThread": frozenset({"Node"}),
    "IssueComment": frozenset({"Node", "Comment", "UpdatableComment"}),
    "PullRequestReviewComment": frozenset({"Node", "Comment", "UpdatableComment"}),
    "User": frozenset({"Node", "Actor"}),
    "Bot": frozenset({"Node", "Actor"}),
    "Repository": frozenset({"Node"}),
    "UserContentEdit": frozenset({"Node"}),
    "GpgSignature": frozenset({"GitSignature"}),
}
# Abstract types and the fields every member shares.
_ABSTRACT_FIELDS = {
    "Actor": _SCHEMA["User"],
    "Node": {"id": _ISSUE_FIELDS["id"]},
    "IssueOrPullRequest": {},
    "GitObject": {"oid": FieldNodeDef("scalar", lambda st, o, a: o)},
    "GitSignature": _SIGNATURE_FIELDS,
}


# ---------------------------------------------------------------- execution


@dataclass
class _Run:
    st: State
    viewer: UserRec
    variables: Mapping[str, object]
    errors: list[Json] = field(default_factory=list[Json])

    def arguments(
        self, f: FieldNode, spec: Mapping[str, str], path: list[str | int]
    ) -> dict[str, object]:
        for name in f.args:
            if name not in spec:
                raise QueryFailure(
                    f"Field '{f.name}' doesn't accept argument '{name}'",
                    f.line,
                    f.column,
                    path=path,
                    extensions={"code": "argumentNotAccepted", "name": f.name, "typeName": "Field"},
                )
        out: dict[str, object] = {}
        for name, type_text in spec.items():
            raw = f.args.get(name)
            value = self.variables.get(raw.name) if isinstance(raw, Var) else raw
            if value is None and type_text.endswith("!"):
                raise QueryFailure(
                    f"Field '{f.name}' is missing required arguments: {name}",
                    f.line,
                    f.column,
                    path=path,
                    extensions={
                        "code": "missingRequiredArguments",
                        "className": "Field",
                        "name": f.name,
                        "arguments": name,
                    },
                )
            out[name] = value
        return out

    def select(
        self, obj: Obj, selections: list[FieldNode | FragmentNode], path: list[str | int]
    ) -> Json:
        typename, record = obj
        out: Json = {}
        for sel in selections:
            if isinstance(sel, FragmentNode):
                condition = sel.type_condition
                if (
                    condition is None
                    or condition == typename
                    or condition in _INTERFACES.get(typename, frozenset())
                ):
                    out.update(self.select(obj, sel.selections, path))
                continue
            out[sel.alias] = self.resolve(typename, record, sel, [*path, sel.alias])
        return out

    def resolve(self, typename: str, record: object, f: FieldNode, path: list[str | int]) -> object:
        if f.name == "__typename":
            return typename
        fields = _SCHEMA.get(typename) or _ABSTRACT_FIELDS.get(typename, {})
        spec = fields.get(f.name)
        if spec is None:
            raise QueryFailure(
                f"Field '{f.name}' doesn't exist on type '{typename}'",
                f.line,
                f.column,
                path=path,
                extensions={"code": "undefinedField", "typeName": typename, "fieldName": f.name},
            )
        if spec.returns == "scalar" and f.selections is not None:
            raise QueryFailure(
                f"Selections can't be made on scalars (field '{f.name}' returns a scalar but "
                "has selections)",
                f.line,
                f.column,
                path=path,
            )
        if spec.returns != "scalar" and f.selections is None:
            raise QueryFailure(
                f"Field must have selections (field '{f.name}' returns {spec.returns} but has "
                "no selections. Did you mean '{f.name} {{ ... }}'?)",
                f.line,
                f.column,
                path=path,
            )
        args = self.arguments(f, spec.args, path)
        # Root fields see the viewer; every other field sees its parent's record.
        root = typename in ("Query", "Mutation")
        try:
            value = spec.resolve(self.st, self.viewer if root else record, args)
        except FieldError as error:
            self.errors.append(
                {
                    "type": error.kind,
                    "path": path,
                    "locations": [{"line": f.line, "column": f.column}],
                    "message": error.message,
                }
            )
            return None
        if value is None:
            if spec.not_found:
                self.errors.append(
                    {
                        "type": "NOT_FOUND",
                        "path": path,
                        "locations": [{"line": f.line, "column": f.column}],
                        "message": spec.not_found.format(**args),
                    }
                )
            return None
        if spec.returns == "scalar":
            return value
        assert f.selections is not None
        if isinstance(value, list):  # a connection's `nodes`
            items = cast("list[Obj]", value)
            return [self.select(v, f.selections, [*path, i]) for i, v in enumerate(items)]
        return self.select(cast("Obj", value), f.selections, path)


def _check_variables(op: Operation, given: Mapping[str, object]) -> dict[str, object]:
    values: dict[str, object] = {}
    for name, (type_text, default) in op.variables.items():
        value = given.get(name, default)
        base = type_text.rstrip("!")
        valid = value is not None or not type_text.endswith("!")
        if value is not None:
            if base == "Int":
                valid = isinstance(value, int) and not isinstance(value, bool)
            elif base in ("String", "ID"):
                valid = isinstance(value, str) or (base == "ID" and isinstance(value, int))
            elif base == "Boolean":
                valid = isinstance(value, bool)
        if not valid:
            raise QueryFailure(
                f"Variable ${name} of type {type_text} was provided invalid value",
                extensions={
                    "value": value,
                    "problems": [
                        {
                            "path": [],
                            "explanation": "Expected value to not be null"
                            if value is None
                            else f"Could not coerce value {json.dumps(value)} to {base}",
                        }
                    ],
                },
            )
        values[name] = value
    return values


def _used_variables(selections: list[FieldNode | FragmentNode]) -> set[str]:
    used: set[str] = set()
    for sel in selections:
        if isinstance(sel, FragmentNode):
            used |= _used_variables(sel.selections)
            continue
        for value in sel.args.values():
            if isinstance(value, Var):
                used.add(value.name)
        if sel.selections:
            used |= _used_variables(sel.selections)
    return used


def execute(st: State, viewer: UserRec, request: Json) -> Json:
    """Run one GraphQL request body (`query`, `variables`, `operationName`)."""
    query = request.get("query")
    if not isinstance(query, str) or not query.strip():
        return {
            "errors": [{"message": "A query attribute must be specified and must be a string."}]
        }
    variables: object = request.get("variables") or {}
    if not isinstance(variables, dict):
        return {"errors": [{"message": "Variables are invalid JSON."}]}
    try:
        operations = Parser(query).document()
        wanted = request.get("operationName")
        op = next((o for o in operations if o.name == wanted), None) if wanted else None
        if op is None:
            if len(operations) > 1:
                raise QueryFailure("An operation name is required")
            op = operations[0]
        if op.kind not in ("query", "mutation"):
            raise QueryFailure(
                f"The emulator answers queries and mutations, not a {op.kind}",
                extensions={"code": "unsupportedOperation"},
            )
        undeclared = sorted(_used_variables(op.selections) - set(op.variables))
        if undeclared:
            raise QueryFailure(
                f"Variable ${undeclared[0]} is used by {op.name or 'anonymous query'} but not "
                "declared",
                extensions={"code": "variableNotDefined", "variableName": undeclared[0]},
            )
        run = _Run(st, viewer, _check_variables(op, cast("dict[str, object]", variables)))
        data = run.select(
            ("Mutation" if op.kind == "mutation" else "Query", None), op.selections, []
        )
    except QueryFailure as failure:
        return {"errors": [failure.error]}
    return {"data": data, "errors": run.errors} if run.errors else {"data": data}


def graphql(st: State, ctx: Ctx) -> Reply:
    if ctx.user is None:
        raise ApiError(401, "This endpoint requires you to be authenticated.")
    try:
        request: object = json.loads(ctx.body or b"null")
    except ValueError:
        request = None
    if not isinstance(request, dict):
        return Reply(200, {"errors": [{"message": "Problems parsing JSON"}]})
    return Reply(200, execute(st, ctx.user, cast("Json", request)))


ROUTES = [Route("POST", "/graphql", graphql, f"{_DOCS}/guides/forming-calls-with-graphql")]
