"""Deploy one agent (or the gateway) on its own, and validate every deploy offline (CI).

Each agent package deploys alone: its `TaskEnvironment`, tasks and cron trigger, its
own image (from `packages/<agent>/requirements.lock.txt`), and a code bundle holding only
that agent and `common`, versioned by a hash of the bundled files and the env spec. The
gateway deploys the same way as an app (`AppEnvironment`: a service, no trigger), the
eval as a worker (tasks called by name, no trigger; its bundle also holds the builder,
whose pipeline it replays). The
package is loaded in a fresh interpreter (`_deploy_driver`), so nothing this CLI
imported ends up in the bundle. See docs/deploy.md.

    agent-loop deploy builder --dry-run        # offline: validate and serialize
    agent-loop deploy gateway --dry-run
    agent-loop deploy eval --dry-run
    agent-loop deploy builder --config c.yaml  # build the image, upload, register
    python -m agent_loop.deploy validate       # CI: every agent, plus stale locks
    python -m agent_loop.deploy lock           # rewrite the exported locks

Errors: `DeployError`, with `DriverError` (the driver crashed before reporting).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

from agent_loop._deploy_lock import LockError, lock_drift, write_locks
from agent_loop._deploy_spec import (
    AGENTS,
    APPS,
    DEPLOYABLES,
    SANDBOX_VAR,
    TESTING_AGENTS,
    WORKERS,
    DeploySpec,
    Workspace,
    check_spec,
    deploy_environ,
    is_test_path,
)
from agent_loop_common.deploy import agent_env_vars, agent_tests_spec

__all__ = [
    "AGENTS",
    "APPS",
    "DEPLOYABLES",
    "OFFLINE_CONFIG",
    "ROOT",
    "WORKERS",
    "DeployError",
    "DeploySpec",
    "DriverError",
    "Validation",
    "Workspace",
    "check_spec",
    "deploy_agent",
    "deploy_environ",
    "inspect_agent",
    "is_test_path",
    "lock_drift",
    "main",
    "validate_agent",
    "write_locks",
]

ROOT = pathlib.Path(__file__).resolve().parents[2]
"""The workspace root (this module is installed editable from `<root>/src/agent_loop`)."""

OFFLINE_CONFIG = ROOT / "infra" / "flyte" / "offline.yaml"
"""Flyte config of dry runs: a dead loopback endpoint, so nothing leaves the machine."""

_DIFF_LINES = 30
"""Lines of a stale lock's diff shown in a finding."""

_DRIVER = pathlib.Path(__file__).with_name("_deploy_driver.py")

Mode = Literal["inspect", "dry-run", "deploy"]


class DeployError(RuntimeError):
    """A deploy could not be validated or carried out."""


class DriverError(DeployError):
    """The driver process failed before writing its report."""


@dataclass
class Validation:
    """One agent's offline validation: the spec, what is wrong with it, how long it took."""

    agent: str
    spec: DeploySpec | None
    findings: list[str] = field(default_factory=list[str])
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.spec is not None and not self.findings


def _hidden_dirs(ws: Workspace, agent: str) -> list[str]:
    """Source dirs on `sys.path` the agent must not see: other members, the test doubles,
    the root CLI."""
    keep = {ws.src_dir(member) for member in ws.bundled_members(agent)}
    roots = {ws.root, ROOT}
    names = (*ws.agents, ws.common, ws.testing)
    members = [r / ws.members / m / "src" for r in roots for m in names]
    return sorted(str(d) for d in [*members, *(r / "src" for r in roots)] if d not in keep)


def _run_driver(
    ws: Workspace,
    agent: str,
    *,
    mode: Mode,
    config: pathlib.Path | None,
    version: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="agent-loop-deploy-") as tmp:
        report = pathlib.Path(tmp) / "report.json"
        args = {
            "root": str(ws.root),
            "agent": agent,
            "src_dirs": [str(ws.src_dir(member)) for member in ws.bundled_members(agent)],
            "hide": _hidden_dirs(ws, agent),
            "config": str(config) if config else None,
            "mode": mode,
            "version": version,
            "report": str(report),
        }
        # TMPDIR: the dry run's local bundle copies land here and go with it.
        env = {
            **(os.environ if environ is None else environ),
            "TMPDIR": tmp,
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        if mode != "deploy":
            env["DO_NOT_TRACK"] = "1"  # flyte's telemetry: an offline check sends nothing
        source = _DRIVER.read_text(encoding="utf-8")
        proc = subprocess.run(
            [sys.executable, "-c", source, json.dumps(args)],
            cwd=ws.root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0 or not report.exists():
            raise DriverError(f"loading {agent} failed:\n{proc.stderr.strip()[-4000:]}")
        return json.loads(report.read_text(encoding="utf-8"))


def inspect_agent(
    agent: str,
    *,
    ws: Workspace | None = None,
    config: pathlib.Path | None = None,
    dry_run: bool = True,
    environ: Mapping[str, str] | None = None,
) -> DeploySpec:
    """Load `agent` alone and describe its deploy; `dry_run` also serializes every task.

    `environ`: the deploying shell's environment (default: this process's).
    """
    ws = ws or Workspace(ROOT)
    ws.check_agent(agent)
    mode: Mode = "dry-run" if dry_run else "inspect"
    report = _run_driver(ws, agent, mode=mode, config=config or OFFLINE_CONFIG, environ=environ)
    return DeploySpec(agent, report)


def validate_agent(
    agent: str,
    *,
    ws: Workspace | None = None,
    config: pathlib.Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Validation:
    """CI's check of one agent: fresh exported lock, then an offline dry run and its rules.

    The agent is loaded from `deploy_environ` of `environ` (default: this process's
    environment): a builder or reviewer whose sandbox is unset deploys with the flyte one.
    """
    ws = ws or Workspace(ROOT)
    env = deploy_environ(agent, os.environ if environ is None else environ)
    start = time.perf_counter()
    findings: list[str] = []
    try:
        drift = lock_drift(ws, agent)
    except LockError as exc:
        drift, findings = "", [str(exc)]
    if drift:
        rel = ws.lock_path(agent).relative_to(ws.root).as_posix()
        lines = drift.splitlines()
        shown = "\n".join(
            lines[:_DIFF_LINES]
            + ([f"... {len(lines) - _DIFF_LINES} more lines"] if len(lines) > _DIFF_LINES else [])
        )
        findings.append(f"{rel} is stale (run `python -m agent_loop.deploy lock`):\n{shown}")
    try:
        spec: DeploySpec | None = inspect_agent(agent, ws=ws, config=config, environ=env)
    except DriverError as exc:
        spec, findings = None, [*findings, str(exc)]
    if spec is not None:
        try:
            tests = agent_tests_spec(env) if agent in TESTING_AGENTS else None
            expected = agent_env_vars(env)
        except ValueError as exc:
            findings.append(str(exc))
        else:
            sandbox = env.get(SANDBOX_VAR, "")
            findings += check_spec(ws, spec, expected, tests=tests, sandbox=sandbox)
    return Validation(agent, spec, findings, time.perf_counter() - start)


def _summary(spec: DeploySpec, out: TextIO) -> None:
    print(f"{spec.agent}: version {spec.version}", file=out)
    for env in spec.report["envs"]:
        image = env["image"]
        if image.get("name") is None:  # a plain image as it is (the tests' own)
            print(f"  env {env['name']}: image {image.get('uri')} as it is", file=out)
        else:
            print(
                f"  env {env['name']}: image {image['identity']} (Python {image['python']})",
                file=out,
            )
        for task in env["tasks"]:
            if task.get("resources") and task.get("image"):
                resources = ", ".join(f"{k} {v}" for k, v in task["resources"].items())
                secrets = ", ".join(task.get("secrets") or []) or "no secrets"
                print(f"    task {task['name']}: {resources}, {secrets}", file=out)
        secrets = [f"{s['key']} as {s['as_env_var']}" for s in env.get("secrets", [])]
        if secrets:
            print(f"    secrets: {', '.join(secrets)}", file=out)
        sandbox = env.get("env_vars", {}).get(SANDBOX_VAR)
        if sandbox:
            print(f"    {SANDBOX_VAR}={sandbox}", file=out)
    for task, triggers in spec.triggers.items():
        names = ", ".join(t["name"] for t in triggers) or "no trigger"
        print(f"  task {task}: {names}", file=out)
    for env in spec.report["envs"]:
        app = env.get("app")
        if app is not None:
            auth = "auth required" if app["requires_auth"] else "public (signed webhooks)"
            print(f"  app {env['name']}: port {app['port']}, {auth}, {app['scaling']}", file=out)
    print(f"  bundle: {len(spec.bundle)} files", file=out)


def deploy_agent(
    agent: str,
    *,
    dry_run: bool,
    config: pathlib.Path | None,
    root: pathlib.Path | None = None,
    out: TextIO | None = None,
) -> int:
    """Deploy one agent (`agent-loop deploy`); 0 on success, 1 when refused or failed.

    A dry run validates offline (against `config`, or the dead-endpoint offline config).
    A real deploy first runs the same checks, refuses on any finding, then builds the
    image with the config's builder, uploads the bundle and registers the env, tasks and
    trigger under the validated version (flyte's own config discovery when `config` is None).
    """
    stream = out or sys.stdout
    ws = Workspace(root or ROOT)
    env = deploy_environ(agent, os.environ)
    validation = validate_agent(agent, ws=ws, config=config if dry_run else None, environ=env)
    if validation.spec is not None:
        _summary(validation.spec, stream)
    for finding in validation.findings:
        print(f"  ! {finding}", file=stream)
    if not validation.ok or validation.spec is None:
        print(f"{agent}: not deployable ({len(validation.findings)} finding(s))", file=stream)
        return 1
    if dry_run:
        print(f"{agent}: dry run ok in {validation.seconds:.1f}s", file=stream)
        return 0
    try:
        report = _run_driver(
            ws, agent, mode="deploy", config=config, version=validation.spec.version, environ=env
        )
    except DriverError as exc:
        print(f"{agent}: deploy failed: {exc}", file=stream)
        return 1
    if report.get("error"):
        print(f"{agent}: deploy failed: {report['error']}", file=stream)
        if "unavailable" in str(report["error"]).lower() and config is not None:
            print(f"  {_unavailable(agent, config, str(report['error']))}", file=stream)
        return 1
    for task in report["deployed"]["tasks"]:
        print(
            f"  deployed {task['name']} {task['version']} triggers {task['triggers']}", file=stream
        )
    for app in report["deployed"].get("apps", []):
        print(f"  deployed app {app['name']} revision {app['revision']}: {app['url']}", file=stream)
    return 0


def _unavailable(agent: str, config: pathlib.Path, said: str) -> str:
    """What to do when the cluster stopped answering during the deploy."""
    from agent_loop.cluster import unavailable
    from agent_loop_common.runtime import remote_flyte_config

    endpoint = remote_flyte_config(config).endpoint
    return unavailable(endpoint, config, purpose=f"agent-loop deploy {agent}", reason=said)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent_loop.deploy", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    validate = commands.add_parser("validate", help="offline validation of each agent's deploy")
    validate.add_argument(
        "agents", nargs="*", metavar="agent", help=f"default: {' '.join(DEPLOYABLES)}"
    )
    validate.add_argument("--spec", type=pathlib.Path, help="also write each spec as JSON here")
    commands.add_parser("lock", help="rewrite packages/<member>/requirements.lock.txt")
    deploy = commands.add_parser("deploy", help="same as `agent-loop deploy`")
    deploy.add_argument("agent", choices=DEPLOYABLES)
    deploy.add_argument("--dry-run", action="store_true")
    deploy.add_argument("--config", type=pathlib.Path)
    args = parser.parse_args(argv)

    if args.command == "lock":
        for path in write_locks(Workspace(ROOT)):
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    if args.command == "deploy":
        return deploy_agent(args.agent, dry_run=args.dry_run, config=args.config)
    unknown = sorted(set(args.agents) - set(DEPLOYABLES))
    if unknown:
        parser.error(f"unknown agent(s) {', '.join(unknown)}: expected {', '.join(DEPLOYABLES)}")
    agents = args.agents or list(DEPLOYABLES)
    # Each agent loads in its own process: validate them side by side.
    with ThreadPoolExecutor(max_workers=min(len(agents), os.cpu_count() or 1)) as pool:
        results = list(pool.map(validate_agent, agents))
    failed = 0
    for result in results:
        status = "ok" if result.ok else "FAILED"
        print(f"{result.agent}: {status} in {result.seconds:.1f}s")
        if result.spec is not None:
            _summary(result.spec, sys.stdout)
            if args.spec:
                args.spec.mkdir(parents=True, exist_ok=True)
                (args.spec / f"{result.agent}.json").write_text(
                    json.dumps(result.spec.report, indent=1, sort_keys=True), encoding="utf-8"
                )
        for finding in result.findings:
            print(f"  ! {finding}")
        failed += not result.ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
