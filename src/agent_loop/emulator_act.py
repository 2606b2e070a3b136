"""`agent-loop emulator act`: be the owner, a writer, a stranger or the bot on the emulator.

```text
agent-loop emulator act --as owner issue --title "..." [--body "..."] [--label L]
agent-loop emulator act --as owner comment N --body "/agent-loop build"
agent-loop emulator act --as owner review N [--approve|--request-changes] [--body "..."]
                                            [--inline PATH:LINE "comment on that line"]
agent-loop emulator act --as owner approve N [--body "..."]
agent-loop emulator act --as owner merge N [--method merge|squash|rebase]
```

A person's side of the loop, for the emulator `agent-loop emulator serve` started: each
action is one request to its REST API with that person's token, exactly what `curl`
(or GitHub's web page) would send, so the agents see a human's issue, comment, review or
merge. It reads what `serve` printed: `GITHUB_API_URL`, `AGENT_LOOP_REPO`, and the token
of `--as` (`EMULATOR_OWNER_TOKEN`, `EMULATOR_WRITER_TOKEN`, `EMULATOR_STRANGER_TOKEN`,
or `GITHUB_TOKEN` for the bot). It refuses any API that is not on this machine: it is a
tool for the emulator, not a GitHub client. It prints what it made and its web page
(`--json`: GitHub's JSON answer instead); GitHub's refusal (a stranger merging: 403)
is printed with its status and exits 1.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

__all__ = ["ActError", "Request", "add_parser", "main", "request_for"]

EXIT_REFUSED = 1
EXIT_USAGE = 2
_TIMEOUT_SECONDS = 30.0


class ActError(Exception):
    """An action that cannot be sent (missing setting, bad argument), said plainly."""


@dataclass(frozen=True)
class Request:
    """One REST call of an action: what `curl -X METHOD URL -d BODY` would send."""

    method: str
    path: str
    """Under the API root, e.g. `/repos/acme/widgets/issues`."""
    body: dict[str, Any]


def add_parser(actions: Any) -> None:
    """Add `emulator act` and its actions to `emulator`'s subcommands."""
    act = cast(
        argparse.ArgumentParser,
        actions.add_parser(
            "act",
            help="file an issue, comment, review, approve or merge as a person on the emulator",
            description=(
                "Act on the emulator `agent-loop emulator serve` runs, as its owner, a writer, "
                "a stranger or the agents' bot: one REST request with their token (from the "
                "export lines serve printed). Prints what was made and its web page."
            ),
        ),
    )
    _who(act, top=True)
    what = act.add_subparsers(dest="action", metavar="ACTION", required=True)

    issue = what.add_parser("issue", help="file an issue")
    issue.add_argument("--title", required=True)
    issue.add_argument("--body", default="")
    issue.add_argument(
        "--label", action="append", default=[], help="a label (needs triage access; repeat)"
    )

    comment = what.add_parser(
        "comment", help="comment on an issue or PR (e.g. `/agent-loop build`)"
    )
    comment.add_argument("number", type=int, help="issue or PR number")
    comment.add_argument("--body", required=True)

    review = what.add_parser("review", help="review a PR: comment (default), approve or ask")
    review.add_argument("number", type=int, help="PR number")
    verdict = review.add_mutually_exclusive_group()
    verdict.add_argument("--approve", action="store_true", help="approve the PR")
    verdict.add_argument(
        "--request-changes", action="store_true", help="ask for changes before merging"
    )
    review.add_argument("--body", default="", help="the review's text")
    review.add_argument(
        "--inline",
        nargs=2,
        action="append",
        default=[],
        metavar=("PATH:LINE", "TEXT"),
        help="a comment on a line of the PR's new version (repeat for more)",
    )

    approve = what.add_parser("approve", help="approve a PR (a review with --approve)")
    approve.add_argument("number", type=int, help="PR number")
    approve.add_argument("--body", default="")

    merge = what.add_parser("merge", help="merge a PR (write access needed)")
    merge.add_argument("number", type=int, help="PR number")
    merge.add_argument(
        "--method",
        choices=("merge", "squash", "rebase"),
        default="merge",
        help="a merge commit (default), one squashed commit, or the commits rebased",
    )
    for action in (issue, comment, review, approve, merge):  # `--as` after the action too
        _who(action, top=False)


def _who(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """`--as` and `--json`, before the action (`top`) or after it: where a person types
    them; after the action they override only when given."""
    parser.add_argument(
        "--as",
        dest="person",
        choices=("owner", "writer", "stranger", "bot"),
        default="owner" if top else argparse.SUPPRESS,
        help="who acts (default: owner); their token is EMULATOR_<WHO>_TOKEN, the bot's "
        "GITHUB_TOKEN",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="print GitHub's JSON answer",
    )


def request_for(args: argparse.Namespace, repo: str) -> Request:
    """The REST call of the action in `args` on `repo` (`owner/name`).

    Raises:
        ActError: An `--inline` place is not `PATH:LINE`, or a review says nothing.
    """
    action = cast(str, args.action)
    base = f"/repos/{repo}"
    if action == "issue":
        body: dict[str, Any] = {"title": args.title, "body": args.body}
        if args.label:
            body["labels"] = list(cast(list[str], args.label))
        return Request("POST", f"{base}/issues", body)
    if action == "comment":
        return Request("POST", f"{base}/issues/{args.number}/comments", {"body": args.body})
    if action == "merge":
        return Request("PUT", f"{base}/pulls/{args.number}/merge", {"merge_method": args.method})
    if action == "approve" or bool(getattr(args, "approve", False)):
        event = "APPROVE"
    elif bool(getattr(args, "request_changes", False)):
        event = "REQUEST_CHANGES"
    else:
        event = "COMMENT"
    places = cast(list[list[str]], getattr(args, "inline", []))
    inline = [_inline(place, text) for place, text in places]
    text = cast(str, args.body)
    if event != "APPROVE" and not text and not inline:
        raise ActError("a review needs --body or --inline (GitHub refuses an empty one)")
    review: dict[str, Any] = {"event": event, "body": text}
    if inline:
        review["comments"] = inline
    return Request("POST", f"{base}/pulls/{args.number}/reviews", review)


def _inline(place: str, text: str) -> dict[str, Any]:
    path, _, line = place.rpartition(":")
    if not path or not line.isdigit() or int(line) < 1:
        raise ActError(f"--inline {place!r}: expected PATH:LINE, e.g. src/app.py:12")
    return {"path": path, "line": int(line), "side": "RIGHT", "body": text}


def _setting(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise ActError(
            f"{name} is not set: paste the export lines `agent-loop emulator serve` printed "
            "into this shell"
        )
    return value


def _local_api(url: str) -> str:
    """`url` if it is on this machine (loopback), else `ActError`."""
    host = urlsplit(url).hostname or ""
    try:
        local = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = False
    if not local:
        raise ActError(
            f"GITHUB_API_URL is {url}: `emulator act` talks to a local emulator only "
            "(`agent-loop emulator serve` prints the URL to export)"
        )
    return url.rstrip("/")


def main(args: argparse.Namespace) -> int:
    """Run one action; 0 when GitHub accepted it, 1 when it refused, 2 on bad usage."""
    import httpx

    from agent_loop.emulator_cmd import PEOPLE

    person = cast(str, args.person)
    variable = PEOPLE[person].token_variable
    try:
        api = _local_api(_setting("GITHUB_API_URL"))
        repo = _setting("AGENT_LOOP_REPO")
        token = _setting(variable)
        request = request_for(args, repo)
    except ActError as exc:
        print(f"agent-loop emulator act: {exc}", file=sys.stderr)
        return EXIT_USAGE
    headers = {
        "Authorization": f"token {token}",
        "Accept": "application/vnd.github+json",
        "User-Agent": "agent-loop-emulator-act",
    }
    try:
        with httpx.Client(timeout=_TIMEOUT_SECONDS, trust_env=False) as client:
            answer = client.request(
                request.method, api + request.path, json=request.body, headers=headers
            )
    except httpx.TransportError as exc:
        print(
            f"agent-loop emulator act: cannot reach {api} ({type(exc).__name__}: {exc}); "
            "is `agent-loop emulator serve` still running?",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    data = _json(answer)
    if answer.status_code >= 400:
        said = cast(dict[str, Any], data).get("message") if isinstance(data, dict) else None
        message = str(said) if said is not None else answer.text[:300]
        print(
            f"agent-loop emulator act: {request.method} {request.path} as {person}: "
            f"{answer.status_code} {message}",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    if bool(args.json):
        print(json.dumps(data, indent=2))
        return 0
    print(_summary(args, person, data, api, repo))
    return 0


def _json(answer: Any) -> Any:
    try:
        return answer.json()
    except ValueError:
        return {}


def _web(api: str, repo: str) -> str:
    """The repository's web root (the emulator serves its pages beside its API)."""
    root = api.removesuffix("/api/v3")
    return f"{root}/{repo}"


def _summary(args: argparse.Namespace, person: str, data: Any, api: str, repo: str) -> str:
    """One line a person reads: what was made, and where to look at it."""
    answer = cast(dict[str, Any], data) if isinstance(data, dict) else {}
    who = cast(dict[str, Any], answer.get("user") or {}).get("login", person)
    action = cast(str, args.action)
    if action == "issue":
        return f"@{who} filed issue #{answer.get('number')}: {answer.get('html_url')}"
    if action == "comment":
        return f"@{who} commented on #{args.number}: {answer.get('html_url')}"
    if action == "merge":  # GitHub's merge answer names no user: the token's login
        sha = str(answer.get("sha", ""))[:7]
        web = f"{_web(api, repo)}/pull/{args.number}"
        return f"@{_login(person, repo)} merged PR #{args.number} as {sha}: {web}"
    state = str(answer.get("state", "")).lower().replace("_", " ")
    return f"@{who} reviewed PR #{args.number} ({state}): {answer.get('html_url')}"


def _login(person: str, repo: str) -> str:
    """The login behind `--as person` (`emulator_cmd.login_of` without the emulator at
    hand): the owner is the repository's owner, the bot the exported bot login."""
    from agent_loop.emulator_cmd import PEOPLE

    if person == "owner":
        return repo.partition("/")[0]
    if person == "bot":
        return os.environ.get("AGENT_LOOP_BOT_LOGIN", "").strip() or "agent-loop[bot]"
    return PEOPLE[person].login
