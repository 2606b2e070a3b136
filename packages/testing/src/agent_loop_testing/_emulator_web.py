"""The emulator's web pages: what its `html_url`s open in a browser, read-only.

Every link the agents print or post (a PR, an issue, a comment, a review, a commit) is
an `html_url` the emulator handed out, under the served root as on github.com:
`/{owner}/{repo}` (the repository: its issues and pull requests), `/issues/N`,
`/pull/N` (with `#issuecomment-ID`, `#pullrequestreview-ID`, `#discussion_rID`
anchors), `/pull/N.diff`, `/commit/SHA`. Each page is small, plain HTML: title, state,
body, the conversation in time order, and for a pull request its reviews, inline
comments with their hunks, commits, checks and the diff.

Everything on a page that a person or a model wrote (titles, bodies, comments, file
names, diffs, logins) is HTML-escaped and shown as text, never as Markdown or HTML,
and every page is served with a Content-Security-Policy that allows no script at all.
The pages need no token (a public repository's pages do not on GitHub either); a
private repository's answer 404.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from agent_loop_testing._emulator_git import EMPTY_TREE
from agent_loop_testing._emulator_gitdiff import unified_diff
from agent_loop_testing._emulator_ops_pulls import head_sha, merge_base_tree, pull_commits
from agent_loop_testing._emulator_state import IssueRec, PullRec, State

__all__ = ["web_routes"]

_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;max-width:980px;margin:1.5em auto;padding:0 1em;color:#1f2328}
header{border-bottom:1px solid #d0d7de;padding-bottom:.5em;margin-bottom:1em;color:#59636e}
a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
h1 small{color:#59636e;font-weight:normal}
.state{display:inline-block;padding:.1em .6em;border-radius:1em;color:#fff;font-size:.85em}
.open{background:#1f883d}.closed{background:#cf222e}.merged{background:#8250df}.draft{background:#59636e}
.box{border:1px solid #d0d7de;border-radius:6px;margin:.8em 0}
.box>.who{background:#f6f8fa;border-bottom:1px solid #d0d7de;padding:.3em .7em;color:#59636e}
.text{white-space:pre-wrap;word-wrap:break-word;padding:.5em .7em;margin:0;font:inherit}
.event{color:#59636e;margin:.4em .7em}
pre.code{background:#f6f8fa;padding:.6em;overflow-x:auto;font:12px/1.4 ui-monospace,monospace;margin:0}
.add{background:#dafbe1}.del{background:#ffebe9}.hunk{color:#0550ae}
table{border-collapse:collapse;width:100%}td{padding:.3em .5em;border-top:1px solid #d0d7de}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value is not None else ""


@dataclass(frozen=True)
class _Page:
    """Where a page lives: the repository's web root (`http://host:port/owner/name`)."""

    st: State
    root: str

    def link(self, path: str, text: str) -> str:
        return f'<a href="{_e(self.root + path)}">{_e(text)}</a>'

    def render(self, title: str, body: str, status: int = 200) -> Response:
        doc = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body><header>"
            f"{self.link('', self.st.full_name)} · served by the agent-loop GitHub emulator "
            "(a local test double: state lives in its process)</header>"
            f"{body}</body></html>"
        )
        return Response(doc, status_code=status, media_type="text/html", headers=_HEADERS)


def _state_badge(issue: IssueRec) -> str:
    pull = issue.pull
    if pull is not None and pull.merged_at is not None:
        return '<span class="state merged">Merged</span>'
    if pull is not None and pull.draft and issue.state == "open":
        return '<span class="state draft">Draft</span>'
    word = "Open" if issue.state == "open" else "Closed"
    return f'<span class="state {issue.state}">{word}</span>'


def _box(
    anchor: str, who: str, when: datetime | None, text: str | None, verb: str, inner: str = ""
) -> str:
    """One comment-like box: who, what they did, when, their text (escaped), and what
    hangs under it (a review's inline threads)."""
    body = f'<pre class="text">{_e(text)}</pre>' if text else ""
    if text is None:
        body = '<pre class="text"><i>No description provided.</i></pre>'
    return (
        f'<div class="box" id="{_e(anchor)}"><div class="who"><b>@{_e(who)}</b> '
        f"{_e(verb)} · {_e(_when(when))}</div>{body}{inner}</div>"
    )


def _diff(text: str) -> str:
    """A unified diff as escaped, coloured lines."""
    lines: list[str] = []
    for line in text.splitlines():
        cls = ""
        if line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+") and not line.startswith("+++"):
            cls = "add"
        elif line.startswith("-") and not line.startswith("---"):
            cls = "del"
        lines.append(f'<span class="{cls}">{_e(line)}</span>' if cls else _e(line))
    return '<pre class="code">' + ("\n".join(lines) or "(no changes)") + "</pre>"


def _pull_diff(st: State, pull: PullRec) -> str:
    """The PR's changes: from where it left its base to its head (as merged, once it
    is: the base then contains the head, and a diff against it would be empty)."""
    head = head_sha(st, pull)
    if pull.merged_at is not None and pull.base_at_open:
        common = st.git.merge_base(pull.base_at_open, head)
        old = st.git.commit_tree(common) if common else EMPTY_TREE
    else:
        old = merge_base_tree(st, pull)
    return unified_diff(st.git, old, st.git.commit_tree(head))


_Part = tuple[datetime, int, str]
"""One entry of a timeline: (time, id, html); ids break ties in creation order."""


def _conversation(page: _Page, issue: IssueRec) -> Iterable[_Part]:
    """Comments and events of an issue or PR, for one timeline."""
    st = page.st
    for c in st.comments.values():
        if c.issue == issue.number:
            box = _box(f"issuecomment-{c.id}", c.author, c.created_at, c.body, "commented")
            yield c.created_at, c.id, box
    for ev in st.events:
        if ev.issue != issue.number:
            continue
        detail = ""
        if ev.label is not None:
            detail = f" {_e(ev.label)}"
        elif ev.rename is not None:
            detail = f" from {_e(ev.rename[0])} to {_e(ev.rename[1])}"
        elif ev.commit_id is not None:
            detail = " " + page.link(f"/commit/{ev.commit_id}", ev.commit_id[:7])
        text = f"@{_e(ev.actor)} {_e(ev.event.replace('_', ' '))}{detail}"
        yield ev.created_at, ev.id, f'<div class="event">{text} · {_e(_when(ev.created_at))}</div>'


def _threads(page: _Page, number: int) -> dict[int | None, list[_Part]]:
    """A PR's inline comment threads (hunk, first comment, replies) by review id."""
    st = page.st
    ordered = sorted(
        (rc for rc in st.review_comments.values() if rc.pull == number), key=lambda r: r.id
    )
    replies: dict[int, str] = {}
    for rc in ordered:
        if rc.in_reply_to is not None:
            box = _box(f"discussion_r{rc.id}", rc.author, rc.created_at, rc.body, "replied")
            replies[rc.in_reply_to] = replies.get(rc.in_reply_to, "") + box
    threads: dict[int | None, list[_Part]] = {}
    for rc in ordered:
        if rc.in_reply_to is not None:
            continue
        where = f"{rc.path}:{rc.line}" if rc.line is not None else rc.path
        if rc.resolved_by:
            where += f" (resolved by @{rc.resolved_by})"
        first = _box(f"discussion_r{rc.id}", rc.author, rc.created_at, rc.body, "commented")
        thread = (
            f'<div class="box"><div class="who">{_e(where)}</div>{_diff(rc.diff_hunk)}'
            f"{first}{replies.get(rc.id, '')}</div>"
        )
        threads.setdefault(rc.review_id, []).append((rc.created_at, rc.id, thread))
    return threads


_REVIEW_VERBS = {
    "APPROVED": "approved these changes",
    "CHANGES_REQUESTED": "requested changes",
    "DISMISSED": "reviewed (dismissed)",
}


def _reviews(page: _Page, number: int) -> Iterable[_Part]:
    """A PR's submitted reviews, each with its inline threads (a pending review is
    its author's alone, as on GitHub)."""
    threads = _threads(page, number)
    for review in page.st.reviews.values():
        if review.pull != number:
            continue
        inner = threads.pop(review.id, [])
        if review.submitted_at is None:
            continue
        verb = _REVIEW_VERBS.get(review.state, "reviewed")
        text = review.body or ("" if inner else None)
        box = _box(
            f"pullrequestreview-{review.id}",
            review.author,
            review.submitted_at,
            text,
            verb,
            "".join(part for _, _, part in inner),
        )
        yield review.submitted_at, review.id, box
    for rest in threads.values():  # single comments outside any review
        yield from rest


def _issue_header(page: _Page, issue: IssueRec) -> str:
    labels = "".join(f" <code>{_e(name)}</code>" for name in issue.labels)
    opened = f"@{issue.author} opened this on {_when(issue.created_at)}"
    return (
        f"<h1>{_e(issue.title)} <small>#{issue.number}</small></h1>"
        f"<p>{_state_badge(issue)} {_e(opened)}{labels}</p>"
        + _box(f"issue-{issue.number}", issue.author, issue.created_at, issue.body, "wrote")
    )


def _timeline(parts: Iterable[_Part]) -> str:
    return "".join(part for _, _, part in sorted(parts, key=lambda p: (p[0], p[1])))


def _issue_page(page: _Page, issue: IssueRec) -> Response:
    body = _issue_header(page, issue) + _timeline(_conversation(page, issue))
    return page.render(f"{issue.title} · Issue #{issue.number} · {page.st.full_name}", body)


def _pull_page(page: _Page, issue: IssueRec, pull: PullRec) -> Response:
    st = page.st
    head = head_sha(st, pull)
    branch = f"wants to merge {pull.head_ref} into {pull.base_ref} (head {head[:7]})"
    if pull.merged_at is not None:
        branch = f"@{pull.merged_by} merged {pull.head_ref} into {pull.base_ref}"
    commits = ""
    for sha in pull_commits(st, pull):
        commit = st.git.commit(sha)
        subject = commit.message.decode(errors="replace").splitlines()[0] if commit else ""
        commits += f"<tr><td>{page.link(f'/commit/{sha}', sha[:7])}</td><td>{_e(subject)}</td></tr>"
    checks = ""
    for run in sorted(st.check_runs.values(), key=lambda r: r.id):
        if run.head_sha == head:
            checks += f"<tr><td>{_e(run.name)}</td><td>{_e(run.conclusion or run.status)}</td></tr>"
    body = (
        _issue_header(page, issue)
        + f"<p>{_e(branch)} · {page.link(f'/pull/{issue.number}.diff', 'raw diff')}</p>"
        + _timeline([*_conversation(page, issue), *_reviews(page, issue.number)])
        + (f"<h2>Commits</h2><table>{commits}</table>" if commits else "")
        + (f"<h2>Checks on the head</h2><table>{checks}</table>" if checks else "")
        + "<h2>Files changed</h2>"
        + _diff(_pull_diff(st, pull))
    )
    return page.render(f"{issue.title} · Pull Request #{issue.number} · {st.full_name}", body)


def _repo_page(page: _Page) -> Response:
    st = page.st
    rows = {"pulls": "", "issues": ""}
    for issue in sorted(st.issues.values(), key=lambda i: -i.number):
        kind = "pull" if issue.pull is not None else "issues"
        row = (
            f"<tr><td>{_state_badge(issue)}</td>"
            f"<td>{page.link(f'/{kind}/{issue.number}', f'#{issue.number}')}</td>"
            f"<td>{_e(issue.title)}</td><td>@{_e(issue.author)}</td>"
            f"<td>{_e(_when(issue.updated_at))}</td></tr>"
        )
        rows["pulls" if issue.pull is not None else "issues"] += row
    body = (
        f"<h1>{_e(st.full_name)}</h1>"
        f"<p>Default branch <code>{_e(st.default_branch)}</code></p>"
        f"<h2>Pull requests</h2><table>{rows['pulls'] or '<tr><td>None yet.</td></tr>'}</table>"
        f"<h2>Issues</h2><table>{rows['issues'] or '<tr><td>None yet.</td></tr>'}</table>"
    )
    return page.render(st.full_name, body)


def _commit_page(page: _Page, sha: str) -> Response:
    st = page.st
    full = st.git.resolve(sha) if len(sha) != 40 else sha
    commit = st.git.commit(full) if full else None
    if commit is None or full is None:
        return _not_found(page)
    parents = st.git.parents(full)
    old = st.git.commit_tree(parents[0]) if parents else EMPTY_TREE
    message = commit.message.decode(errors="replace")
    subject, _, rest = message.partition("\n")
    author = commit.author.decode(errors="replace")
    parent_links = " ".join(page.link(f"/commit/{p}", p[:7]) for p in parents)
    body = (
        f"<h1>{_e(subject)} <small>{_e(full[:7])}</small></h1>"
        f"<p>{_e(author)} · parents {parent_links or 'none'}</p>"
        + (f'<pre class="text">{_e(rest.strip())}</pre>' if rest.strip() else "")
        + _diff(unified_diff(st.git, old, st.git.commit_tree(full)))
    )
    return page.render(f"{subject} · {full[:7]} · {st.full_name}", body)


def _not_found(page: _Page) -> Response:
    return page.render("Not Found", "<h1>Not Found</h1>", status=404)


def web_routes(st: State) -> list[BaseRoute]:
    """The page routes of one repository (GET only, no token, no rate limit)."""

    def page_of(request: Request) -> _Page | None:
        params = request.path_params
        owner, repo = str(params["owner"]), str(params["repo"])
        if (owner.lower(), repo.lower()) != (st.owner.lower(), st.name.lower()) or st.private:
            return None
        root = f"{request.url.scheme}://{request.url.netloc}/{st.owner}/{st.name}"
        return _Page(st, root)

    def number_of(request: Request) -> int | None:
        text = str(request.path_params["number"])
        return int(text) if text.isdigit() else None

    async def repo(request: Request) -> Response:
        with st.lock:
            page = page_of(request)
            if page is None:
                return _plain_not_found()
            return _repo_page(page)

    async def issue(request: Request) -> Response:
        with st.lock:
            page, number = page_of(request), number_of(request)
            if page is None:
                return _plain_not_found()
            found = st.issues.get(number) if number is not None else None
            if found is None:
                return _not_found(page)
            if found.pull is not None:
                return RedirectResponse(f"{page.root}/pull/{found.number}", status_code=302)
            return _issue_page(page, found)

    async def pull(request: Request) -> Response:
        with st.lock:
            page = page_of(request)
            if page is None:
                return _plain_not_found()
            text = str(request.path_params["number"])
            raw = text.endswith((".diff", ".patch"))
            number = text.rsplit(".", 1)[0] if raw else text
            found = st.issues.get(int(number)) if number.isdigit() else None
            if found is None:
                return _not_found(page)
            if found.pull is None:
                return RedirectResponse(f"{page.root}/issues/{found.number}", status_code=302)
            if raw:
                return PlainTextResponse(_pull_diff(st, found.pull), headers=_HEADERS)
            return _pull_page(page, found, found.pull)

    async def commit(request: Request) -> Response:
        with st.lock:
            page = page_of(request)
            if page is None:
                return _plain_not_found()
            return _commit_page(page, str(request.path_params["sha"]))

    base = "/{owner}/{repo}"
    return [
        Route(base, repo, methods=["GET"]),
        Route(f"{base}/issues", repo, methods=["GET"]),
        Route(f"{base}/pulls", repo, methods=["GET"]),
        Route(f"{base}/issues/{{number}}", issue, methods=["GET"]),
        Route(f"{base}/pull/{{number}}", pull, methods=["GET"]),
        Route(f"{base}/pull/{{number}}/files", pull, methods=["GET"]),
        Route(f"{base}/commit/{{sha}}", commit, methods=["GET"]),
    ]


def _plain_not_found() -> Response:
    """A path that only looks like a page (`/app/installations`): the API's 404."""
    body = {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
    return JSONResponse({**body, "status": "404"}, status_code=404)
