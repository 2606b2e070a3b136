"""The git data API: blobs, trees, commits and refs, with GitHub's status codes.

Status codes the agents rely on: 201 on creation, 409 "Git Repository is empty." before
the first branch exists, 422 "Reference already exists" on a second create of one ref,
422 "Update is not a fast forward" on a non-forced update that would lose commits, and
422 "Reference does not exist" when updating or deleting a missing ref.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import cast

from dulwich.objects import Commit

from agent_loop_testing._emulator_errors import ApiError
from agent_loop_testing._emulator_git import (
    MODE_DIR,
    Identity,
    TreeWrite,
    mode_text,
    parse_mode,
    person_of,
    type_of_mode,
)
from agent_loop_testing._emulator_http import Ctx, Reply, Route, page_reply, string
from agent_loop_testing._emulator_ops_pulls import branch_deleted
from agent_loop_testing._emulator_refname import is_valid_ref_name, qualify_ref
from agent_loop_testing._emulator_render import Json, Urls, node_id, simple_user_json, ts
from agent_loop_testing._emulator_routes_issues import parse_since
from agent_loop_testing._emulator_signing import GITHUB_EMAIL, WEB_FLOW, Verification, verify
from agent_loop_testing._emulator_state import State

__all__ = ["ROUTES", "commit_json", "ref_json", "verification_json"]

_DOCS = "https://docs.github.com/rest/git"
_SHA_OR_CONTENT = (
    "Must supply either tree.sha or tree.content. Request will be rejected if both are present."
)


def _not_empty(st: State) -> None:
    if st.is_empty():
        raise ApiError(409, "Git Repository is empty.")


def _sha(value: str | None, field: str) -> str:
    if value is None:
        raise ApiError(422, f'Invalid request.\n\n"{field}" wasn\'t supplied.')
    if len(value) != 40:
        raise ApiError(422, f"Only 40 characters are allowed; {len(value)} were supplied.")
    return value.lower()


def _b64(data: bytes) -> str:
    """GitHub's base64 layout: wrapped every 60 characters, trailing newline."""
    text = base64.b64encode(data).decode()
    return "".join(text[i : i + 60] + "\n" for i in range(0, len(text), 60))


def ref_json(st: State, name: str, urls: Urls) -> Json:
    sha = st.git.refs[name]
    obj = st.git.get(sha)
    kind = obj.type_name.decode() if obj is not None else "commit"
    return {
        "ref": name,
        "node_id": node_id("REF", name),
        "url": f"{urls.repo}/git/{name}",
        "object": {"type": kind, "sha": sha, "url": f"{urls.repo}/git/{kind}s/{sha}"},
    }


def _person(raw: bytes, when: int) -> Json:
    name, email = person_of(raw)
    return {
        "name": name,
        "email": email,
        "date": ts(datetime.fromtimestamp(when, tz=UTC)),
    }


def commit_json(st: State, sha: str, urls: Urls) -> Json:
    commit = st.git.commit(sha)
    assert commit is not None
    return {
        "sha": sha,
        "node_id": node_id("C", sha),
        "url": f"{urls.repo}/git/commits/{sha}",
        "html_url": f"{urls.repo_web}/commit/{sha}",
        "author": _person(commit.author, commit.author_time),
        "committer": _person(commit.committer, commit.commit_time),
        "message": commit.message.decode("utf-8", "replace"),
        "tree": {
            "sha": commit.tree.decode(),
            "url": f"{urls.repo}/git/trees/{commit.tree.decode()}",
        },
        "parents": [
            {
                "sha": p.decode(),
                "url": f"{urls.repo}/git/commits/{p.decode()}",
                "html_url": f"{urls.repo_web}/commit/{p.decode()}",
            }
            for p in commit.parents
        ],
        "verification": verification_json(verify(st, commit)),
    }


def verification_json(v: Verification) -> Json:
    """REST's `verification` object: verified or not and why, never who signed."""
    return {
        "verified": v.verified,
        "reason": v.reason,
        "signature": v.signature,
        "payload": v.payload,
        "verified_at": ts(v.verified_at) if v.verified_at is not None else None,
    }


def _tree_json(st: State, sha: str, urls: Urls, recursive: bool) -> Json:
    items: list[Json] = []
    for item in st.git.iter_tree(sha, recursive=recursive):
        kind = type_of_mode(item.mode)
        entry: Json = {
            "path": item.path,
            "mode": mode_text(item.mode),
            "type": kind,
            "sha": item.sha,
        }
        if kind == "blob":
            entry["size"] = item.size
            entry["url"] = f"{urls.repo}/git/blobs/{item.sha}"
        elif kind == "tree":
            entry["url"] = f"{urls.repo}/git/trees/{item.sha}"
        items.append(entry)
    return {"sha": sha, "url": f"{urls.repo}/git/trees/{sha}", "tree": items, "truncated": False}


def create_blob(st: State, ctx: Ctx) -> Reply:
    ctx.require("write")
    body = ctx.json()
    content = string(body, "content") or ""
    encoding = body.get("encoding", "utf-8")
    _not_empty(st)
    if encoding == "base64":
        try:
            data = base64.b64decode(content, validate=False)
        except (binascii.Error, ValueError):
            raise ApiError(422, "Invalid Base64 content") from None
    elif encoding in ("utf-8", "utf8"):
        data = content.encode()
    else:
        raise ApiError(422, f"encoding must be either 'utf-8' or 'base64', got {encoding!r}")
    sha = st.git.add_blob(data)
    return Reply(
        201,
        {"url": f"{ctx.urls.repo}/git/blobs/{sha}", "sha": sha},
        headers={"Location": f"{ctx.urls.repo}/git/blobs/{sha}"},
    )


def get_blob(st: State, ctx: Ctx) -> Reply:
    _not_empty(st)
    sha = ctx.params["sha"]
    blob = st.git.blob(sha)
    if blob is None:
        raise ApiError(404, "Not Found")
    if ctx.accepts("application/vnd.github.raw"):
        return Reply(200, raw=blob.data, content_type="application/vnd.github.raw")
    return Reply(
        200,
        {
            "sha": sha,
            "node_id": node_id("B", sha),
            "size": len(blob.data),
            "url": f"{ctx.urls.repo}/git/blobs/{sha}",
            "content": _b64(blob.data),
            "encoding": "base64",
        },
    )


def _tree_write(st: State, raw: object) -> TreeWrite:
    if not isinstance(raw, dict):
        raise ApiError(422, "Invalid tree info")
    entry = cast("Json", raw)
    path = string(entry, "path")
    assert path is not None
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in path.split("/")):
        raise ApiError(422, f"tree.path contains a malformed path component: {path!r}")
    mode = parse_mode(str(entry.get("mode", "")))
    if mode is None:
        raise ApiError(422, f"Must supply a valid tree.mode for {path!r}")
    if "content" in entry and entry.get("content") is not None:
        if "sha" in entry and entry["sha"] is not None:
            raise ApiError(422, _SHA_OR_CONTENT)
        return TreeWrite(path, mode, st.git.add_blob(str(entry["content"]).encode()))
    if "sha" not in entry:
        raise ApiError(422, _SHA_OR_CONTENT)
    sha = entry["sha"]
    if sha is None:
        return TreeWrite(path, mode, None)
    if not isinstance(sha, str) or st.git.get(sha.lower()) is None:
        raise ApiError(
            422, f"tree.sha {sha} is not a valid {'tree' if mode == MODE_DIR else 'blob'}"
        )
    return TreeWrite(path, mode, sha.lower())


def create_tree(st: State, ctx: Ctx) -> Reply:
    ctx.require("write")
    body = ctx.json()
    _not_empty(st)
    entries = body.get("tree")
    if not isinstance(entries, list):
        raise ApiError(422, 'Invalid request.\n\n"tree" wasn\'t supplied.')
    base = body.get("base_tree")
    if base is not None and (not isinstance(base, str) or st.git.tree(base.lower()) is None):
        raise ApiError(422, "base_tree is not a valid tree oid")
    writes = [_tree_write(st, e) for e in cast("list[object]", entries)]
    for write in writes:
        # GitHub refuses to delete (sha: null) a path the base tree does not have.
        missing = base is None or st.git.lookup(base.lower(), write.path) is None
        if write.sha is None and missing:
            raise ApiError(422, "GitRPC::BadObjectState")
    sha = st.git.write_tree(base.lower() if isinstance(base, str) else None, writes)
    return Reply(
        201,
        _tree_json(st, sha, ctx.urls, False),
        headers={"Location": f"{ctx.urls.repo}/git/trees/{sha}"},
    )


def get_tree(st: State, ctx: Ctx) -> Reply:
    _not_empty(st)
    ident = ctx.params["sha"]
    sha: str | None = ident.lower() if st.git.tree(ident.lower()) else None
    if sha is None:
        commit = st.git.resolve(ident)
        sha = st.git.commit_tree(commit) if commit else None
    if sha is None:
        raise ApiError(404, "Not Found")
    recursive = ctx.query.get("recursive", "") not in ("", "0", "false")
    return Reply(200, _tree_json(st, sha, ctx.urls, recursive))


def _identity(st: State, raw: object, fallback: Identity) -> Identity:
    if not isinstance(raw, dict):
        return fallback
    data = cast("Json", raw)
    when = fallback.when
    if isinstance(date := data.get("date"), str):
        try:
            when = datetime.fromisoformat(date.replace("Z", "+00:00"))
        except ValueError:
            raise ApiError(422, f"Invalid date: {date}") from None
    return Identity(
        str(data.get("name", fallback.name)), str(data.get("email", fallback.email)), when
    )


def create_commit(st: State, ctx: Ctx) -> Reply:
    user = ctx.require("write")
    body = ctx.json()
    _not_empty(st)
    message = string(body, "message") or ""
    tree = _sha(string(body, "tree"), "tree")
    if st.git.tree(tree) is None:
        raise ApiError(422, f"Tree SHA does not exist: {tree}")
    raw_parents = body.get("parents", [])
    if not isinstance(raw_parents, list):
        raise ApiError(422, "Invalid request.\n\nFor 'properties/parents', it is not an array.")
    parents: list[str] = []
    for parent in cast("list[object]", raw_parents):
        if not isinstance(parent, str) or st.git.commit(parent.lower()) is None:
            raise ApiError(422, f"Parent SHA does not exist or is not a commit object: {parent}")
        parents.append(parent.lower())
    st.tick()
    default = st.identity(user.login)
    author = _identity(st, body.get("author"), default)
    committer = _identity(st, body.get("committer"), author if "author" in body else default)
    sha = st.git.add_commit(
        tree=tree, parents=parents, message=message, author=author, committer=committer
    )
    return Reply(
        201,
        commit_json(st, sha, ctx.urls),
        headers={"Location": f"{ctx.urls.repo}/git/commits/{sha}"},
    )


def get_commit(st: State, ctx: Ctx) -> Reply:
    _not_empty(st)
    sha = ctx.params["sha"].lower()
    if not isinstance(st.git.get(sha), Commit):
        raise ApiError(404, "Not Found")
    return Reply(200, commit_json(st, sha, ctx.urls))


def get_ref(st: State, ctx: Ctx) -> Reply:
    _not_empty(st)
    name = qualify_ref(ctx.params["ref"])
    if name not in st.git.refs:
        raise ApiError(404, "Not Found")
    return Reply(200, ref_json(st, name, ctx.urls))


def matching_refs(st: State, ctx: Ctx) -> Reply:
    _not_empty(st)
    prefix = qualify_ref(ctx.params["ref"])
    names = sorted(n for n in st.git.refs if n.startswith(prefix))
    return Reply(200, [ref_json(st, n, ctx.urls) for n in names])


def create_ref(st: State, ctx: Ctx) -> Reply:
    ctx.require("write")
    body = ctx.json()
    name = string(body, "ref") or ""
    sha = _sha(string(body, "sha"), "sha")
    _not_empty(st)
    if not is_valid_ref_name(name):
        raise ApiError(422, f"{name} is not a valid ref name.")
    if st.git.get(sha) is None:
        raise ApiError(422, "Object does not exist")
    if name in st.git.refs:
        raise ApiError(422, "Reference already exists")
    if name.startswith("refs/heads/") and st.git.commit(sha) is None:
        raise ApiError(422, "Object is not a commit")
    st.tick()
    st.git.refs[name] = sha
    return Reply(
        201, ref_json(st, name, ctx.urls), headers={"Location": f"{ctx.urls.repo}/git/{name}"}
    )


def update_ref(st: State, ctx: Ctx) -> Reply:
    ctx.require("write")
    body = ctx.json()
    name = qualify_ref(ctx.params["ref"])
    sha = _sha(string(body, "sha"), "sha")
    force = body.get("force", False) is True
    _not_empty(st)
    if name not in st.git.refs:
        raise ApiError(422, "Reference does not exist")
    if st.git.get(sha) is None:
        raise ApiError(422, "Object does not exist")
    current = st.git.refs[name]
    if not force and current != sha and not st.git.is_ancestor(current, sha):
        raise ApiError(422, "Update is not a fast forward")
    st.tick()
    st.git.refs[name] = sha
    return Reply(200, ref_json(st, name, ctx.urls))


def delete_ref(st: State, ctx: Ctx) -> Reply:
    user = ctx.require("write")
    name = qualify_ref(ctx.params["ref"])
    _not_empty(st)
    if name not in st.git.refs:
        raise ApiError(422, "Reference does not exist")
    st.tick()
    del st.git.refs[name]
    if name.startswith("refs/heads/"):
        branch_deleted(st, name.removeprefix("refs/heads/"), user.login)
    return Reply(204)


def _blob_at(st: State, commit_sha: str, path: str) -> str | None:
    item = st.git.lookup(st.git.commit_tree(commit_sha), path)
    return None if item is None else item.sha


def _path_history(st: State, head: str, path: str) -> list[str]:
    """Commits reachable from `head` that changed `path`, newest first, with git's
    default history simplification: a merge whose file equals one parent's is not
    listed, and only that parent's side is followed (so a file merged in from a branch
    is credited to the commit that changed it there, as GitHub lists it)."""
    found: list[str] = []
    seen: set[str] = set()
    todo = [head]
    while todo:
        todo.sort(key=lambda sha: _commit_time(st, sha))
        sha = todo.pop()
        if sha in seen:
            continue
        seen.add(sha)
        commit = st.git.commit(sha)
        if commit is None:
            continue
        parents = [p.decode() for p in commit.parents]
        mine = _blob_at(st, sha, path)
        same = [p for p in parents if _blob_at(st, p, path) == mine]
        if same:
            todo.append(same[0])
            continue
        if parents or mine is not None:
            found.append(sha)
        todo.extend(parents)
    return found


def _commit_time(st: State, sha: str) -> int:
    commit = st.git.commit(sha)
    return commit.commit_time if commit is not None else 0


def _account(st: State, raw: bytes, urls: Urls) -> Json | None:
    """The account an author or committer line's email belongs to (GitHub maps emails
    to users; GitHub's own commits show the `web-flow` account). The line is whatever
    the commit's creator wrote: the account is a lookup, not proof of who made it."""
    _, email = person_of(raw)
    if email == GITHUB_EMAIL:
        return simple_user_json(WEB_FLOW, urls)
    user = next((u for u in st.users.values() if u.email == email), None)
    return None if user is None else simple_user_json(user, urls)


def list_commits(st: State, ctx: Ctx) -> Reply:
    """`GET /repos/{o}/{r}/commits`: a branch's (or sha's) history, optionally only the
    commits that changed `path` or were committed at or after `since`, newest first,
    paginated."""
    _not_empty(st)
    ref = ctx.query.get("sha") or st.default_branch
    head = st.git.resolve(ref)
    if head is None:
        raise ApiError(404, f"No commit found for SHA: {ref}")
    path = (ctx.query.get("path") or "").strip("/")
    if path:
        shas = _path_history(st, head, path)
    else:  # the whole history, merges included, newest first (no simplification)
        reachable = st.git.ancestors(head)
        shas = sorted(reachable, key=lambda sha: (_commit_time(st, sha), sha), reverse=True)
    since = parse_since(ctx)
    if since is not None:
        shas = [sha for sha in shas if _commit_time(st, sha) >= since.timestamp()]
    items: list[Json] = []
    for sha in shas:
        commit = st.git.commit(sha)
        assert commit is not None
        git = commit_json(st, sha, ctx.urls)
        items.append(
            {
                "url": f"{ctx.urls.repo}/commits/{sha}",
                "sha": sha,
                "node_id": git["node_id"],
                "html_url": git["html_url"],
                "comments_url": f"{ctx.urls.repo}/commits/{sha}/comments",
                "commit": {
                    "url": git["url"],
                    "author": git["author"],
                    "committer": git["committer"],
                    "message": git["message"],
                    "comment_count": 0,
                    "tree": git["tree"],
                    "verification": git["verification"],
                },
                "author": _account(st, commit.author, ctx.urls),
                "committer": _account(st, commit.committer, ctx.urls),
                "parents": git["parents"],
            }
        )
    return page_reply(ctx, items)


_R = "/repos/{owner}/{repo}/git"
ROUTES = [
    Route(
        "GET",
        "/repos/{owner}/{repo}/commits",
        list_commits,
        "https://docs.github.com/rest/commits/commits#list-commits",
    ),
    Route("POST", f"{_R}/blobs", create_blob, f"{_DOCS}/blobs#create-a-blob"),
    Route("GET", f"{_R}/blobs/{{sha}}", get_blob, f"{_DOCS}/blobs#get-a-blob"),
    Route("POST", f"{_R}/trees", create_tree, f"{_DOCS}/trees#create-a-tree"),
    Route("GET", f"{_R}/trees/{{sha:path}}", get_tree, f"{_DOCS}/trees#get-a-tree"),
    Route("POST", f"{_R}/commits", create_commit, f"{_DOCS}/commits#create-a-commit"),
    Route("GET", f"{_R}/commits/{{sha}}", get_commit, f"{_DOCS}/commits#get-a-commit-object"),
    Route("GET", f"{_R}/ref/{{ref:path}}", get_ref, f"{_DOCS}/refs#get-a-reference"),
    Route(
        "GET",
        f"{_R}/matching-refs/{{ref:path}}",
        matching_refs,
        f"{_DOCS}/refs#list-matching-references",
    ),
    Route("POST", f"{_R}/refs", create_ref, f"{_DOCS}/refs#create-a-reference"),
    Route("PATCH", f"{_R}/refs/{{ref:path}}", update_ref, f"{_DOCS}/refs#update-a-reference"),
    Route("DELETE", f"{_R}/refs/{{ref:path}}", delete_ref, f"{_DOCS}/refs#delete-a-reference"),
]
