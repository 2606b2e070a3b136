"""`agent-loop`: the offline demo, one agent tick, the memory's status, deploys.

```text
agent-loop demo [--home DIR] [--quiet]             offline, no credentials
agent-loop run builder [--issue N] [--quiet|--json] [--home DIR] [--remote [--config FILE]]
agent-loop run reviewer [--pr N] ...               one tick on your repository
agent-loop run distiller ...
agent-loop status [--home DIR] [--limit N]         runs, metrics, lessons
agent-loop show RUN_ID [--home DIR | --remote]     one run: trace, diff, tests, cost
agent-loop deploy builder|reviewer|distiller|gateway|eval [--dry-run] [--config FILE]
agent-loop serve [--host H] [--port P]             the webhook gateway, runs in local mode
agent-loop sandbox check|run [--dir PATH] [-- CMD ...]   the agents' test sandbox
agent-loop claims list|release TARGET [--repo R] [--force]   the claims, one released by hand
agent-loop eval mine [--repo OWNER/NAME] [--since DATE] [--limit N] [--out FILE]
                                                   benchmark instances from merged PRs
agent-loop --version
```

Exit codes: 0 done (also an idle tick), 1 the tick ended in outcome `error` (or a deploy
failed), 2 bad usage, configuration or preflight: nothing was attempted (also a tick
that ended `preflight_failed`: a wrong repository, a refused token, a missing issue or
PR, an unreachable model), 130 / 143 a local tick stopped by SIGINT (Ctrl-C) / SIGTERM:
it stopped at its next safe point, released its claim and recorded the run
`interrupted`; a second signal exits at once, saying what may be left. A configuration
problem prints the settings' own message (each variable, what is wrong, what it is for)
and never a traceback: a person fixing their environment needs the variable's name. A
remote run or a deploy without a Flyte config naming a cluster is such a problem too:
it never falls back to running locally.
`run builder` and `run reviewer` also exit 2 before firing the tick when no sandbox can
run the repository's tests here (and `AGENT_LOOP_SANDBOX` is not `off`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from agent_loop import claims_cmd, emulator_cmd, eval_cmd, lessons_cmd, sandbox_cmd, show_cmd
from agent_loop.agents import AGENTS, TARGETS, AgentName, run_agent_once

if TYPE_CHECKING:
    from agent_loop.live import LiveMode
    from agent_loop_common.memory import MemoryLocation
    from agent_loop_common.runtime import TickSummary
    from agent_loop_common.settings import Settings

# Only the standard library and the light modules above are imported before the
# arguments parse: `--help` (and a usage error) answers without loading Flyte, githubkit,
# pydantic or the agents. Each command imports what it uses when it runs.

__all__ = ["EXIT_CONFIG", "EXIT_FAILED", "build_parser", "main"]

EXIT_FAILED = 1
"""The command ran but its work failed (a tick ended in outcome `error`, a failed deploy)."""
EXIT_CONFIG = 2
"""Bad usage or configuration: nothing was attempted."""

_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

CONFIG_TEMPLATE = "infra/flyte/remote.yaml"
"""The Flyte config template the help names (`agent_loop_common.runtime.CONFIG_TEMPLATE`,
repeated here so the parser needs no import of the runtime; a test holds them equal)."""


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and for generating help text)."""
    parser = argparse.ArgumentParser(
        prog="agent-loop",
        description=(
            "Three scheduled AI agents on Flyte: the builder turns issues into verified "
            "pull requests, the reviewer answers review feedback with verified fixes, and "
            "the distiller learns lessons from the graded history."
        ),
        epilog="Start with `agent-loop demo`: offline, no credentials needed.",
    )
    parser.add_argument(
        "--log-level", choices=_LEVELS, help="log level (default: AGENT_LOOP_LOG_LEVEL or INFO)"
    )
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = commands.add_parser(
        "demo",
        help="run the whole loop offline against an emulated GitHub with a replayed model",
        description=(
            "Run builder -> reviewer -> distiller in Flyte local mode against a GitHub "
            "emulator on 127.0.0.1, with a replayed (scripted) model: no credentials, "
            "no network. Memory and reports go to a fresh demo folder."
        ),
    )
    demo.add_argument(
        "--home",
        type=Path,
        default=Path(".agent-loop") / "demo",
        help="demo folder, emptied first (default: .agent-loop/demo)",
    )
    demo.add_argument(
        "--quiet", action="store_true", help="print each tick's outcome line and nothing else"
    )

    run = commands.add_parser(
        "run",
        help="run one tick of an agent in Flyte local mode (or --remote on a cluster)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Run one tick of an agent against the configured repository and model. Local\n"
            "by default (Flyte local mode, memory and reports under AGENT_LOOP_HOME);\n"
            "--remote fires the deployed task on the cluster of a Flyte config."
        ),
    )
    agents = run.add_subparsers(dest="agent", metavar="AGENT", required=True)
    for agent in AGENTS:
        sub = agents.add_parser(agent, help=f"one {agent} tick")
        if agent == "builder":
            sub.add_argument("--issue", type=_positive, help="work on this issue only")
        elif agent == "reviewer":
            sub.add_argument("--pr", type=_positive, help="review this pull request only")
        target = TARGETS[agent]
        sub.add_argument(
            "--repo",
            metavar="OWNER/NAME",
            help=(
                f"work in this repository only (one of AGENT_LOOP_REPOS; needed with "
                f"--{target} or --retry-now when the list names several)"
                if target is not None
                else "pass over this repository only (one of AGENT_LOOP_REPOS; default: "
                "a pass over each)"
            ),
        )
        sub.add_argument(
            "--home",
            type=Path,
            metavar="DIR",
            help="local state folder for this command (sets AGENT_LOOP_HOME)",
        )
        sub.add_argument(
            "--remote", action="store_true", help="fire the deployed task on the Flyte cluster"
        )
        sub.add_argument(
            "--config",
            type=Path,
            metavar="FILE",
            help=f"Flyte config of --remote (default: AGENT_LOOP_FLYTE_CONFIG, else where "
            f"the flyte CLI looks); template: {CONFIG_TEMPLATE}",
        )
        sub.add_argument(
            "--retry-now",
            action="store_true",
            help=(
                f"retry now, even if the {target} rests in back-off after failures "
                f"(needs --{target})"
                if target is not None
                else "pass now, even if the distiller waits in back-off after failed passes"
            ),
        )
        shown = sub.add_mutually_exclusive_group()
        shown.add_argument(
            "--quiet", action="store_true", help="print one line when the tick ends, nothing else"
        )
        shown.add_argument(
            "--json",
            action="store_true",
            help="print one JSON line per progress event as it happens, then the tick's "
            "summary as the last line (the same JSON object as before)",
        )
    run.epilog = _options_by_agent(agents.choices)

    status = commands.add_parser(
        "status",
        help="recent runs, metrics and lessons from the local memory (or --remote)",
        description=(
            "Recent runs, metrics, lessons and back-offs, read from the memory of local "
            "runs (AGENT_LOOP_HOME), or with --remote from a deployment's storage "
            "(AGENT_LOOP_MEMORY_ROOT, read through Flyte's storage with the Flyte "
            "config's credentials)."
        ),
    )
    status.add_argument(
        "--home", type=Path, help="local state folder (default: AGENT_LOOP_HOME or .agent-loop)"
    )
    status.add_argument("--limit", type=_positive, default=15, help="runs to show (default 15)")
    status.add_argument(
        "--remote",
        action="store_true",
        help="read a deployment's memory from its storage (AGENT_LOOP_MEMORY_ROOT) instead",
    )
    status.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="Flyte config of --remote, for the storage's credentials (default: "
        "AGENT_LOOP_FLYTE_CONFIG, else where the flyte CLI looks)",
    )
    status.add_argument("--json", action="store_true", help="print the status as one JSON object")
    show_cmd.add_parser(commands)

    deploy = commands.add_parser(
        "deploy",
        help="deploy one agent (its environment, task and trigger) to a Flyte cluster",
        description=(
            "Deploy one agent on its own: its image (from its exported lock), a code bundle "
            "holding only that agent and common, its tasks and its cron trigger. The "
            "settings of this shell travel with it as plain variables; the GitHub "
            "credentials and the model key come from Flyte secrets (docs/deploy.md). "
            "--dry-run validates everything offline and deploys nothing."
        ),
        epilog=f"A deploy needs a Flyte config naming your cluster: --config "
        f"{CONFIG_TEMPLATE} (a copy with your endpoint), AGENT_LOOP_FLYTE_CONFIG or "
        "FLYTECTL_CONFIG.",
    )
    deploy.add_argument("agent", choices=(*AGENTS, "gateway", "eval"))
    deploy.add_argument(
        "--dry-run", action="store_true", help="validate offline and show what would be deployed"
    )
    deploy.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="Flyte config file (default: AGENT_LOOP_FLYTE_CONFIG, else where the flyte CLI "
        "looks; a dry run: infra/flyte/offline.yaml)",
    )
    serve = commands.add_parser(
        "serve",
        help="serve the webhook gateway here: GitHub events start runs in Flyte local mode",
        description=(
            "Serve the gateway (POST /webhook, GET /healthz): signed GitHub deliveries and "
            "/agent-loop commands start one-target runs in Flyte local mode, one at a time. "
            "Needs AGENT_LOOP_WEBHOOK_SECRET. See docs/events.md."
        ),
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    serve.add_argument("--port", type=_positive, default=8080, help="port (default 8080)")
    sandbox_cmd.add_parser(commands)
    emulator_cmd.add_parser(commands)
    lessons_cmd.add_parser(commands)
    eval_cmd.add_parser(commands)
    claims_cmd.add_parser(commands)
    return parser


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("agent-loop")
    except metadata.PackageNotFoundError:  # a source tree without its metadata installed
        return "unknown"


class _VersionAction(argparse.Action):
    """`--version`: reads the installed metadata only when asked (not for every command)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        del kwargs
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="show the version and exit",
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"agent-loop {_version()}")  # on stdout, as argparse's own version action
        parser.exit()


def _options_by_agent(agents: Mapping[str, argparse.ArgumentParser]) -> str:
    """`run --help`'s list of each agent's options, read from the agents' own parsers."""
    lines = ["options of each agent (details: agent-loop run AGENT --help):"]
    for name, sub in agents.items():
        shown: list[str] = []
        for action in sub._actions:
            if not action.option_strings or action.dest == "help":
                continue
            flag = action.option_strings[-1]
            shown.append(f"{flag} {action.metavar or 'N'}" if action.nargs != 0 else flag)
        lines.append(f"  {name:<10} {'  '.join(shown)}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `agent-loop` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run" and not args.remote:
            code = _stoppable_run(args)
            if argv is None:  # the program itself: only the interpreter's shutdown is left
                _exit_quietly_on_signals(code)
            return code
        from agent_loop._logging import preserved_logging

        with preserved_logging():
            return _command(args)
    except KeyboardInterrupt:  # Ctrl-C while a command starts: a line, not a traceback
        print("agent-loop: interrupted", file=sys.stderr)
        return 130


def _stoppable_run(args: argparse.Namespace) -> int:
    """A local `run`, SIGINT and SIGTERM a stop request from its first moment to its last.

    A signal before the tick starts (while Flyte and the agents import, during the
    preflight) stops the command there, having claimed nothing; one during the tick
    stops it at its next safe point (`_run_tick`). Installed here, before the heavy
    imports, so that no moment of the command takes Ctrl-C as a traceback, and so that a
    process started with SIGINT ignored (a shell script's background job, which a
    script then stops with `kill -INT`) is not left to open its pull request anyway.
    """
    from agent_loop_common.runtime import reset_stop, stop_on_signals, stop_requested

    reset_stop()
    with stop_on_signals():
        from agent_loop._logging import preserved_logging

        with preserved_logging():
            code = _command(args)
    late = stop_requested()  # asked for while the tick's end was being printed
    return late.exit_code if late is not None and code == 0 else code


def _exit_quietly_on_signals(code: int) -> None:
    """From here to the process's end, SIGINT or SIGTERM ends it at once and quietly.

    The run is over (released, recorded, printed); what is left is the interpreter's
    shutdown (Flyte's background loop is joined for up to a second), where Ctrl-C used
    to print a `KeyboardInterrupt` traceback from `threading`'s exit hooks. The exit code
    stays the run's, or is 128 + the signal's number when the run had succeeded.
    """
    import logging
    import signal

    from agent_loop_common.runtime import stop_requested

    sys.stdout.flush()
    sys.stderr.flush()
    if stop_requested() is not None:
        # Stopped by a signal: released, recorded and said. The interpreter's shutdown
        # resets the handlers to the default before it ends, and the same signal
        # delivered twice (`uv run` forwards its group's, 200 ms later) would kill the
        # process there, its exit code lost; nothing is left to do, so end here.
        logging.shutdown()
        os._exit(code)

    def now(signum: int, frame: object) -> None:
        del frame
        os._exit(code or 128 + signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, now)


def _command(args: argparse.Namespace) -> int:
    command = cast(str, args.command)
    if command == "run":  # an idle tick proven before anything heavy is imported
        proven = _proven_idle(args)
        if proven is not None:
            return _stopped_before_start(args) or proven
    from agent_loop._logging import configure_cli_logging
    from agent_loop_common.settings import ConfigError

    level = cast(str | None, args.log_level)
    if command == "run" and args.quiet:  # one line: the agents' own logs only at WARNING
        level = level or "WARNING"
    quiet = ("demo", "status", "show", "sandbox", "emulator", "lessons", "eval", "claims")
    quiet_by_default = command in quiet
    configure_cli_logging("console", level or ("WARNING" if quiet_by_default else "INFO"))
    try:
        if command == "demo":
            return _demo(args, level)
        if command == "run":
            return _run(args, level)
        if command == "status":
            return _status(args)
        if command == "show":
            return show_cmd.main(args, lambda: _memory_location(args, "show"))
        if command == "serve":
            return _serve(args, level)
        if command == "sandbox":
            return sandbox_cmd.main(args)
        if command == "emulator":
            return emulator_cmd.main(args)
        if command == "lessons":
            return lessons_cmd.main(args)
        if command == "eval":
            return eval_cmd.main(args)
        if command == "claims":
            return claims_cmd.main(args)
        return _deploy(args)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _load(level: str | None, **overrides: Any) -> Settings:
    from agent_loop._logging import configure_cli_logging
    from agent_loop_common.settings import load_settings

    settings = load_settings(**overrides)
    configure_cli_logging(settings.log_format, level or settings.log_level)
    return settings


def _run(args: argparse.Namespace, level: str | None) -> int:
    agent = cast(AgentName, args.agent)
    target = cast(int | None, getattr(args, "issue", None) or getattr(args, "pr", None))
    remote = bool(args.remote)
    retry_now = bool(args.retry_now)
    option = TARGETS[agent]
    if retry_now and option is not None and target is None:
        print(
            f"agent-loop run {agent}: --retry-now needs --{option} N (the {option} to retry).",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    config = cast(Path | None, args.config)
    if config is not None and not remote:
        print(
            f"agent-loop run {agent}: --config names the cluster of a --remote run; "
            "add --remote (a local run needs no Flyte config).",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    repo = cast(str | None, args.repo)
    if repo is not None and remote:
        print(
            f"agent-loop run {agent}: --repo picks a repository for a local run; a deployed "
            "tick works on its deployed AGENT_LOOP_REPO(S): drop --remote or --repo.",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    home = cast(Path | None, args.home)
    with _environ("AGENT_LOOP_HOME", None if home is None else str(home)):
        overrides: dict[str, Any] = {"flyte_config": config} if config else {}
        settings = _load(level, **overrides)
        one = _one_repository(agent, settings, repo, target)
        if isinstance(one, int):
            return one
        with _environ("AGENT_LOOP_REPOS", one):  # the task reads its settings again
            if one is not None:
                settings = _load(level, **overrides)
            return _run_tick(args, level, settings, target)


def _proven_idle(args: argparse.Namespace) -> int | None:
    """The exit code of an idle tick proven by the lean path, or `None`: run the full tick.

    Only a local, untargeted builder or reviewer tick can be proven idle this way
    (`agent_loop_common.runtime.fast_idle_tick`: the last full tick's decision, re-checked
    with conditional GitHub reads). It imports the settings and the summary, not the
    agents, githubkit, Flyte or structlog; any doubt, a configuration error included,
    leaves the tick to the full path, which reports it.
    """
    agent = cast(AgentName, args.agent)
    narrowed = args.remote or args.retry_now or args.repo or args.config
    if (
        agent == "distiller"
        or narrowed
        or getattr(args, "issue", None)
        or getattr(args, "pr", None)
    ):
        return None
    import time

    from agent_loop.live import print_end
    from agent_loop_common.records import Role
    from agent_loop_common.runtime import fast_idle_tick
    from agent_loop_common.settings import ConfigError, load_settings

    home = cast(Path | None, args.home)
    started = time.monotonic()
    with _environ("AGENT_LOOP_HOME", None if home is None else str(home)):
        try:
            settings = load_settings()
        except ConfigError:
            return None
        summary = fast_idle_tick(settings, Role(agent))
    if summary is None:
        return None
    if not args.quiet:
        _say(
            f"agent-loop: one {agent} tick for {settings.repo}: nothing changed on GitHub or "
            "in the settings since the last full idle tick (conditional reads, all "
            "unchanged); idle without starting Flyte"
        )
    print_end(agent, summary, live_mode(args), time.monotonic() - started, full=_print_summary)
    return 0


def _one_repository(
    agent: str, settings: Settings, repo: str | None, target: int | None
) -> str | int | None:
    """What `--repo` narrows `AGENT_LOOP_REPOS` to (None: no narrowing), or exit code 2.

    With `AGENT_LOOP_REPOS` the repository keeps its namespace (the list's form), so a run
    narrowed to it reads and writes the same memory as the scheduled ticks. A one-target
    run needs one repository: `#N` means nothing across several.
    """
    if repo is None:
        named = [s for s in settings.repos if not s.endswith("/*")]
        if target is None or not settings.many_repos or settings.repos == tuple(named[:1]):
            return None
        print(
            f"agent-loop run {agent}: #{target} is ambiguous across AGENT_LOOP_REPOS "
            f"({', '.join(settings.repos)}); add --repo OWNER/NAME.",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    wanted = repo.strip().lower()
    if not settings.many_repos:
        if wanted == settings.repo.lower():
            return None
        print(
            f"agent-loop run {agent}: --repo {repo} is not the configured repository "
            f"(AGENT_LOOP_REPO={settings.repo}).",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    owner = wanted.partition("/")[0]
    if any(s.lower() in (wanted, f"{owner}/*") for s in settings.repos) and "*" not in wanted:
        return repo.strip()
    print(
        f"agent-loop run {agent}: --repo {repo} is not in AGENT_LOOP_REPOS "
        f"({', '.join(settings.repos)}).",
        file=sys.stderr,
    )
    return EXIT_CONFIG


def _run_tick(
    args: argparse.Namespace, level: str | None, settings: Settings, target: int | None
) -> int:
    """One tick with the command's settings: preflight, run (printing its progress as it
    happens, `agent_loop.live`), print how it ended."""
    import time

    from agent_loop.live import print_end, watching
    from agent_loop_common.records import Role
    from agent_loop_common.runtime import (
        model_label,
        preflight_model,
        preflight_sandbox,
        remote_flyte_config,
    )
    from agent_loop_common.settings import ConfigError

    agent = cast(AgentName, args.agent)
    remote = bool(args.remote)
    retry_now = bool(args.retry_now)
    what = f" on #{target}" if target else ""
    if remote:  # never silently local: a config naming a cluster, or exit 2 here
        cluster = remote_flyte_config(settings.flyte_config)
        where = f"on the Flyte cluster {cluster.describe()} (its deployed settings)"
    else:  # a deployed tick has its own secrets; here, the key must be in this shell
        preflight_model(settings)
        import asyncio

        asyncio.run(preflight_sandbox(settings, Role(agent)))  # and tests must run here
        where = f"in Flyte local mode (home: {settings.home}), model {model_label(settings)}"
    stopped = _stopped_before_start(args)
    if stopped:
        return stopped
    repos = settings.repo or ", ".join(settings.repos)
    mode = live_mode(args)
    if mode != "quiet":
        _say(f"agent-loop: one {agent} tick{what} for {repos} {where}")
    from agent_loop_common.runtime import stop_requested

    started = time.monotonic()
    try:
        # Ctrl-C and SIGTERM (handled since the command started: `_stoppable_run`) stop
        # a local tick at its next safe point (claim released, run recorded
        # `interrupted`); a remote run goes on on its cluster either way.
        with watching(mode, remote=remote):
            summary = run_agent_once(
                agent, settings, target=target, remote=remote, retry_now=retry_now
            )
    except ConfigError:
        raise
    except Exception as exc:
        if level == "DEBUG":
            raise
        print(
            f"agent-loop: the {agent} tick failed: {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        print("Run again with --log-level DEBUG for the full trace.", file=sys.stderr)
        interrupt = stop_requested()
        return EXIT_FAILED if interrupt is None else interrupt.exit_code
    print_end(agent, summary, mode, time.monotonic() - started, full=_print_summary)
    interrupt = stop_requested()
    if interrupt is not None:
        from agent_loop.interrupted import farewell

        print(farewell(summary, interrupt), file=sys.stderr, flush=True)
        return interrupt.exit_code
    if summary.failed:
        return EXIT_FAILED
    return EXIT_CONFIG if summary.preflight_failed else 0


def _stopped_before_start(args: argparse.Namespace) -> int:
    """The exit code of a local `run` stopped (SIGINT, SIGTERM) before its tick started,
    having said so; 0 when no stop was asked for (or the run is remote)."""
    if args.remote:
        return 0
    from agent_loop_common.runtime import stop_requested

    interrupt = stop_requested()
    if interrupt is None:
        return 0
    print(
        f"agent-loop: {interrupt.name}: stopped before the tick started: nothing was "
        "claimed, no run record.",
        file=sys.stderr,
    )
    return interrupt.exit_code


def live_mode(args: argparse.Namespace) -> LiveMode:
    """How `run` prints the tick: `json`, `quiet` (one line) or `text` (live lines)."""
    return "json" if args.json else "quiet" if args.quiet else "text"


@contextmanager
def _environ(name: str, value: str | None) -> Generator[None]:
    """`name=value` for one command (the task reads its settings from the environment
    too), then as it was; `None` changes nothing."""
    if value is None:
        yield
        return
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved


SUMMARY_FIELDS = (
    "run_id",
    "error",
    "note",
    "tries",
    "tests",
    "github_requests",
    "report",
)
"""The order `agent-loop run` prints a summary's fields in (after the headline, before
the agent's own details); `--json` keeps `TickSummary`'s declaration order."""

_ON_THE_LAST_LINE = frozenset({"tokens", "tokens_cache_read", "cost_usd", "llm_calls"})
"""What the run cost is said once, on the last line with the duration (`totals_line`:
`took 23.4s · 1,234 tokens (900 cached) · $0.0123 (4 model calls)`), not here too."""

_SHOWN_ELSEWHERE = frozenset(
    {"event", "role", "outcome", "target", "pr_url", "issue_urls", "details", "repo", "runs"}
    | _ON_THE_LAST_LINE
)


def _print_summary(agent: str, tick: TickSummary, out: TextIO) -> None:
    """The summary for people: one headline, then each non-empty field in a fixed order."""
    if tick.idle or tick.paused:
        note = f" ({tick.note})" if tick.note else ""
        what = "paused, no new work" if tick.paused else "idle tick, nothing to do"
        print(f"{agent}: {what}{note}.", file=out)
        if tick.report:
            print(f"  report: {tick.report}", file=out)
        return
    made = f" -> {', '.join(tick.links)}" if tick.links else ""
    from agent_loop.live import ended_on

    print(f"{agent}: {ended_on(tick)}{made}", file=out)
    fields = tick.model_dump(exclude=set(_SHOWN_ELSEWHERE))
    ordered = [*SUMMARY_FIELDS, *(k for k in fields if k not in SUMMARY_FIELDS)]
    for key, value in [*((k, fields[k]) for k in ordered), *tick.details.items()]:
        if isinstance(value, list):
            value = "; ".join(str(v) for v in cast(list[object], value))
        if value not in ("", 0, None):
            print(f"  {key}: {value}", file=out)
    for run in tick.runs:  # a tick that worked several targets: one line each
        made = f" -> {', '.join(run.links)}" if run.links else ""
        error = f" ({run.error})" if run.error else ""
        where = f"{run.repo} " if run.repo else ""
        if run.paused:  # a slot the rate-limit reserve held back: say why
            print(f"  - {where}paused: {run.note}", file=out)
            continue
        label = run.target_label or "idle"
        print(f"  - {where}{label}: {run.outcome}{made}{error}", file=out)


def _memory_settings(home: Path | None) -> Settings:
    """Settings for reading memory only: GitHub variables are not needed for that."""
    from agent_loop_common.settings import load_settings

    overrides: dict[str, Any] = {}
    if home is not None:
        overrides["home"] = home
    if not (
        os.environ.get("AGENT_LOOP_REPO", "").strip()
        or os.environ.get("AGENT_LOOP_REPOS", "").strip()
    ):
        overrides["repo"] = "local/unset"
    if not (os.environ.get("GITHUB_TOKEN") or os.environ.get("GITHUB_APP_ID")):
        overrides["github_token"] = "unused-by-status"  # noqa: S105 (status never calls GitHub)
    return load_settings(**overrides)


def _memory_location(args: argparse.Namespace, command: str) -> MemoryLocation | int:
    """The memory `status` and `show` read: the local runs' (`--home`), or with `--remote`
    a deployment's; exit code 2 when both are asked for."""
    from agent_loop_common.runtime import local_memory

    home = cast(Path | None, args.home)
    remote, config = bool(args.remote), cast(Path | None, args.config)
    if (home is not None and remote) or (config is not None and not remote):
        print(
            f"agent-loop {command}: --home reads local runs, --remote (with --config) a "
            "deployment's: use one.",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    settings = _memory_settings(home)
    return _remote_memory(settings, config) if remote else local_memory(settings)


def _status(args: argparse.Namespace) -> int:
    import asyncio

    from agent_loop.status import StatusError, read_snapshot, render_status, snapshot_json

    location = _memory_location(args, "status")
    if isinstance(location, int):
        return location
    home, remote = cast(Path | None, args.home), bool(args.remote)
    try:
        snapshot = asyncio.run(read_snapshot(location))
    except StatusError as exc:
        print(f"agent-loop status: {exc}", file=sys.stderr)
        return EXIT_FAILED
    limit = cast(int, args.limit)
    if args.json:
        print(snapshot_json(snapshot, limit=limit))
        return 0
    print(render_status(snapshot, limit=limit))
    empty_here = snapshot.empty and home is None and not remote
    demo = _demo_home(_memory_settings(home)) if empty_here else None
    if demo is not None:
        print(f"The demo's memory is in {demo}: agent-loop status --home {demo}")
    return 0


def _remote_memory(settings: Settings, config: Path | None) -> MemoryLocation:
    """A deployment's memory: its storage root, read with the Flyte config's credentials.

    Raises:
        ConfigError: No `AGENT_LOOP_MEMORY_ROOT`, or no Flyte config naming a cluster.
    """
    import flyte

    from agent_loop_common.memory import MemoryLocation
    from agent_loop_common.runtime import remote_flyte_config
    from agent_loop_common.settings import ConfigError, env_var_name

    root = settings.memory_root.strip()
    if not root:
        name = env_var_name("memory_root")
        raise ConfigError(
            [
                f"{name}: not set. agent-loop status --remote reads a deployment's memory "
                "from the storage its tasks write to: set it to that root (e.g. "
                "s3://my-bucket/data; docs/deploy.md)."
            ]
        )
    cluster = remote_flyte_config(config or settings.flyte_config, purpose="status --remote")
    flyte.init_from_config(str(cluster.path))
    if root.startswith("file://"):  # a mounted or copied store: Flyte reads it as a path
        from urllib.parse import urlparse
        from urllib.request import url2pathname

        root = url2pathname(urlparse(root).path)
    return MemoryLocation.from_settings(settings, root)


def _demo_home(settings: Settings) -> Path | None:
    """The default demo folder under this home, when a demo has run there."""
    from agent_loop.demo import DEMO_MARKER

    demo = settings.home / "demo"
    return demo if (demo / DEMO_MARKER).is_file() else None


def _demo(args: argparse.Namespace, level: str | None) -> int:
    from agent_loop.demo import DemoError, run_demo

    try:
        result = run_demo(
            cast(Path, args.home),
            out=sys.stdout,
            outcomes_only=bool(args.quiet),
            log_level=level or "WARNING",
        )
    except DemoError as exc:  # a folder it may not empty, no pytest: nothing was run
        print(f"agent-loop demo: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    return 0 if result.ok else EXIT_FAILED


def _deploy(args: argparse.Namespace) -> int:
    from agent_loop._deploy_preflight import deploy_preflight
    from agent_loop.deploy import deploy_agent

    agent, dry_run = cast(str, args.agent), bool(args.dry_run)
    config = deploy_preflight(agent, dry_run=dry_run, config=cast(Path | None, args.config))
    return deploy_agent(agent, dry_run=dry_run, config=config)


def _serve(args: argparse.Namespace, level: str | None) -> int:
    from agent_loop.serve import serve
    from agent_loop_gateway import GatewayConfig

    settings = _load(level)
    try:
        GatewayConfig.from_settings(settings)
    except ValueError as exc:  # no webhook secret
        print(f"agent-loop serve: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    _say(f"agent-loop: the gateway for {settings.repo} on http://{args.host}:{args.port}/webhook")
    return serve(settings, host=cast(str, args.host), port=cast(int, args.port))


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
