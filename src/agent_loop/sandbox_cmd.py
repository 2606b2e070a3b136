"""`agent-loop sandbox`: run a command exactly where the agents run tests, and say where that is.

```text
agent-loop sandbox check                     which backend works here, and why the others do not
agent-loop sandbox run [--dir PATH] [--network] [--time-limit S] [--json] [-- CMD ...]
```

`run` copies the folder (default: the current one) into a fresh workspace, leaving out
`.git` and host-built environments (`.venv`, `venv`, `.tox`, `.nox`) with a note saying
so, and runs the command in the sandbox `AGENT_LOOP_SANDBOX` selects, with the same limits and
environment the agents use; the folder itself is never modified. Without a command it
runs what an agent's tick would, from the same plan (`sandbox.plan_tests`): the setup
(`AGENT_LOOP_SETUP_COMMAND`, `AGENTS.md`'s `Setup command:`, or the default Python
setup in `.sandbox-venv`, kept in the same cache under `AGENT_LOOP_HOME/sandbox-envs`),
then the test command (set or detected, with a JUnit report for pytest), and prints the
setup line and the hard rules' verdict on that run. The exit code is the command's own
(124 when it timed out, 127 when it could not start, the setup's when it failed, 1 when
it exited 0 but the verdict is not `passed`), or 2 for bad usage or when no sandbox
works here. Neither subcommand needs GitHub credentials.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # imported when a subcommand runs: `agent-loop --help` stays fast
    from agent_loop_common.sandbox import EnvReuse, RunResult, TestPlan, TestVerdict
    from agent_loop_common.settings import Settings

__all__ = ["EXIT_TIMED_OUT", "add_parser", "main"]

EXIT_USAGE = 2
"""Bad usage, a refused command, or no sandbox works here."""
EXIT_TIMED_OUT = 124
"""The command was killed at its time limit (as `timeout(1)` reports it)."""
EXIT_NOT_STARTED = 127
"""The command could not start (not found in the sandbox)."""
EXIT_NOT_PASSED = 1
"""The command exited 0 but the hard rules do not call the run a pass (a process killed
for memory, evidence that contradicts itself, no test ran)."""
_DETECT_MAX_BYTES = 256_000


def add_parser(commands: Any) -> None:
    """Add `sandbox check` and `sandbox run` to the CLI's subcommands."""
    sandbox = cast(
        argparse.ArgumentParser,
        commands.add_parser(
            "sandbox",
            help="run a command in the sandbox the agents use for tests, or check which works here",
            description=(
                "The agents run each repository's tests in a sandbox that holds no secret "
                "(AGENT_LOOP_SANDBOX: auto, bwrap, docker, flyte, off). See docs/sandbox.md."
            ),
        ),
    )
    actions = sandbox.add_subparsers(dest="sandbox_command", metavar="ACTION", required=True)
    actions.add_parser("check", help="which sandbox backend works here, and why the others do not")
    run = actions.add_parser(
        "run",
        help="run a command on a copy of a folder in the agents' sandbox",
        description=(
            "Copy a folder into a fresh workspace and run a command there in the sandbox. "
            "Without a command: the setup and test commands an agent would run."
        ),
    )
    run.add_argument(
        "--dir", type=Path, default=None, help="folder to copy (default: the current folder)"
    )
    run.add_argument(
        "--network", action="store_true", help="let the command reach the network (setup only)"
    )
    run.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="wall-time limit (default: AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS)",
    )
    run.add_argument("--json", action="store_true", help="print the result as one JSON object")
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD", help="the command")


def _settings() -> Settings:
    """The settings, without requiring the GitHub variables (the sandbox needs none)."""
    from agent_loop_common.settings import load_settings

    overrides: dict[str, Any] = {}
    if not os.environ.get("AGENT_LOOP_REPO", "").strip():
        overrides["repo"] = "local/unset"
    if not (os.environ.get("GITHUB_TOKEN") or os.environ.get("GITHUB_APP_ID")):
        overrides["github_token"] = "unused-by-sandbox"  # noqa: S105 (never sent anywhere)
    return load_settings(**overrides)


def main(args: argparse.Namespace) -> int:
    """Run `agent-loop sandbox check|run`; returns the exit code."""
    import asyncio

    settings = _settings()
    if args.sandbox_command == "check":
        return asyncio.run(_check(settings))
    folder = Path(cast(Path | None, args.dir) or Path.cwd()).absolute()
    if not folder.is_dir():
        return _fail(f"not a folder: {folder}")
    return asyncio.run(_run(settings, folder, args))


async def _check(settings: Settings) -> int:
    from agent_loop._table import render_table
    from agent_loop_common.sandbox import check_backends, sandbox_facts, selected_backend

    checks = await check_backends(settings)
    rows = [
        (
            c.backend,
            "yes" if c.works else "no",
            c.reason + ("" if c.isolated else " (not isolated)"),
        )
        for c in checks
    ]
    print(render_table(["backend", "works", "why"], rows, max_cell=100, indent=""))
    print("\nWhat bounds one sandbox, and what its setup step reaches:")
    for fact in await sandbox_facts(settings):
        print(f"- {fact}")
    chosen = selected_backend(checks, settings.sandbox)
    if chosen is None:
        print(f"\nAGENT_LOOP_SANDBOX={settings.sandbox}: no sandbox can run tests here.")
        remedies = [c for c in checks if c.remedy]
        for c in remedies:
            print(f"{c.backend}: {c.reason}.\n{c.remedy}")
        if not remedies:
            print(
                "Install bubblewrap (apt-get install -y bubblewrap), or set "
                "AGENT_LOOP_SANDBOX=docker with a Docker engine, or AGENT_LOOP_SANDBOX=off "
                "(pull requests become drafts)."
            )
        return EXIT_USAGE
    print(f"\nAGENT_LOOP_SANDBOX={settings.sandbox}: the agents run tests in {chosen}.")
    return 0


def _reader(root: Path) -> Callable[[str], str | None]:
    def read(path: str) -> str | None:
        target = root / path
        try:
            if not target.is_file() or target.stat().st_size > _DETECT_MAX_BYTES:
                return None
            return target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    return read


def _fail(message: str) -> int:
    print(f"agent-loop sandbox: {message}", file=sys.stderr)
    return EXIT_USAGE


async def _run(settings: Settings, folder: Path, args: argparse.Namespace) -> int:
    from agent_loop_common.sandbox import (
        ENVS_FOLDER,
        CommandRejected,
        SandboxError,
        SandboxUnavailable,
        compare,
        env_reuse,
        open_sandbox,
        plan_tests,
    )

    cmd = list(cast(list[str], args.cmd))
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    plan: TestPlan | None = None
    try:
        if cmd:
            argv = tuple(cmd)
            what = "the command"
        else:
            plan = plan_tests(settings, _reader(folder))
            if plan.command is None:
                return _fail(
                    "no command given and none detected in "
                    f"{folder} (set AGENT_LOOP_TEST_COMMAND or pass -- CMD)"
                )
            argv = plan.command.argv
            what = f"the test command {plan.command.describe()}"
        sandbox = await open_sandbox(settings)
    except (CommandRejected, SandboxUnavailable) as exc:
        return _fail(str(exc))
    if not sandbox.enabled:
        return _fail("AGENT_LOOP_SANDBOX=off: the sandbox is off, nothing runs")
    if not args.json:
        print(f"agent-loop sandbox: running {what} in {sandbox.describe()} on a copy of {folder}")
        if plan is not None and plan.setup:
            print(f"-- setup: {plan.setup_text()}")
        sys.stdout.flush()
    skipped = _not_copied(folder)
    reuse: EnvReuse | None = None
    if plan is not None and plan.default_setup is not None:
        # The tick's cache, keyed by this folder instead of a commit: never shared with one.
        store = (settings.home / ENVS_FOLDER).resolve()
        reuse = env_reuse(store, f"folder:{folder}", folder, plan.default_setup.setup)
    try:
        result = await sandbox.run(
            folder,
            argv,
            network=bool(args.network),
            time_limit=cast(float | None, args.time_limit),
            setup=plan.setup if plan is not None else None,
            skip=[name for name in skipped if name != ".git"],
            operator_command=plan is None
            or plan.command is None
            or plan.command.source == "setting",
            operator_setup=plan is None or not plan.setup_from_repo,
            reuse=reuse,
        )
    except SandboxError as exc:
        return _fail(str(exc))
    notes = tuple(f"not copied: {name} ({why})" for name, why in skipped.items())
    result = result.model_copy(update={"notes": (*notes, *result.notes)})
    verdict = compare(None, result)
    if args.json:
        print(json.dumps(result.model_dump(mode="json"), sort_keys=True))
    else:
        _print_result(result, verdict)
    return _exit_code(result, verdict)


def _not_copied(folder: Path) -> dict[str, str]:
    """What of `folder` the copy leaves out, and why (said, never silent)."""
    skipped: dict[str, str] = {}
    if os.path.lexists(folder / ".git"):
        skipped[".git"] = "git's metadata is never copied: it can hold credentials"
    for name in (".venv", "venv", ".tox", ".nox"):
        if (folder / name / "pyvenv.cfg").is_file() or (
            name in (".tox", ".nox") and (folder / name).is_dir()
        ):
            skipped[name] = (
                "an environment built on this host, for this host; give a setup command "
                "(AGENT_LOOP_SETUP_COMMAND) that builds one in the copy"
            )
    return skipped


def _verdict_line(verdict: TestVerdict) -> str:
    """The hard rules' verdict on this run alone, as a tick would judge it (no base)."""
    if verdict.status == "failed":
        return "failed: " + "; ".join(verdict.reasons)
    if verdict.status == "no_evidence":
        return f"no evidence: {verdict.no_verdict}"
    if verdict.status == "tampered":
        return "tampered (the pytest guard found code steering the run from inside): " + (
            "; ".join(verdict.tampered)
        )
    if verdict.status == "not_run":
        return verdict.summary
    return "passed (this run alone: a tick also compares it with the base commit's run)"


def _print_result(result: RunResult, verdict: TestVerdict) -> None:
    if result.setup is not None:
        text = result.setup.output.text
        if text:
            print(text, end="" if text.endswith("\n") else "\n")
        print(f"-- setup: {result.setup.summary()}")
    text = result.output.text
    if text:
        print(text, end="" if text.endswith("\n") else "\n")
    print(f"-- {result.backend}: {result.summary()}")
    if result.tests is not None and result.tests.failing:
        print("-- failing: " + ", ".join(result.tests.failing[:20]))
    if result.error:
        print(f"-- {result.error}")
    print(f"-- verdict: {_verdict_line(verdict)}")
    for note in result.notes:
        print(f"-- note: {note}")


def _exit_code(result: RunResult, verdict: TestVerdict) -> int:
    if result.timed_out:
        return EXIT_TIMED_OUT
    if result.exit_code is None:
        return EXIT_NOT_STARTED if result.setup is None else (result.setup.exit_code or 1)
    if result.exit_code == 0 and verdict.status != "passed":
        return EXIT_NOT_PASSED
    return result.exit_code if 0 <= result.exit_code <= 255 else 1
