"""`agent-loop claims`: the claims a repository holds, and releasing one by hand.

```text
agent-loop claims list [--repo OWNER/NAME] [--all] [--json]     live claims (--all: every claim ref)
agent-loop claims release TARGET [--repo OWNER/NAME] [--force]   e.g. `issue 5`, `#5`, `pr 7`
```

A run releases its claims on every exit path, Ctrl-C and SIGTERM included; a claim is
left behind only by a process that died without its cleanup (a second Ctrl-C, `kill
-9`, a lost machine), and it then blocks its target until it expires
(`AGENT_LOOP_CLAIM_TTL_MINUTES`). `list` reads the claim refs (the protocol's
authority) and says, for each live one, which run holds it, until when, and whether
that run's process on this machine still runs. `release` frees one the way its run
would have (the live ref deleted, the claim comment marked released and naming who
released it), and refuses a live claim of another process unless `--force`: one of
this machine whose process still runs, or one of a run elsewhere (a cluster, another
`AGENT_LOOP_HOME`), which may still be working. Exit codes: 0 done, 1 refused (or
nothing readable: GitHub did not answer), 2 bad usage or configuration (a repository
GitHub does not know, a token it refuses: the message names the setting).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # imported when the command runs: `agent-loop --help` stays fast
    from agent_loop_common.claims import ClaimView
    from agent_loop_common.settings import Settings

__all__ = ["add_parser", "main"]

EXIT_REFUSED = 1
EXIT_USAGE = 2


def add_parser(commands: Any) -> None:
    """Add `claims list|release` to the CLI's subcommands."""
    claims = cast(
        argparse.ArgumentParser,
        commands.add_parser(
            "claims",
            help="list the claims a repository holds, or release one by hand",
            description=(
                "The agents' claims on issues and pull requests (docs/claims.md): which "
                "run holds what until when, and releasing one a dead process left behind."
            ),
        ),
    )
    actions = claims.add_subparsers(dest="claims_command", metavar="ACTION", required=True)
    listing = actions.add_parser(
        "list",
        help="the live claims (target, run, holder, expiry)",
        description="The live claims of the repository, read from its claim refs.",
    )
    listing.add_argument("--all", action="store_true", help="also expired and released claim refs")
    listing.add_argument("--json", action="store_true", help="one JSON object per claim")
    release = actions.add_parser(
        "release",
        help="release one claim (refuses a live one of another process unless --force)",
        description=(
            "Release a claim as its run would have: the claim ref deleted (an expired one "
            "marked released), the claim comment marked released with who released it. "
            "A live claim of a process that still runs, or of a run elsewhere, is refused "
            "unless --force."
        ),
    )
    release.add_argument(
        "target",
        nargs="+",
        metavar="TARGET",
        help="what to release: `issue 5`, `#5`, `pr 7` (or `repo distiller`)",
    )
    release.add_argument(
        "--force", action="store_true", help="release it even if its run may still be working"
    )
    for sub in (listing, release):
        sub.add_argument(
            "--repo",
            metavar="OWNER/NAME",
            help="the repository (one of AGENT_LOOP_REPOS; needed when it names several)",
        )


def main(args: argparse.Namespace) -> int:
    """Run `claims list` or `claims release`; returns the exit code."""
    from agent_loop_common.settings import load_settings

    settings = load_settings()
    repos = _repos(settings, cast(str | None, args.repo), one=args.claims_command == "release")
    if isinstance(repos, str):
        print(f"agent-loop claims: {repos}", file=sys.stderr)
        return EXIT_USAGE
    import asyncio  # not before the arguments parse: `--help` loads no event loop

    from agent_loop_common.github import AuthError, GitHubError, NotFound

    try:
        if args.claims_command == "list":
            every, as_json = bool(args.all), bool(args.json)
            return asyncio.run(_list(settings, repos, every=every, as_json=as_json))
        from agent_loop_common.claims import parse_target

        try:
            target = parse_target(cast(list[str], args.target))
        except ValueError as exc:
            print(f"agent-loop claims release: {exc}", file=sys.stderr)
            return EXIT_USAGE
        return asyncio.run(_release(settings, repos[0], target, force=bool(args.force)))
    except GitHubError as exc:  # its message names the setting to check: no traceback
        print(f"agent-loop claims: {exc}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, (AuthError, NotFound)) else EXIT_REFUSED


def _repos(settings: Settings, repo: str | None, *, one: bool) -> list[str] | str:
    """The repositories to look at, or what is wrong with the request."""
    if settings.many_repos:  # `owner/*` names no repository by itself
        named = [r for r in settings.repos if not r.endswith("/*")]
    else:
        named = [settings.repo]
    if repo is not None:
        wanted = repo.strip()
        owner = wanted.lower().partition("/")[0]
        known = [r.lower() for r in (*settings.repos, settings.repo) if r]
        if wanted.lower() in known or f"{owner}/*" in known:
            return [wanted]
        configured = ", ".join(settings.repos or (settings.repo,))
        return f"--repo {repo} is not a configured repository ({configured})"
    if settings.many_repos and (one or len(named) != len(settings.repos)):
        return (
            f"AGENT_LOOP_REPOS names several repositories ({', '.join(settings.repos)}): "
            "add --repo OWNER/NAME"
        )
    return named


async def _list(settings: Settings, repos: list[str], *, every: bool, as_json: bool) -> int:
    from agent_loop_common.claims import list_claims
    from agent_loop_common.runtime import github_from_settings

    now = datetime.now(UTC)
    found: list[tuple[str, ClaimView]] = []
    for repo in repos:
        async with github_from_settings(_for(settings, repo)) as github:
            found += [(repo, view) for view in await list_claims(github)]
    shown = [(repo, v) for repo, v in found if every or v.live(now)]
    if as_json:
        for repo, view in shown:
            print(json.dumps(_as_json(settings, repo, view, now)))
        return 0
    if not shown:
        where = ", ".join(repos)
        hidden = len(found) - len(shown)
        more = f" ({hidden} expired or released: --all)" if hidden else ""
        print(f"No live claims in {where}{more}.")
        return 0
    _print_table(settings, shown, now, several=len(repos) > 1)
    return 0


def _for(settings: Settings, repo: str) -> Settings:
    return settings.for_repo(repo) if settings.many_repos else settings


def _as_json(settings: Settings, repo: str, view: ClaimView, now: datetime) -> dict[str, Any]:
    m = view.marker
    holder = _process(settings, m.run) if m is not None else ""
    return {
        "repo": repo,
        "target": str(view.target),
        "state": view.state(now),
        "run_id": m.run if m else "",
        "role": m.role if m else "",
        "deployment": m.agent if m else "",
        "until": m.until.isoformat() if m else "",
        "process": holder,
        "ref": view.ref,
    }


def _print_table(
    settings: Settings, shown: list[tuple[str, ClaimView]], now: datetime, *, several: bool
) -> None:
    from agent_loop._table import render_table

    rows: list[list[str]] = []
    for repo, view in shown:
        m = view.marker
        expires = "-"
        if m is not None:
            left = int((m.until - now).total_seconds() // 60)
            when = m.until.strftime("%Y-%m-%d %H:%M UTC")
            expires = f"{when} (in {left} min)" if left >= 0 else f"{when} (past)"
        rows.append(
            [
                *([repo] if several else []),
                str(view.target),
                view.state(now),
                m.run if m else "-",
                f"{m.role} @ {m.agent}" if m else "-",
                expires if m is None or m.op != "release" else "-",
                (_process(settings, m.run) if m else "") or "-",
            ]
        )
    headers = ["target", "state", "run", "holder", "expires", "process here"]
    print(render_table(["repo", *headers] if several else headers, rows, max_cell=60))
    hint = _hint(settings, [(r, v) for r, v in shown if v.live(now)], several=several)
    if hint:
        print(hint)


def _hint(settings: Settings, live: list[tuple[str, ClaimView]], *, several: bool) -> str:
    """What to do about the live claims, if anything: release one whose process here has
    ended; of a run elsewhere, say that this machine cannot tell whether it still works.
    A claim whose process here still runs needs nothing (Ctrl-C there releases it)."""
    from agent_loop_common.runtime import local_holder

    dead: list[tuple[str, ClaimView]] = []
    elsewhere: list[tuple[str, ClaimView]] = []
    for repo, view in live:
        if view.marker is None:
            continue
        holder = local_holder(settings.home, view.marker.run)
        if holder is None or not holder.here:
            elsewhere.append((repo, view))
        elif not holder.alive:
            dead.append((repo, view))
    if dead:
        repo, view = dead[0]
        pick = f" --repo {repo}" if several else ""
        return f"Release one a dead process left: agent-loop claims release {_words(view)}{pick}"
    if elsewhere:
        repo, view = elsewhere[0]
        pick = f" --repo {repo}" if several else ""
        return (
            "A claim of a run elsewhere (not a process of this machine's "
            f"{settings.home}) may still be working and expires by itself; if you know its "
            f"run is gone: agent-loop claims release {_words(view)}{pick} --force"
        )
    return ""


def _words(view: ClaimView) -> str:
    t = view.target
    return f"{t.kind.value} {t.key}"


def _process(settings: Settings, run: str) -> str:
    """Whether `run`'s process on this machine still runs: `pid N (running)`, `pid N
    (ended)`, or empty (no process of this home holds it)."""
    from agent_loop_common.runtime import local_holder

    holder = local_holder(settings.home, run)
    if holder is None:
        return ""
    if not holder.here:
        return f"pid {holder.pid} on {holder.host}"
    return f"pid {holder.pid} ({'running' if holder.alive else 'ended'})"


async def _release(settings: Settings, repo: str, target: Any, *, force: bool) -> int:
    from agent_loop_common.claims import claim_of, release_claim
    from agent_loop_common.runtime import drop_holder, github_from_settings, local_holder

    now = datetime.now(UTC)
    async with github_from_settings(_for(settings, repo)) as github:
        view = await claim_of(github, target)
        marker = view.marker if view is not None else None
        if view is not None and marker is not None and view.live(now) and not force:
            refusal = _refusal(settings, marker.run, marker.role, marker.agent, marker.until)
            if refusal:
                print(f"agent-loop claims release: {target} in {repo} {refusal}", file=sys.stderr)
                return EXIT_REFUSED
        import getpass
        import socket

        login = (await github.viewer()).login
        operator = f"@{login} ({getpass.getuser()}@{socket.gethostname()})"
        done = await release_claim(github, target, operator=operator, now=now)
        if done.ref == "none" and done.comment_id is None:
            await github.repository()  # a missing claim, or a repository that is not there?
    holder = done.holder
    if done.ref == "none" and done.comment_id is None:
        print(f"No claim on {target} in {repo}: nothing to release.")
        return 0
    if holder is not None and local_holder(settings.home, holder.run) is not None:
        drop_holder(settings.home, holder.run)
    ref = {
        "deleted": "its claim ref was deleted",
        "marked released": "its expired claim ref was marked released",
        "moved": "its claim ref had passed to another run (left alone)",
        "none": "it had no claim ref",
    }[done.ref]
    comment = (
        "its claim comment now says you released it"
        if done.comment_id is not None
        else "no claim comment was found"
    )
    who = f" (run {holder.run}, {holder.role})" if holder is not None else ""
    print(f"Released {target} in {repo}{who}: {ref}; {comment}. A run can take it at once.")
    return 0


def _refusal(settings: Settings, run: str, role: str, agent: str, until: datetime) -> str:
    """Why a live claim is not released without `--force` (empty: its process ended)."""
    from agent_loop_common.runtime import local_holder

    holder = local_holder(settings.home, run)
    when = until.strftime("%H:%M UTC")
    if holder is not None and holder.here and not holder.alive:
        return ""
    if holder is not None and holder.here:
        return (
            f"is claimed by run {run} ({role}), whose process {holder.pid} on this machine "
            "still runs: stop it (Ctrl-C releases its claim), or pass --force."
        )
    return (
        f"is claimed until {when} by run {run} ({role}, deployment {agent}), not a process "
        f"of this machine's {settings.home}: it may still be working. Wait for it, stop "
        "it, or pass --force."
    )
