"""Which agent a GitHub event wakes, for which target (pure: a payload in, intents out).

| event | when | run |
|---|---|---|
| `issues` | `opened`; `labeled` with the trusted label; `assigned` to the agents | builder, that issue |
| `issue_comment` `created` | on an issue, with a command | builder, that issue |
| `issue_comment` `created` | on a pull request (command or not) | reviewer, if an agent PR |
| `pull_request_review` `submitted`, `pull_request_review_comment` `created` | on an agent PR | reviewer, that PR |
| `check_run` / `check_suite` `completed` with a failure; `status` `failure`/`error` | on an agent PR's head | reviewer, that PR |
| `pull_request` `closed` (merged or not) | an agent PR | distiller |

An intent is not yet a run. It says what must still be checked against GitHub before
a run starts (`trust`: the sender must be trusted, or the event is a CI result that is
trusted by its source; `agent_pr`: whether the PR is the agents' own must be looked
up), because the payload itself is only as trustworthy as its signature: it says who
acted, but trust comes from the repository's permissions, read fresh. Everything is
refused when it concerns another repository or was done by the agents themselves
(their own comments and PRs must never wake them, or they would wake themselves
forever).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from agent_loop_common.commands import parse_commands

__all__ = [
    "AgentName",
    "AgentPrCheck",
    "CommandRef",
    "Intent",
    "RouteContext",
    "Routed",
    "TrustRule",
    "route_event",
]

AgentName = Literal["builder", "reviewer", "distiller"]

TrustRule = Literal["sender", "ci"]
"""`sender`: the person who acted must be trusted. `ci`: a CI result, trusted by source."""

AgentPrCheck = Literal["none", "payload", "lookup", "head_sha"]
"""How the PR is known to be the agents' own: not a PR run, already seen in the payload,
look the PR up by number, or find the open agent PRs at `head_sha`."""

FAILED_CONCLUSIONS = frozenset({"failure", "timed_out", "startup_failure"})
FAILED_STATES = frozenset({"failure", "error"})


@dataclass(frozen=True, slots=True)
class RouteContext:
    """What routing needs to know about this deployment."""

    repo: str
    """`owner/name` of the repository the agents work on."""
    agent_login: str
    branch_prefix: str
    trusted_label: str | None = None


@dataclass(frozen=True, slots=True)
class CommandRef:
    """The comment whose commands a run answers."""

    comment_id: int
    kind: Literal["issue", "pr"]
    words: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Intent:
    """One run a delivery asks for, pending the checks it names."""

    agent: AgentName
    target: int | None
    """Issue (builder) or PR (reviewer) number; None for the distiller or a PR still to
    find by `head_sha`."""
    reason: str
    """`event.action` and why, for the logs."""
    sender: str
    trust: TrustRule = "sender"
    agent_pr: AgentPrCheck = "none"
    head_sha: str | None = None
    command: CommandRef | None = None


@dataclass(frozen=True, slots=True)
class Routed:
    """The intents of one delivery; none means it is not acted on, and `reason` says why."""

    intents: tuple[Intent, ...] = ()
    reason: str = ""


def _obj(value: object) -> Mapping[str, Any]:
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def _login(value: object) -> str:
    login = _obj(value).get("login")
    return login if isinstance(login, str) else ""


def _number(value: object) -> int | None:
    number = _obj(value).get("number")
    return (
        number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else None
    )


def _same(a: str, b: str) -> bool:
    return a.casefold() == b.casefold()


def is_agent_pull(pull: Mapping[str, Any], ctx: RouteContext) -> bool:
    """The agents' identity opened it from a branch under the prefix (both, never one)."""
    head = _obj(pull.get("head"))
    ref = head.get("ref")
    return (
        _same(_login(pull.get("user")), ctx.agent_login)
        and isinstance(ref, str)
        and ref.startswith(ctx.branch_prefix)
    )


def route_event(event: str, payload: Mapping[str, Any], ctx: RouteContext) -> Routed:
    """Map one verified delivery to the runs it asks for (see the module docstring).

    Args:
        event: `X-GitHub-Event`.
        payload: The parsed JSON body.
        ctx: This deployment's repository, identity, branch prefix and label.
    """
    repo = _obj(payload.get("repository")).get("full_name")
    if not isinstance(repo, str) or not _same(repo, ctx.repo):
        return Routed(reason=f"another repository ({repo!r}, expected {ctx.repo})")
    sender = _login(payload.get("sender"))
    if not sender:
        return Routed(reason="no sender")
    if _same(sender, ctx.agent_login):
        return Routed(reason="the agents' own action")
    action = payload.get("action")
    handler = _HANDLERS.get(event)
    if handler is None:
        return Routed(reason=f"event {event!r} is not acted on")
    return handler(payload, action if isinstance(action, str) else "", sender, ctx)


def _issues(payload: Mapping[str, Any], action: str, sender: str, ctx: RouteContext) -> Routed:
    issue = _obj(payload.get("issue"))
    number = _number(issue)
    if number is None or "pull_request" in issue:
        return Routed(reason="not an issue")
    if issue.get("state") != "open":
        return Routed(reason=f"issue #{number} is not open")
    why = f"issues.{action}"
    if action == "opened":
        pass
    elif action == "labeled":
        label = _obj(payload.get("label")).get("name")
        if (
            ctx.trusted_label is None
            or not isinstance(label, str)
            or not _same(label, ctx.trusted_label)
        ):
            return Routed(reason=f"label {label!r} is not the trusted label")
    elif action == "assigned":
        if not _same(_login(payload.get("assignee")), ctx.agent_login):
            return Routed(reason="assigned to someone else")
    else:
        return Routed(reason=f"{why} is not acted on")
    return Routed((Intent("builder", number, why, sender),))


def _issue_comment(
    payload: Mapping[str, Any], action: str, sender: str, ctx: RouteContext
) -> Routed:
    if action != "created":
        return Routed(
            reason=f"issue_comment.{action} is not acted on (edits never replay commands)"
        )
    issue = _obj(payload.get("issue"))
    comment = _obj(payload.get("comment"))
    number, comment_id, body = _number(issue), comment.get("id"), comment.get("body")
    if number is None or not isinstance(comment_id, int) or not isinstance(body, str):
        return Routed(reason="malformed comment")
    words = tuple(c.word for c in parse_commands(body))
    on_pr = "pull_request" in issue
    kind: Literal["issue", "pr"] = "pr" if on_pr else "issue"
    command = CommandRef(comment_id, kind, words) if words else None
    if on_pr:
        why = "issue_comment.created on a PR" + (" with a command" if words else "")
        return Routed(
            (Intent("reviewer", number, why, sender, agent_pr="lookup", command=command),)
        )
    if command is None:
        return Routed(reason="a comment on an issue without a command")
    if issue.get("state") != "open":
        return Routed(reason=f"issue #{number} is not open")
    return Routed(
        (
            Intent(
                "builder", number, "issue_comment.created with a command", sender, command=command
            ),
        )
    )


def _review(
    payload: Mapping[str, Any], action: str, sender: str, ctx: RouteContext, event: str, wanted: str
) -> Routed:
    if action != wanted:
        return Routed(reason=f"{event}.{action} is not acted on")
    pull = _obj(payload.get("pull_request"))
    number = _number(pull)
    if number is None:
        return Routed(reason="no pull request")
    if not is_agent_pull(pull, ctx):
        return Routed(reason=f"PR #{number} is not an agent PR")
    if pull.get("state") != "open":
        return Routed(reason=f"PR #{number} is not open")
    return Routed((Intent("reviewer", number, f"{event}.{action}", sender, agent_pr="payload"),))


def _pull_request_review(
    payload: Mapping[str, Any], action: str, sender: str, ctx: RouteContext
) -> Routed:
    return _review(payload, action, sender, ctx, "pull_request_review", "submitted")


def _pull_request_review_comment(
    payload: Mapping[str, Any], action: str, sender: str, ctx: RouteContext
) -> Routed:
    return _review(payload, action, sender, ctx, "pull_request_review_comment", "created")


def _failed_on_head(event: str, body: Mapping[str, Any], sender: str) -> Routed:
    sha = body.get("head_sha")
    if not isinstance(sha, str) or not sha:
        return Routed(reason="no head sha")
    why = f"{event}.completed: {body.get('conclusion')}"
    pulls = body.get("pull_requests")
    numbers: list[int] = []
    for item in cast("list[object]", pulls) if isinstance(pulls, list) else []:
        pull = _obj(item)
        if _obj(pull.get("head")).get("sha") == sha and (n := _number(pull)) is not None:
            numbers.append(n)
    if not numbers:  # a fork's PR, or GitHub left the list empty: find the PR by its head
        return Routed((Intent("reviewer", None, why, sender, "ci", "head_sha", sha),))
    return Routed(
        tuple(Intent("reviewer", n, why, sender, "ci", "lookup", sha) for n in sorted(set(numbers)))
    )


Handler = Callable[[Mapping[str, Any], str, str, RouteContext], Routed]
"""`(payload, action, sender, ctx) -> Routed` for one event type."""


def _check(event: str, key: str) -> Handler:
    def handle(payload: Mapping[str, Any], action: str, sender: str, ctx: RouteContext) -> Routed:
        body = _obj(payload.get(key))
        if action != "completed" or body.get("conclusion") not in FAILED_CONCLUSIONS:
            return Routed(reason=f"{event}.{action} {body.get('conclusion')} is not a failure")
        return _failed_on_head(event, body, sender)

    return handle


def _status(payload: Mapping[str, Any], action: str, sender: str, ctx: RouteContext) -> Routed:
    state, sha = payload.get("state"), payload.get("sha")
    if state not in FAILED_STATES:
        return Routed(reason=f"status {state} is not a failure")
    if not isinstance(sha, str) or not sha:
        return Routed(reason="no sha")
    return Routed((Intent("reviewer", None, f"status: {state}", sender, "ci", "head_sha", sha),))


def _pull_request(
    payload: Mapping[str, Any], action: str, sender: str, ctx: RouteContext
) -> Routed:
    if action != "closed":
        return Routed(reason=f"pull_request.{action} is not acted on")
    pull = _obj(payload.get("pull_request"))
    number = _number(pull)
    if number is None or not is_agent_pull(pull, ctx):
        return Routed(reason=f"PR #{number} is not an agent PR")
    merged = "merged" if pull.get("merged") is True else "closed unmerged"
    return Routed(
        (
            Intent(
                "distiller",
                None,
                f"pull_request.closed: #{number} {merged}",
                sender,
                agent_pr="payload",
            ),
        )
    )


_HANDLERS: dict[str, Handler] = {
    "issues": _issues,
    "issue_comment": _issue_comment,
    "pull_request_review": _pull_request_review,
    "pull_request_review_comment": _pull_request_review_comment,
    "check_run": _check("check_run", "check_run"),
    "check_suite": _check("check_suite", "check_suite"),
    "status": _status,
    "pull_request": _pull_request,
}
