"""GraphQL mutations of the emulator: `createRef` and `createCommitOnBranch`, as GitHub's
schema has them.

```graphql
type Mutation {
  createRef(input: CreateRefInput!): CreateRefPayload
  createCommitOnBranch(input: CreateCommitOnBranchInput!): CreateCommitOnBranchPayload
}
input CreateRefInput {
  repositoryId: ID!                    # the repository's node id (`Repository.id`)
  name: String!                        # fully qualified: `refs/heads/x`
  oid: GitObjectID!
  clientMutationId: String
}
type CreateRefPayload { clientMutationId: String  ref: Ref }
input CreateCommitOnBranchInput {
  branch: CommittableBranch!           # {repositoryNameWithOwner, branchName} or {id}
  expectedHeadOid: GitObjectID!        # the compare-and-swap: the branch must point here
  message: CommitMessage!              # {headline!, body}
  fileChanges: FileChanges             # {additions [{path, contents (base64)}], deletions [{path}]}
  clientMutationId: String
}
type CreateCommitOnBranchPayload { clientMutationId: String  commit: Commit  ref: Ref }
```

What GitHub does and this does too: the commit goes on top of the branch head and moves
the branch only if the head is `expectedHeadOid` (else a `STALE_DATA` error, "Expected
branch to point to ... but it did not. Pull and try again.", and nothing is written);
the branch must exist (the mutation never creates one); the author is the viewer, the
committer and signer GitHub itself (web-flow, verified); an added file is a regular file (mode `100644`) even where an executable
stood, which is why the facade commits changes to executables through the git data API;
deleting a path that is not there is refused. Errors are field errors (`data` carries a
`null` payload), as GitHub answers them. The root fields of one mutation document run
one after another, each on what the ones before it left, and one field's error does not
stop the next: so `createRef` then `createCommitOnBranch` on the new branch is one
request, and a `createRef` refused because the ref exists still lets the commit try the
existing branch (its `expectedHeadOid` decides).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import cast

from agent_loop_testing._emulator_git import MODE_FILE, TreeWrite, type_of_mode
from agent_loop_testing._emulator_refname import is_valid_ref_name
from agent_loop_testing._emulator_render import Json, node_id
from agent_loop_testing._emulator_signing import GITHUB_KEY_ID, armored, web_flow_identity
from agent_loop_testing._emulator_state import State, UserRec

__all__ = ["FieldError", "create_commit_on_branch", "create_ref"]


class FieldError(Exception):
    """A field's error in GitHub's shape (`type`, `message`); its value becomes null."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _input(args: Mapping[str, object], kind: str = "CreateCommitOnBranchInput") -> Json:
    raw = args.get("input")
    if not isinstance(raw, dict):
        raise FieldError("INVALID", f"input must be a {kind} object")
    return cast("Json", raw)


def _required(data: Json, key: str, where: str, mutation: str = "createCommitOnBranch") -> object:
    value = data.get(key)
    if value is None:
        raise FieldError(
            "INVALID",
            f"Argument 'input' on Field '{mutation}' has an invalid value: "
            f"{where}.{key} (Expected value to not be null)",
        )
    return value


def create_ref(st: State, viewer: UserRec, args: Mapping[str, object]) -> object:
    """Resolve `createRef`: a new ref at an existing object; refused when the ref exists
    (so exactly one of two racers creates it, as with REST)."""
    data = _input(args, "CreateRefInput")
    repository = str(_required(data, "repositoryId", "input", "createRef"))
    name = str(_required(data, "name", "input", "createRef"))
    oid = str(_required(data, "oid", "input", "createRef")).lower()
    if repository != node_id("R", st.repo_id):
        raise FieldError(
            "NOT_FOUND", f"Could not resolve to a node with the global id of '{repository}'"
        )
    if not viewer.can("write"):
        raise FieldError("FORBIDDEN", "Resource not accessible by integration")
    if not name.startswith("refs/") or not is_valid_ref_name(name):
        raise FieldError("UNPROCESSABLE", f"{name} is not a valid ref name.")
    git = st.git
    if git.get(oid) is None:
        raise FieldError("UNPROCESSABLE", f"Could not resolve to a GitObject with the oid {oid}.")
    if name in git.refs:
        raise FieldError("UNPROCESSABLE", f'A ref named "{name}" already exists in the repository.')
    if name.startswith("refs/heads/") and git.commit(oid) is None:
        raise FieldError("UNPROCESSABLE", f"{oid} is not a commit.")
    st.tick()
    git.refs[name] = oid
    return ("CreateRefPayload", {"ref": name, "clientMutationId": data.get("clientMutationId")})


def _branch(st: State, data: Json) -> str:
    branch = _required(data, "branch", "input")
    if not isinstance(branch, dict):
        raise FieldError("INVALID", "input.branch must be a CommittableBranch object")
    spec = cast("Json", branch)
    name = spec.get("branchName")
    owner_name = spec.get("repositoryNameWithOwner")
    if not isinstance(name, str) or not isinstance(owner_name, str):
        raise FieldError(
            "INVALID", "input.branch needs repositoryNameWithOwner and branchName (or id)"
        )
    if owner_name.lower() != st.full_name.lower():
        raise FieldError(
            "NOT_FOUND", f"Could not resolve to a Repository with the name '{owner_name}'."
        )
    return name.removeprefix("refs/heads/")


def _files(data: Json) -> tuple[list[tuple[str, bytes]], list[str]]:
    changes: object = data.get("fileChanges") or {}
    if not isinstance(changes, dict):
        raise FieldError("INVALID", "input.fileChanges must be a FileChanges object")
    spec = cast("Json", changes)
    additions: list[tuple[str, bytes]] = []
    for raw in cast("list[object]", spec.get("additions") or []):
        item = cast("Json", raw) if isinstance(raw, dict) else {}
        path, contents = item.get("path"), item.get("contents")
        if not isinstance(path, str) or not isinstance(contents, str):
            raise FieldError("INVALID", "each FileAddition needs a path and base64 contents")
        try:
            additions.append((path, base64.b64decode(contents, validate=True)))
        except binascii.Error:
            raise FieldError("INVALID", f"contents of {path} are not valid base64") from None
    deletions: list[str] = []
    for raw in cast("list[object]", spec.get("deletions") or []):
        item = cast("Json", raw) if isinstance(raw, dict) else {}
        path = item.get("path")
        if not isinstance(path, str):
            raise FieldError("INVALID", "each FileDeletion needs a path")
        deletions.append(path)
    return additions, deletions


def create_commit_on_branch(st: State, viewer: UserRec, args: Mapping[str, object]) -> object:
    """Resolve `createCommitOnBranch`: one commit, compare-and-swap on the branch head."""
    data = _input(args)
    if not viewer.can("write"):
        raise FieldError("FORBIDDEN", "Resource not accessible by integration")
    branch = _branch(st, data)
    expected = _required(data, "expectedHeadOid", "input")
    message = _required(data, "message", "input")
    headline = cast("Json", message).get("headline") if isinstance(message, dict) else None
    if not isinstance(headline, str) or not headline.strip():
        raise FieldError("INVALID", "input.message.headline must not be blank")
    body = cast("Json", message).get("body")
    additions, deletions = _files(data)
    git = st.git
    ref = f"refs/heads/{branch}"
    head = git.refs.get(ref)
    if head is None:
        raise FieldError("NOT_FOUND", f'A ref named "{ref}" does not exist.')
    if str(expected).lower() != head:
        raise FieldError(
            "STALE_DATA",
            f'Expected branch to point to "{expected}" but it did not.  Pull and try again.',
        )
    tree = git.commit_tree(head)
    writes: list[TreeWrite] = []
    for path in deletions:
        item = git.lookup(tree, path)
        if item is None or type_of_mode(item.mode) != "blob":
            raise FieldError(
                "UNPROCESSABLE",
                f"A path was requested for deletion which does not exist as of commit oid "
                f"`{head}`: {path}",
            )
        writes.append(TreeWrite(path, MODE_FILE, None))
    for path, contents in additions:
        item = git.lookup(tree, path)
        if item is not None and type_of_mode(item.mode) == "tree":
            raise FieldError(
                "UNPROCESSABLE", f"A path was requested for addition which is a directory: {path}"
            )
        writes.append(TreeWrite(path, MODE_FILE, git.add_blob(contents)))
    new_tree = git.write_tree(tree, writes)
    st.tick()
    who = st.identity(viewer.login)
    text = headline if not isinstance(body, str) or not body else f"{headline}\n\n{body}"
    # GitHub writes the commit: the viewer is its author, GitHub (web-flow) its committer
    # and signer, so it shows as verified.
    sha = git.add_commit(
        tree=new_tree,
        parents=[head],
        message=text,
        author=who,
        committer=web_flow_identity(st),
        signature=armored(GITHUB_KEY_ID),
    )
    git.refs[ref] = sha
    return (
        "CreateCommitOnBranchPayload",
        {"commit": sha, "ref": ref, "clientMutationId": data.get("clientMutationId")},
    )
