"""`agent-loop emulator serve` and `act`: a GitHub on this machine to try the agents against.

```text
agent-loop emulator serve [--port N] [--seed demo|empty|history|FILE] [--webhook URL [--webhook-secret S]]
agent-loop emulator act --as owner|writer|stranger|bot issue|comment|review|approve|merge ...
```

`serve` serves the GitHub emulator the tests and the demo use (REST, the GraphQL corner
the agents query, git archive downloads, webhooks, and a read-only web page behind every
`html_url`) on 127.0.0.1, seeds one repository, and prints the settings to export in
another shell, so `agent-loop run builder`, `serve` and `status` work against it step by
step (README: "Try it against a local GitHub"; docs/try-it.md walks the whole loop). It
runs until interrupted (Ctrl-C, SIGTERM); its state lives in memory and goes with it.

Besides the agents' bot it holds three people, each with a token printed among the
exports: the owner (`EMULATOR_OWNER_TOKEN`, admin), a writer (`EMULATOR_WRITER_TOKEN`,
write access: trusted like a maintainer by default) and a stranger
(`EMULATOR_STRANGER_TOKEN`, read access: anyone on a public repository, whose issues
the agents must not work on). `act` (`emulator_act`) plays any of them over the REST
API. It is a local service for trying things out: the clock is the real one, every
token is random and new at each start (printed once, here), and a request whose `Host`
is not the loopback address it listens on is refused (a web page cannot reach it
through DNS rebinding).

Seeds:

- `demo` (default): the demo's sample project (`acme/widgets`, a tiny package with
  tests) and the owner's three issues (a feature, a bug, a specification);
- `empty`: `acme/widgets` with a README and no issue;
- `history`: `acme/calc`, a tiny calculator grown by six merged pull requests, three of
  which `agent-loop eval mine` makes instances of (docs/eval.md, "Try it on the
  emulator"; `agent_loop_testing.seed_eval_history`);
- `FILE`: a JSON file `{"repo": "owner/name", "files": {"path": "text", ...},
  "issues": [{"title": "...", "body": "...", "labels": ["..."]}, ...]}`.

With `--webhook URL` every state change is delivered to `URL` (an `agent-loop serve`'s
`/webhook`), signed with `--webhook-secret` (default: `AGENT_LOOP_WEBHOOK_SECRET`, else
a fresh one, printed among the exports). The emulator is a test double: it ships with
the CLI (in `agent_loop_testing`), never in an agent's image.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import signal
import sys
import threading
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from agent_loop_testing import GitHubEmulator

__all__ = [
    "PEOPLE",
    "SEEDS",
    "Person",
    "add_parser",
    "build_emulator",
    "exports",
    "load_seed",
    "login_of",
    "main",
]

EXIT_USAGE = 2
SEEDS = ("demo", "empty", "history")
"""The built-in seeds; anything else names a JSON file."""


@dataclass(frozen=True)
class Person:
    """Someone `act --as` can be: a login, a repository role, the variable of a token."""

    login: str
    """The GitHub login (`owner`: the repository's owner, filled in per seed)."""
    permission: str
    """Their role on the repository (`admin`, `write`, `read`)."""
    token_variable: str
    """Where `serve` prints their token and `act` reads it."""


PEOPLE: dict[str, Person] = {
    "owner": Person("", "admin", "EMULATOR_OWNER_TOKEN"),
    "writer": Person("writer", "write", "EMULATOR_WRITER_TOKEN"),
    "stranger": Person("stranger", "read", "EMULATOR_STRANGER_TOKEN"),
    "bot": Person("", "write", "GITHUB_TOKEN"),
}
"""`act --as` names: the owner (admin), a writer, a stranger (read access only, as
anyone has on a public repository) and the agents' own bot (its token is the agents'
`GITHUB_TOKEN`)."""


class SeedError(ValueError):
    """A seed file that cannot be read or does not have the expected shape."""


def add_parser(commands: Any) -> None:
    """Add `emulator serve` to the CLI's subcommands."""
    emulator = cast(
        argparse.ArgumentParser,
        commands.add_parser(
            "emulator",
            help="serve a local GitHub (the emulator) to try the agents against",
            description=(
                "A GitHub on this machine: the emulator the tests use (REST, GraphQL, "
                "webhooks, a web page per issue and PR), with one seeded repository. `serve` "
                "prints the settings to export; `act` files issues, comments, reviews and "
                "merges as its owner, a writer or a stranger (docs/try-it.md)."
            ),
        ),
    )
    actions = emulator.add_subparsers(dest="emulator_command", metavar="ACTION", required=True)
    serve = actions.add_parser(
        "serve",
        help="serve the emulator on 127.0.0.1 until interrupted",
        description=(
            "Serve the GitHub emulator on 127.0.0.1 with one seeded repository, print the "
            "settings to export in another shell (the agents' and a token for the owner, a "
            "writer and a stranger, new at every start), and run until Ctrl-C. For trying "
            "things out: it answers to 127.0.0.1, localhost and [::1] only."
        ),
    )
    serve.add_argument(
        "--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)"
    )
    serve.add_argument(
        "--seed",
        default="demo",
        metavar="demo|empty|history|FILE",
        help="what the repository holds: the demo's project and issues (default), an "
        "empty repository, a history of merged pull requests to try agent-loop eval on "
        "(acme/calc), or a JSON file {repo, files, issues}",
    )
    serve.add_argument(
        "--webhook", metavar="URL", help="deliver webhooks to URL (e.g. agent-loop serve's)"
    )
    serve.add_argument(
        "--webhook-secret",
        metavar="SECRET",
        help="signing secret of --webhook (default: AGENT_LOOP_WEBHOOK_SECRET, else a new one)",
    )
    from agent_loop import emulator_act

    emulator_act.add_parser(actions)


def load_seed(seed: str) -> tuple[str, dict[str, str], list[dict[str, Any]]]:
    """`(repo, files, issues)` of a seed name or JSON file.

    Raises:
        SeedError: The file is missing, not JSON, or not of the documented shape.
    """
    from agent_loop import demo_project as project

    if seed == "demo":
        issues = [
            {"title": i.title, "body": i.body} for i in (project.FEATURE, project.BUG, project.SPEC)
        ]
        return "acme/widgets", dict(project.FILES), issues
    if seed == "empty":
        return "acme/widgets", {"README.md": "# widgets\n"}, []
    if seed == "history":  # files and issues come with its history (`build_emulator`)
        from agent_loop_testing import EVAL_HISTORY_REPO

        return EVAL_HISTORY_REPO, {}, []
    path = Path(seed)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SeedError(
            f"--seed {seed}: not demo, empty, history or a readable file ({exc.strerror})"
        ) from None
    except json.JSONDecodeError as exc:
        raise SeedError(f"--seed {seed}: not JSON ({exc})") from None
    return _parse_seed(seed, data)


def _parse_seed(seed: str, data: object) -> tuple[str, dict[str, str], list[dict[str, Any]]]:
    if not isinstance(data, dict):
        raise SeedError(f"--seed {seed}: expected an object with repo, files and issues")
    doc = cast(dict[str, Any], data)
    repo = doc.get("repo", "acme/widgets")
    if not isinstance(repo, str) or repo.count("/") != 1 or "" in repo.split("/"):
        raise SeedError(f"--seed {seed}: repo must be owner/name, not {repo!r}")
    files = doc.get("files", {"README.md": "# seeded\n"})
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in cast(dict[Any, Any], files).items()
    ):
        raise SeedError(f"--seed {seed}: files must map paths to text")
    issues = doc.get("issues", [])
    if not isinstance(issues, list) or not all(
        isinstance(i, dict) and isinstance(cast(dict[str, Any], i).get("title"), str)
        for i in cast(list[Any], issues)
    ):
        raise SeedError(f"--seed {seed}: issues must be a list of objects with a title")
    return repo, cast(dict[str, str], files), cast(list[dict[str, Any]], issues)


def build_emulator(
    repo: str, files: dict[str, str], issues: list[dict[str, Any]], *, history: bool = False
) -> tuple[GitHubEmulator, list[int]]:
    """The emulator `serve` serves: the real clock, random tokens, the people of
    `PEOPLE`, the seed's files and issues (filed by the owner), or with `history` the
    `history` seed's merged pull requests. Returns it and the seed's issues' numbers."""
    from agent_loop_testing import GitHubEmulator, seed_eval_history

    owner, name = repo.split("/")
    emulator = GitHubEmulator(owner, name, clock="real", random_tokens=True)
    for person in PEOPLE.values():
        if person.login and person.login != owner:
            emulator.add_user(person.login, permission=person.permission)
    if history:
        seed_eval_history(emulator)
        return emulator, []
    emulator.seed_files(files, message="seed")
    numbers = [
        emulator.add_issue(i["title"], str(i.get("body", "")), labels=list(i.get("labels", [])))
        for i in issues
    ]
    return emulator, numbers


def login_of(emulator: GitHubEmulator, role: str) -> str:
    """The login behind an `act --as` name on this emulator."""
    if role == "owner":
        return emulator.owner
    if role == "bot":
        return emulator.bot_login
    return PEOPLE[role].login


def exports(
    emulator: GitHubEmulator, url: str, *, webhook_secret: str | None, seed: str
) -> list[str]:
    """The `export NAME=value` lines another shell needs to work on the emulator: the
    agents' settings, then the people's tokens (`PEOPLE`): the owner, a writer, a
    stranger (always the last line)."""
    values = {
        "GITHUB_API_URL": url,
        "GITHUB_TOKEN": emulator.bot_token,
        "AGENT_LOOP_REPO": emulator.full_name,
        "AGENT_LOOP_BOT_LOGIN": emulator.bot_login,
    }
    if seed in ("demo", "history"):  # the sample's tests, with the pytest next to agent-loop
        from agent_loop.demo import demo_test_command

        values["AGENT_LOOP_TEST_COMMAND"] = demo_test_command()
    if webhook_secret is not None:
        values["AGENT_LOOP_WEBHOOK_SECRET"] = webhook_secret
    lines = [f"export {name}={shlex.quote(value)}" for name, value in values.items()]
    for role in ("owner", "writer", "stranger"):
        person, login = PEOPLE[role], login_of(emulator, role)
        token = emulator.token_for(login)
        lines.append(
            f"export {person.token_variable}={shlex.quote(token)}"
            f"  # @{login}, {person.permission}: agent-loop emulator act --as {role}"
        )
    return lines


def main(args: argparse.Namespace) -> int:
    """Run `agent-loop emulator serve` or `act`; returns the exit code (`serve`: 0 once
    interrupted)."""
    if cast(str, args.emulator_command) == "act":
        from agent_loop import emulator_act

        return emulator_act.main(args)
    return _serve(args)


def _serve(args: argparse.Namespace) -> int:
    seed = cast(str, args.seed)
    try:
        repo, files, issues = load_seed(seed)
    except SeedError as exc:
        return _fail(str(exc))
    port = cast(int, args.port)
    if not 0 <= port <= 65535:
        return _fail(f"--port {port}: expected 0 to 65535")
    emulator, numbers = build_emulator(repo, files, issues, history=seed == "history")
    webhook = cast(str | None, args.webhook)
    secret = None
    if webhook is not None:
        secret = (
            cast(str | None, args.webhook_secret)
            or os.environ.get("AGENT_LOOP_WEBHOOK_SECRET")
            or secrets.token_hex(16)
        )
        emulator.add_webhook(webhook, secret)
    stop = threading.Event()

    def interrupted(signum: int, frame: object) -> None:
        del signum, frame
        stop.set()

    with ExitStack() as stack:
        try:
            url = stack.enter_context(emulator.serve(port=port))
        except OSError as exc:
            return _fail(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}")
        for signum in (signal.SIGINT, signal.SIGTERM):  # stop cleanly, then as before
            stack.callback(signal.signal, signum, signal.signal(signum, interrupted))
        lines = exports(emulator, url, webhook_secret=secret, seed=seed)
        shown = ", ".join(f"#{n}" for n in numbers) or "no issue"
        if seed == "history":
            shown = "six merged pull requests"
        _say(f"agent-loop emulator: GitHub at {url} with {repo} ({shown}); Ctrl-C stops it")
        _say(f"agent-loop emulator: open {url}/{repo} in a browser to follow along")
        if webhook is not None:
            _say(f"agent-loop emulator: webhooks to {webhook}")
        _say(
            "For trying things out only: the tokens below are new at every start and shown "
            "once; requests must name 127.0.0.1, localhost or [::1] as their host."
        )
        _say(
            "Export these in another shell, then run agent-loop there (GITHUB_TOKEN is the "
            f"agents' own, @{emulator.bot_login}; the EMULATOR_*_TOKEN are the people's):"
        )
        for line in lines:
            print(line, flush=True)
        stop.wait()
    _say("agent-loop emulator: stopped")
    return 0


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _fail(message: str) -> int:
    print(f"agent-loop emulator: {message}", file=sys.stderr)
    return EXIT_USAGE
