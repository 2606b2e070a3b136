"""What one agent's (or app's) deploy holds, and the rules it must keep (pure: data in,
findings out).

A `DeploySpec` is the driver's report on one agent package: the environments it
declares, each image's identity (name and content tag) and rendered Dockerfile, the
files of the code bundle with their hashes, every task's serialized triggers, and the
version derived from all of that. `check_spec` lists what breaks independent deployment:
another agent, tests, the test doubles (`agent-loop-testing`) or any file outside the
agent and `common` in the bundle, a trigger that does not serialize, an image that is not
the agent's own or that installs test-only packages it does not declare itself. An app (the gateway) has no trigger; it must be one
`AppEnvironment` with a server and no tasks. A worker (the eval) is a `TaskEnvironment`
whose tasks are called by name, never on a schedule: a trigger on it is a finding. It
may bundle the public code of another member it builds on (the eval replays the
builder's pipeline: `BUNDLED_WITH`).

The builder, the reviewer and the eval run the repository's tests. Deployed, they do so in the
tests' own environment (`agent-loop-tests`, `AGENT_LOOP_SANDBOX=flyte`, the deploy's
default: `deploy_environ`): its image is the configured sandbox image with nothing
installed on top, its task has the configured resources and no secrets, and it receives
no settings. Any other backend that runs tests (`auto`, `bwrap`, `docker`) needs a tool
the agent's image does not have, so such a deploy is refused with the fix named.
"""

from __future__ import annotations

import pathlib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_loop_common.deploy import IMAGE_PREFIX, PYTHON_VERSION, TESTS_ENV
from agent_loop_common.sandbox import FlyteTestSpec

__all__ = [
    "AGENTS",
    "APPS",
    "BUNDLED_WITH",
    "DEPLOYABLES",
    "SANDBOX_VAR",
    "TESTING_AGENTS",
    "WORKERS",
    "DeploySpec",
    "Workspace",
    "check_spec",
    "deploy_environ",
    "is_test_path",
]

AGENTS = ("builder", "reviewer", "distiller")
"""The agent packages: each a `TaskEnvironment` with a scheduled tick."""

APPS = ("gateway",)
"""The app packages: each an `AppEnvironment` (a service), with no task and no trigger."""

WORKERS = ("eval",)
"""The worker packages: a `TaskEnvironment` whose tasks are called by name (the eval's
per-instance tasks), with no trigger."""

DEPLOYABLES = (*AGENTS, *APPS, *WORKERS)
"""Every member deployed on its own: its env, image, lock and code bundle."""

BUNDLED_WITH: dict[str, tuple[str, ...]] = {"eval": ("builder",)}
"""Members whose code a deployable's bundle holds besides its own and `common`: the eval
replays the builder's pipeline (through the builder's public API; the builder's own
environment is never imported, so it is not deployed with the eval)."""

TESTING_AGENTS = ("builder", "reviewer", "eval")
"""The deployables that run the repository's tests (in a sandbox): before they write,
or (the eval) to validate and score instances."""

SANDBOX_VAR = "AGENT_LOOP_SANDBOX"
DEPLOYED_SANDBOX = "flyte"
"""The sandbox of a deployed builder or reviewer unless the operator sets another: the
agent's image has neither bubblewrap nor Docker, and its pod holds the GitHub token and
the model key, so the tests run in a task of their own."""

_NEEDS = {
    "bwrap": ("bubblewrap",),
    "docker": ("a Docker engine",),
    "auto": ("bubblewrap", "a Docker engine"),
}
"""What each local backend needs in the agent's image (`auto` takes either)."""

_TEST_DIRS = frozenset({"tests", "test", "testing"})


@dataclass(frozen=True)
class Workspace:
    """Where the members live: `<root>/<members>/<name>/src`, one of them `common`."""

    root: pathlib.Path
    agents: tuple[str, ...] = DEPLOYABLES
    """The members deployed on their own (agents and apps), none bundled with another."""
    common: str = "common"
    testing: str = "testing"
    """The test doubles' member (emulator, scripted model): never in a deploy."""
    members: str = "packages"
    distribution_prefix: str = "agent-loop-"
    bundled_with: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: BUNDLED_WITH)
    """Other members whose code a deployable's bundle may hold (see `BUNDLED_WITH`)."""

    def package_dir(self, member: str) -> pathlib.Path:
        return self.root / self.members / member

    def src_dir(self, member: str) -> pathlib.Path:
        return self.package_dir(member) / "src"

    def lock_path(self, agent: str) -> pathlib.Path:
        """The agent's exported lock, which its image installs."""
        return self.package_dir(agent) / "requirements.lock.txt"

    def distribution(self, member: str) -> str:
        return f"{self.distribution_prefix}{member}"

    def bundled_members(self, agent: str) -> tuple[str, ...]:
        """The members whose code `agent`'s deploy loads: itself first, then any it builds
        on (`bundled_with`), then `common`."""
        return (agent, *self.bundled_with.get(agent, ()), self.common)

    def allowed_prefixes(self, agent: str) -> tuple[str, ...]:
        """Root-relative prefixes a bundled file of `agent` may start with (its own first)."""
        return tuple(f"{self.members}/{m}/src/" for m in self.bundled_members(agent))

    def check_agent(self, agent: str) -> None:
        if agent not in self.agents:
            raise ValueError(f"unknown agent {agent!r}: expected one of {', '.join(self.agents)}")

    def runtime_dependencies(self, member: str) -> frozenset[str]:
        """Normalised names of the third-party packages `member` declares itself."""
        pyproject = self.package_dir(member) / "pyproject.toml"
        if not pyproject.exists():
            return frozenset()
        data = tomllib.loads(pyproject.read_text("utf-8"))
        names = {
            re.split(r"[\s\[<>=!~;]", str(dep), maxsplit=1)[0].lower().replace("_", "-")
            for dep in data.get("project", {}).get("dependencies", [])
        }
        return frozenset(n for n in names if not n.startswith(self.distribution_prefix))


def deploy_environ(agent: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment an agent is deployed from: `environ`, with `AGENT_LOOP_SANDBOX`
    set to `flyte` for the builder and the reviewer when the operator left it unset."""
    env = dict(environ)
    if agent in TESTING_AGENTS and not env.get(SANDBOX_VAR, "").strip():
        env[SANDBOX_VAR] = DEPLOYED_SANDBOX
    return env


def is_test_path(path: str) -> bool:
    """True for test code: a `tests`/`testing` dir, `test_*.py`, `*_test.py`, `conftest.py`."""
    parts = path.split("/")
    name = parts[-1]
    return (
        any(p in _TEST_DIRS for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


@dataclass(frozen=True)
class DeploySpec:
    """The driver's report on one agent, with the views the checks and tests compare."""

    agent: str
    report: dict[str, Any] = field(repr=False)

    @property
    def version(self) -> str:
        return str(self.report["version"])

    @property
    def env_names(self) -> list[str]:
        return [e["name"] for e in self.report["envs"]]

    @property
    def images(self) -> dict[str, dict[str, Any]]:
        return {e["name"]: e["image"] for e in self.report["envs"]}

    @property
    def bundle(self) -> dict[str, str]:
        """Root-relative path -> sha256 of every file the code bundle holds."""
        return {f["path"]: f["sha256"] for f in self.report["bundle"]["files"]}

    @property
    def triggers(self) -> dict[str, list[dict[str, Any]]]:
        """Task name -> its triggers, serialized as deploy sends them."""
        return {t["name"]: t["triggers"] for e in self.report["envs"] for t in e["tasks"]}

    def identity(self) -> dict[str, Any]:
        """Everything that must stay put when another agent changes."""
        return {
            "version": self.version,
            "images": {name: image["identity"] for name, image in self.images.items()},
            "bundle": self.bundle,
            "triggers": self.triggers,
        }


def _file_findings(ws: Workspace, agent: str, paths: list[str], what: str) -> list[str]:
    allowed = ws.allowed_prefixes(agent)
    bundled = ws.bundled_members(agent)
    others = {f"{ws.members}/{a}/": a for a in ws.agents if a not in bundled}
    doubles = f"{ws.members}/{ws.testing}/"
    findings: list[str] = []
    for path in paths:
        other = next((name for prefix, name in others.items() if path.startswith(prefix)), None)
        if path.startswith(doubles):
            findings.append(f"{what} {path}: the test doubles ({ws.distribution(ws.testing)})")
        elif other is not None:
            findings.append(f"{what} {path}: code of the {other} agent")
        elif is_test_path(path):
            findings.append(f"{what} {path}: test code")
        elif not path.startswith(allowed):
            findings.append(f"{what} {path}: outside {' and '.join(ws.bundled_members(agent))}")
    return findings


def _image_findings(ws: Workspace, agent: str, env: str, image: dict[str, Any]) -> list[str]:
    if image.get("error"):
        return [f"env {env}: image {image.get('name')} cannot be described: {image['error']}"]
    findings: list[str] = []
    if image.get("name") != f"{IMAGE_PREFIX}{agent}":
        findings.append(f"env {env}: image {image.get('identity')} is not {IMAGE_PREFIX}{agent}")
    pinned = ".".join(str(v) for v in PYTHON_VERSION)
    if image.get("python") != pinned:
        findings.append(f"env {env}: image Python {image.get('python')} is not the pinned {pinned}")
    lock = ws.lock_path(agent).relative_to(ws.root).as_posix()
    if [item["path"] for item in image.get("locks", [])] != [lock]:
        findings.append(f"env {env}: image does not install exactly {lock}")
    for item in image.get("locks", []):
        # A member may declare one itself: the gateway serves with starlette and uvicorn.
        extra = [p for p in item["testing_packages"] if p not in ws.runtime_dependencies(agent)]
        if extra:
            findings.append(f"{item['path']} pins test-only {', '.join(extra)}")
    return findings


def _env_var_findings(env: dict[str, Any], expected: Mapping[str, str]) -> list[str]:
    declared = env.get("env_vars", {})
    missing = sorted(k for k, v in expected.items() if declared.get(k) != v)
    if not missing:
        return []
    return [
        f"env {env['name']} does not forward {', '.join(missing)} to its tasks "
        "(declare TaskEnvironment(env_vars=agent_env_vars()))"
    ]


def _tests_env_findings(env: dict[str, Any], spec: FlyteTestSpec) -> list[str]:
    """The tests' environment holds exactly the configured task: its image with nothing
    installed on top, its resources, its own env vars, no secrets, no settings."""
    name = env["name"]
    image = env["image"]
    findings: list[str] = []
    if image.get("uri") != spec.image or image.get("locks"):
        findings.append(
            f"env {name}: image {image.get('uri')} is not the sandbox image {spec.image} "
            "(AGENT_LOOP_SANDBOX_IMAGE) as it is"
        )
    if env.get("secrets"):
        findings.append(f"env {name} declares secrets: the tests never receive one")
    if env.get("env_vars"):
        findings.append(
            f"env {name} receives settings {', '.join(sorted(env['env_vars']))}: the tests see none"
        )
    tasks = {t["name"]: t for t in env["tasks"]}
    if sorted(tasks) != [spec.name]:
        return [*findings, f"env {name}: tasks {sorted(tasks)}, expected only [{spec.name!r}]"]
    task = tasks[spec.name]
    if task.get("secrets"):
        findings.append(
            f"task {spec.name} declares secrets {task['secrets']}: the tests never receive one"
        )
    want = {"cpu": str(spec.cpu), "memory": spec.memory}
    if task.get("resources") != want:
        findings.append(
            f"task {spec.name}: resources {task.get('resources')}, expected {want} "
            "(AGENT_LOOP_SANDBOX_MEMORY_MB)"
        )
    if task.get("env_vars") != dict(spec.env_vars):
        findings.append(
            f"task {spec.name}: env vars {task.get('env_vars')}, expected {dict(spec.env_vars)}"
        )
    if task.get("image") != spec.image:
        findings.append(f"task {spec.name}: image {task.get('image')}, expected {spec.image}")
    return findings


def _backend_findings(agent: str, env: dict[str, Any], sandbox: str) -> list[str]:
    """A local backend (`auto`, `bwrap`, `docker`) needs its tool in the agent's image."""
    needs = _NEEDS.get(sandbox.strip().lower())
    if needs is None:
        return []
    dockerfile = str(env["image"].get("dockerfile") or "")
    has = {
        "bubblewrap": "bubblewrap" in dockerfile,
        "a Docker engine": re.search(r"\bdocker(\.io|-ce)\b", dockerfile) is not None,
    }
    if any(has[tool] for tool in needs):
        return []
    return [
        f"{SANDBOX_VAR}={sandbox}: the {agent}'s image has no {' or '.join(needs)}, so its "
        "deployed ticks could not run the repository's tests; deploy with "
        f"{SANDBOX_VAR}=flyte (the default of a deploy: the tests run in a task of their "
        f"own) or {SANDBOX_VAR}=off (no tests: pull requests open as drafts saying so)"
    ]


def _app_findings(envs: list[dict[str, Any]]) -> list[str]:
    """An app is one `AppEnvironment` that serves (a server function or a command)."""
    findings: list[str] = []
    for env in envs:
        app = env.get("app")
        if app is None:
            findings.append(f"env {env['name']} is not an AppEnvironment")
            continue
        if env["tasks"]:
            findings.append(f"env {env['name']} declares tasks: an app only serves")
        if not (app.get("server") or app.get("command") or app.get("args")):
            findings.append(f"env {env['name']} has no server function or command")
    return findings


def _trigger_errors(report: Mapping[str, Any]) -> bool:
    return any(t["trigger_errors"] for e in report["envs"] for t in e["tasks"])


def check_spec(
    ws: Workspace,
    spec: DeploySpec,
    expected_env: Mapping[str, str] | None = None,
    *,
    tests: FlyteTestSpec | None = None,
    sandbox: str = DEPLOYED_SANDBOX,
) -> list[str]:
    """Every way `spec` breaks the agent's independent deploy (empty: deployable).

    Args:
        ws: The workspace.
        spec: The driver's report.
        expected_env: Settings the tasks must receive (`agent_env_vars()` of the
            deploying shell); a scheduled run has nothing else to read them from.
        tests: The tests' task spec the deploy must declare in `agent-loop-tests`
            (`agent_tests_spec()` of the deploying shell), or `None` for none.
        sandbox: `AGENT_LOOP_SANDBOX` of the deploy, checked against the agent's image
            for the builder and the reviewer.
    """
    agent, report = spec.agent, spec.report
    findings = [f"cannot import {e['module']}: {e['error']}" for e in report["load_errors"]]
    # A failed import comes first, and what only follows from it (no environment, no
    # trigger, a dry run that bundled less) is left out: it would bury the root cause.
    failed_import = bool(findings)
    expected = sorted([agent, *([TESTS_ENV] if tests is not None else [])])
    if sorted(spec.env_names) != expected and not failed_import:
        findings.append(f"declares environments {spec.env_names}, expected only {expected}")
    findings += _file_findings(ws, agent, report["modules"], "deploy imports")
    findings += _file_findings(ws, agent, sorted(spec.bundle), "bundle holds")
    if not any(p.startswith(ws.allowed_prefixes(agent)[0]) for p in spec.bundle):
        findings.append(f"bundle holds no file of {agent}")
    triggers = 0
    for env in report["envs"]:
        if env["name"] == TESTS_ENV and tests is not None:
            findings += _tests_env_findings(env, tests)
        else:
            findings += _image_findings(ws, agent, env["name"], env["image"])
            findings += _env_var_findings(env, expected_env or {})
            if agent in TESTING_AGENTS and env["name"] == agent:
                findings += _backend_findings(agent, env, sandbox)
        for task in env["tasks"]:
            findings += task["trigger_errors"]
            triggers += len(task["triggers"])
    if agent in APPS:
        findings += _app_findings(report["envs"])
    elif agent in WORKERS:
        findings += [
            f"task {task}: a trigger on a worker, whose tasks run only when called by name"
            for task, declared in spec.triggers.items()
            if declared
        ]
    elif not triggers and not failed_import and not _trigger_errors(report):
        findings.append("no task declares a trigger: the agent would never run on its own")
    dry_run = report.get("dry_run")
    bundled = dry_run is not None and sorted(dry_run["bundle_members"]) == sorted(spec.bundle)
    # A worker whose own environment has no task yet ships no code bundle at all.
    ships_code = any(e["tasks"] for e in report["envs"] if e["name"] == agent)
    if dry_run is not None and not bundled and not failed_import and ships_code:
        findings.append("the dry-run's code bundle differs from the listed bundle files")
    if report.get("error"):
        findings.append(f"deploy failed: {report['error']}")
    return findings
