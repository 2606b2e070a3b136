"""Identity, repository, collaborator permission, contents and tarball archives.

`GET /user` with an App installation token answers 403 "Resource not accessible by
integration", as on GitHub: an App learns its bot identity from `GET /app` (its slug)
and `GET /users/{slug}[bot]`. The tarball endpoint redirects (302) to a codeload URL
served by the emulator, so a client that does not follow redirects fails here too.
"""

from __future__ import annotations

import base64
from urllib.parse import quote

from agent_loop_testing._emulator_errors import ApiError
from agent_loop_testing._emulator_git import MODE_DIR, MODE_LINK, MODE_SUBMODULE
from agent_loop_testing._emulator_gitdiff import tarball
from agent_loop_testing._emulator_http import Ctx, Reply, Route, page_reply, paginate
from agent_loop_testing._emulator_render import (
    Json,
    Urls,
    full_repository_json,
    private_user_json,
    public_user_json,
    repository_json,
    simple_user_json,
)
from agent_loop_testing._emulator_state import State

__all__ = ["CODELOAD_ROUTES", "ROUTES"]

_DOCS = "https://docs.github.com/rest"
_LEGACY = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
}


def get_viewer(st: State, ctx: Ctx) -> Reply:
    user = ctx.caller()
    if ctx.installation:
        raise ApiError(403, "Resource not accessible by integration")
    return Reply(200, private_user_json(user, ctx.urls))


def get_user(st: State, ctx: Ctx) -> Reply:
    login = ctx.params["username"]
    user = next((u for u in st.users.values() if u.login.lower() == login.lower()), None)
    if user is None:
        raise ApiError(404, "Not Found")
    return Reply(200, public_user_json(user, ctx.urls))


def get_repo(st: State, ctx: Ctx) -> Reply:
    return Reply(200, full_repository_json(st, ctx.urls, ctx.user))


def _hosted(st: State) -> list[State]:
    return st.host or [st]


def list_user_repos(st: State, ctx: Ctx) -> Reply:
    """`GET /user/repos`: the repositories the caller can reach on this host, by name."""
    viewer = ctx.caller()
    found: list[Json] = []
    for other in sorted(_hosted(st), key=lambda s: s.full_name.lower()):
        with other.lock:
            user = other.users.get(viewer.login)
            if user is None or not user.can("read"):
                continue
            urls = Urls(ctx.urls.api, ctx.urls.web, other.owner, other.name)
            found.append(full_repository_json(other, urls, user))
    return page_reply(ctx, found)


def list_installation_repos(st: State, ctx: Ctx) -> Reply:
    """`GET /installation/repositories`: the repositories the installation can reach."""
    viewer = ctx.caller()
    if not ctx.installation:
        raise ApiError(403, "You must authenticate with an installation access token.")
    found: list[Json] = []
    for other in sorted(_hosted(st), key=lambda s: s.full_name.lower()):
        with other.lock:
            user = other.users.get(viewer.login)
            if user is None or not user.can("read"):
                continue
            urls = Urls(ctx.urls.api, ctx.urls.web, other.owner, other.name)
            found.append(repository_json(other, urls))
    chunk, headers = paginate(ctx, found)
    return Reply(200, {"total_count": len(found), "repositories": chunk}, headers=headers)


def permission(st: State, ctx: Ctx) -> Reply:
    ctx.caller()
    login = ctx.params["username"]
    user = next((u for u in st.users.values() if u.login.lower() == login.lower()), None)
    if user is None:
        raise ApiError(404, f"{login} is not a user")
    collaborator: Json = {
        **simple_user_json(user, ctx.urls),
        "permissions": {
            "pull": user.can("read"),
            "triage": user.can("triage"),
            "push": user.can("write"),
            "maintain": user.can("maintain"),
            "admin": user.can("admin"),
        },
        "role_name": user.permission,
    }
    return Reply(
        200,
        {
            "permission": _LEGACY.get(user.permission, "none"),
            "role_name": user.permission,
            "user": collaborator,
        },
    )


def _resolve(st: State, ctx: Ctx) -> str:
    ref = ctx.query.get("ref") or st.default_branch
    sha = st.git.resolve(ref)
    if sha is None:
        raise ApiError(404, f"No commit found for the ref {ref}")
    return sha


def _b64(data: bytes) -> str:
    text = base64.b64encode(data).decode()
    return "".join(text[i : i + 60] + "\n" for i in range(0, len(text), 60))


def _item(ctx: Ctx, path: str, mode: int, sha: str, size: int, ref: str) -> Json:
    kind = {MODE_DIR: "dir", MODE_LINK: "symlink", MODE_SUBMODULE: "submodule"}.get(mode, "file")
    url = f"{ctx.urls.repo}/contents/{quote(path)}?ref={quote(ref)}"
    git_url = f"{ctx.urls.repo}/git/{'trees' if kind == 'dir' else 'blobs'}/{sha}"
    html = f"{ctx.urls.repo_web}/{'tree' if kind == 'dir' else 'blob'}/{quote(ref)}/{quote(path)}"
    raw = f"{ctx.urls.web}/{ctx.urls.owner}/{ctx.urls.name}/raw/{quote(ref)}/{quote(path)}"
    return {
        "type": kind,
        "size": size,
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "sha": sha,
        "url": url,
        "git_url": git_url,
        "html_url": html,
        "download_url": raw if kind == "file" else None,
        "_links": {"self": url, "git": git_url, "html": html},
    }


def contents(st: State, ctx: Ctx) -> Reply:
    if st.is_empty():
        raise ApiError(404, "This repository is empty.")
    commit = _resolve(st, ctx)
    ref = ctx.query.get("ref") or st.default_branch
    path = ctx.params.get("path", "").strip("/")
    item = st.git.lookup(st.git.commit_tree(commit), path)
    if item is None:
        raise ApiError(404, "Not Found")
    if item.mode == MODE_DIR:
        entries = [
            _item(ctx, f"{path}/{e.path}".lstrip("/"), e.mode, e.sha, e.size or 0, ref)
            for e in st.git.iter_tree(item.sha, recursive=False)
        ]
        return Reply(200, entries)
    blob = st.git.blob(item.sha)
    data = blob.data if blob is not None else b""
    if ctx.accepts("application/vnd.github.raw") or ctx.accepts("application/vnd.github.v3.raw"):
        return Reply(200, raw=data, content_type="application/vnd.github.raw")
    return Reply(
        200,
        {
            **_item(ctx, path, item.mode, item.sha, len(data), ref),
            "encoding": "base64",
            "content": _b64(data),
        },
    )


def tarball_redirect(st: State, ctx: Ctx) -> Reply:
    ref = ctx.params.get("ref") or st.default_branch
    if st.git.resolve(ref) is None:
        raise ApiError(404, "Not Found")
    location = f"{ctx.urls.web}/_codeload/{st.owner}/{st.name}/legacy.tar.gz/{quote(ref)}"
    return Reply(
        302, raw=b"", content_type="text/html;charset=utf-8", headers={"Location": location}
    )


def codeload(st: State, ctx: Ctx) -> Reply:
    sha = st.git.resolve(ctx.params["ref"])
    if sha is None:
        raise ApiError(404, "Not Found")
    commit = st.git.commit(sha)
    assert commit is not None
    prefix = f"{st.owner}-{st.name}-{sha[:7]}"
    data = tarball(st.git, sha, prefix, commit.commit_time)
    return Reply(
        200,
        raw=data,
        content_type="application/x-gzip",
        headers={"Content-Disposition": f"attachment; filename={prefix}.tar.gz"},
    )


_R = "/repos/{owner}/{repo}"
ROUTES = [
    Route("GET", "/user", get_viewer, f"{_DOCS}/users/users#get-the-authenticated-user"),
    Route(
        "GET",
        "/user/repos",
        list_user_repos,
        f"{_DOCS}/repos/repos#list-repositories-for-the-authenticated-user",
    ),
    Route(
        "GET",
        "/installation/repositories",
        list_installation_repos,
        f"{_DOCS}/apps/installations#list-repositories-accessible-to-the-app-installation",
    ),
    Route("GET", "/users/{username}", get_user, f"{_DOCS}/users/users#get-a-user"),
    Route("GET", _R, get_repo, f"{_DOCS}/repos/repos#get-a-repository"),
    Route(
        "GET",
        f"{_R}/collaborators/{{username}}/permission",
        permission,
        f"{_DOCS}/collaborators/collaborators#get-repository-permissions-for-a-user",
    ),
    Route("GET", f"{_R}/contents", contents, f"{_DOCS}/repos/contents#get-repository-content"),
    Route(
        "GET",
        f"{_R}/contents/{{path:path}}",
        contents,
        f"{_DOCS}/repos/contents#get-repository-content",
    ),
    Route(
        "GET",
        f"{_R}/tarball",
        tarball_redirect,
        f"{_DOCS}/repos/contents#download-a-repository-archive-tar",
    ),
    Route(
        "GET",
        f"{_R}/tarball/{{ref:path}}",
        tarball_redirect,
        f"{_DOCS}/repos/contents#download-a-repository-archive-tar",
    ),
]
CODELOAD_ROUTES = [
    Route("GET", "/_codeload/{owner}/{repo}/legacy.tar.gz/{ref:path}", codeload, _DOCS),
]
