"""`agent-loop eval mine`: task instances from the repository's merged pull requests.

```text
agent-loop eval mine [--repo OWNER/NAME] [--since DATE] [--limit N] [--out FILE]
```

It reads the repository's merged pull requests through GitHub's API (nothing is written
there), validates each candidate in the sandbox the builder uses, and appends one JSON
line per instance to `--out` (default
`<AGENT_LOOP_HOME>/eval/<owner>__<name>/instances.jsonl`); skipped pull requests and
their reasons go to the sidecar `<stem>.skipped.jsonl`. A second run mines only merges
that are in neither file. One line of progress per pull request, a table at the end.
Exit codes: 0 done, 1 GitHub failed mid-way (what was mined so far is kept) or the
repository has no merged pull request to mine at all, 2 bad usage or configuration, or no sandbox can
run the repository's tests here.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from agent_loop.eval_run_cmd import out_problem

if TYPE_CHECKING:  # imported when the command runs: `agent-loop --help` stays fast
    from agent_loop_common.github import PullRequest
    from agent_loop_common.settings import Settings
    from agent_loop_eval import Mined

__all__ = ["add_mine", "default_instances_path", "mine"]

EXIT_FAILED = 1
EXIT_USAGE = 2


def add_mine(actions: Any, name: str) -> None:
    """Add `eval mine` (as `name`) to the `eval` group's actions."""
    mine = cast(
        argparse.ArgumentParser,
        actions.add_parser(
            name,
            help="task instances from merged pull requests that closed an issue",
            description=(
                "Mine SWE-bench-style task instances from the repository's merged pull "
                "requests: each closes an issue and changes tests and code; its tests are "
                "run at the base with and without the fix (twice each) in the sandbox. "
                "Reads GitHub only. Incremental: known pull requests are not mined again."
            ),
        ),
    )
    mine.add_argument(
        "--repo",
        metavar="OWNER/NAME",
        help="the repository to mine (default AGENT_LOOP_REPO; one of AGENT_LOOP_REPOS)",
    )
    mine.add_argument(
        "--since",
        metavar="DATE",
        type=_date,
        help="only pull requests merged on or after DATE (YYYY-MM-DD or ISO time, UTC)",
    )
    mine.add_argument(
        "--limit", type=_positive, metavar="N", help="mine at most N new pull requests"
    )
    mine.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="instances file, JSON lines (default: "
        "AGENT_LOOP_HOME/eval/<owner>__<name>/instances.jsonl); skipped pull requests go "
        "to <stem>.skipped.jsonl next to it",
    )
    mine.add_argument(
        "--home",
        type=Path,
        metavar="DIR",
        help="local state folder (default: AGENT_LOOP_HOME or .agent-loop)",
    )


def _date(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date: {text!r} (YYYY-MM-DD)") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def default_instances_path(settings: Settings) -> Path:
    """Where `eval mine` writes a repository's instances unless `--out` says."""
    owner, _, name = settings.repo.partition("/")
    return settings.home / "eval" / f"{owner}__{name}" / "instances.jsonl"


def _settings(args: argparse.Namespace) -> Settings | None:
    """The settings for the repository to mine, or `None` after printing why not."""
    import os

    from agent_loop_common.settings import load_settings

    overrides: dict[str, Any] = {}
    home = cast(Path | None, args.home)
    if home is not None:
        overrides["home"] = home
    repo = cast(str | None, args.repo)
    configured = (
        os.environ.get("AGENT_LOOP_REPO", "").strip()
        or os.environ.get("AGENT_LOOP_REPOS", "").strip()
    )
    if repo is not None and not configured:
        overrides["repo"] = repo.strip()
    settings = load_settings(**overrides)
    if repo is None:
        if settings.many_repos:
            print(
                "agent-loop eval mine: AGENT_LOOP_REPOS names several repositories; add "
                "--repo OWNER/NAME.",
                file=sys.stderr,
            )
            return None
        return settings
    wanted = repo.strip().lower()
    if settings.many_repos:
        owner = wanted.split("/", 1)[0]
        if "*" in wanted or not any(s.lower() in (wanted, f"{owner}/*") for s in settings.repos):
            print(
                f"agent-loop eval mine: --repo {repo} is not in AGENT_LOOP_REPOS "
                f"({', '.join(settings.repos)}).",
                file=sys.stderr,
            )
            return None
        return settings.for_repo(repo.strip())
    if wanted != settings.repo.lower():
        print(
            f"agent-loop eval mine: --repo {repo} is not the configured repository "
            f"(AGENT_LOOP_REPO={settings.repo}).",
            file=sys.stderr,
        )
        return None
    return settings


def mine(args: argparse.Namespace) -> int:
    """Run `agent-loop eval mine`; returns the exit code."""
    import asyncio

    from pydantic import ValidationError

    from agent_loop_common.github import AuthError, GitHubError
    from agent_loop_common.runtime import sandbox_for
    from agent_loop_eval import InstanceFileError

    settings = _settings(args)
    if settings is None:
        return EXIT_USAGE
    out = cast(Path | None, args.out) or default_instances_path(settings)
    problem = out_problem(out, folder=False)
    if problem:
        print(f"agent-loop eval mine: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if settings.sandbox == "off":
        # Every candidate would be decided `setup_failed` and remembered as known in the
        # sidecar: a later run with a sandbox would never validate it.
        print(
            "agent-loop eval mine: AGENT_LOOP_SANDBOX=off: mining validates each pull "
            "request by running its tests in the sandbox; choose one (see docs/sandbox.md).",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        sandbox = asyncio.run(sandbox_for(settings))
    except Exception as exc:  # ConfigError from the preflight: shown as the CLI does
        from agent_loop_common.settings import ConfigError

        if isinstance(exc, ConfigError):
            print(str(exc), file=sys.stderr)
            return EXIT_USAGE
        raise
    try:
        results = asyncio.run(
            _mine_all(
                settings,
                sandbox,
                out,
                since=cast(datetime | None, args.since),
                limit=cast(int | None, args.limit),
            )
        )
    except InstanceFileError as exc:
        print(f"agent-loop eval mine: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # Each decided pull request's line is written whole as it is decided: what was
        # decided is kept, and the next run mines only what was not.
        from agent_loop_eval import skipped_path

        kept = out.exists() or skipped_path(out).exists()
        print(
            "agent-loop eval mine: interrupted; "
            + (
                f"the pull requests decided so far are kept in {out} and "
                f"{skipped_path(out).name}, and the next run goes on from there"
                if kept
                else "no pull request was decided yet, nothing written"
            ),
            file=sys.stderr,
        )
        return 130
    except AuthError as exc:  # the credentials, not GitHub: configuration (as `claims`)
        print(
            f"agent-loop eval mine: GitHub refused the credentials: {exc} (mining only "
            "reads: read access to the repository's contents, issues and pull requests is "
            "enough)",
            file=sys.stderr,
        )
        _kept(out)
        return EXIT_USAGE
    except GitHubError as exc:
        print(f"agent-loop eval mine: GitHub failed: {exc}", file=sys.stderr)
        _kept(out)
        return EXIT_FAILED
    except ValidationError as exc:  # a GitHub-like server whose answer lacks GitHub's fields
        problems = exc.errors()
        first = (
            f"{'.'.join(str(p) for p in problems[0]['loc']) or '-'}: {problems[0]['msg']}"
            if problems
            else "-"
        )
        print(
            f"agent-loop eval mine: GitHub answered in a shape its API does not have "
            f"({exc.title}: {exc.error_count()} problem(s), the first: {first}); a "
            "GitHub-like server must answer as GitHub documents.",
            file=sys.stderr,
        )
        _kept(out)
        return EXIT_FAILED
    _print_summary(results, out)
    if not out.exists():
        return _no_instance(settings.repo, results, out, since=cast(datetime | None, args.since))
    return 0


def _no_instance(repo: str, results: list[Mined], out: Path, *, since: datetime | None) -> int:
    """Say why there is no instances file for `eval run` (it would only say the file is
    missing); the exit code: 1 when the repository had no merged pull request to mine at
    all (a wrong repository, `--since` in the future), 0 when its pull requests were
    decided and none made an instance (their reasons are kept)."""
    from agent_loop_eval import skipped_path

    skipped = skipped_path(out)
    rule = (
        "an instance is a merged pull request that closed an issue and changed tests and "
        f"code (docs/eval.md); {out} is written when the first is found"
    )
    if results or skipped.exists():
        decided = f"{len(results)} new" if results else "its known"
        print(
            f"agent-loop eval mine: no instance of {repo} yet: none of {decided} merged pull "
            f"request(s) made one (their reasons: {skipped}); {rule}.",
            file=sys.stderr,
        )
        return 0
    after = f" merged on or after {since:%Y-%m-%d}" if since else " merged"
    print(
        f"agent-loop eval mine: {repo} has no pull request{after}: nothing to mine; {rule}.",
        file=sys.stderr,
    )
    return EXIT_FAILED


def _kept(out: Path) -> None:
    """Where what was decided before a failure is, or that nothing was."""
    from agent_loop_eval import skipped_path

    if out.exists() or skipped_path(out).exists():
        print(f"what was mined so far is in {out}", file=sys.stderr)
    else:
        print("nothing was mined", file=sys.stderr)


async def _mine_all(
    settings: Settings, sandbox: Any, out: Path, *, since: datetime | None, limit: int | None
) -> list[Mined]:
    from agent_loop_common.runtime import github_from_settings
    from agent_loop_eval import (
        Miner,
        append_skipped,
        known_pulls,
        skipped_path,
        write_instances,
    )

    known = known_pulls(out)
    results: list[Mined] = []
    async with github_from_settings(settings) as github:
        miner = Miner(github, settings, sandbox, on_note=_note)
        pulls = await miner.candidates(since=since, known=known, limit=limit)
        print(
            f"agent-loop eval mine: {settings.repo}, {len(pulls)} new merged pull "
            f"request(s) to mine ({len(known)} known) -> {out}",
            flush=True,
        )
        async for mined in miner.mine(pulls, on_start=_starting):
            if mined.instance is not None:
                write_instances(out, [mined.instance], append=True)
            if mined.skipped is not None:
                append_skipped(skipped_path(out), [mined.skipped])
            _progress(mined)
            results.append(mined)
    return results


def _note(text: str) -> None:
    """What mining falls back to (GraphQL failed), said once when it first happens."""
    print(f"agent-loop eval mine: note: {text}", file=sys.stderr, flush=True)


def _starting(pull: PullRequest) -> None:
    del pull  # each pull request gets one line, when its result is known


def _progress(mined: Mined) -> None:
    from agent_loop._table import clip
    from agent_loop.status import terminal_safe

    title = clip(terminal_safe(mined.pull.title), 40)
    head = f"  #{mined.pull.number} {title}:"
    if mined.instance is not None:
        i = mined.instance
        print(
            f"{head} instance {i.instance_id} ({len(i.FAIL_TO_PASS)} fail-to-pass, "
            f"{len(i.PASS_TO_PASS)} pass-to-pass) in {mined.seconds:.1f}s",
            flush=True,
        )
    elif mined.skipped is not None:
        detail = clip(terminal_safe(mined.skipped.detail), 100)
        print(f"{head} skipped, {mined.skipped.reason.value} ({detail})", flush=True)


def _print_summary(results: list[Mined], out: Path) -> None:
    from agent_loop._table import render_table
    from agent_loop_eval import SkipReason, skipped_path

    counts = Counter(
        "instance" if m.instance is not None else cast(SkipReason, m.skipped and m.skipped.reason)
        for m in results
    )
    rows = [["instance", str(counts.get("instance", 0))]]
    rows += [[reason.value, str(counts[reason])] for reason in SkipReason if counts.get(reason)]
    rows.append(["total", str(len(results))])
    print()
    print(render_table(["result", "pull requests"], rows))
    if out.exists():
        print(f"instances: {out}")
    if skipped_path(out).exists():
        print(f"skipped:   {skipped_path(out)}")
