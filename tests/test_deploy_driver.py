"""The deploy driver on a throwaway workspace: what a broken agent package looks like.

Each test writes a small workspace in tmp (the real `agent_loop_common.deploy`, two
sample agents `alpha` and `beta`) and loads one agent in a fresh interpreter, as
`agent-loop deploy` and CI do. The last one dry-runs the real builder through
`deploy_agent`, the function behind `agent-loop deploy builder --dry-run`.
"""

from __future__ import annotations

import io
import pathlib
from concurrent.futures import ThreadPoolExecutor

from agent_loop.deploy import ROOT, Workspace, check_spec, deploy_agent, inspect_agent

AGENTS = ("alpha", "beta")
ENV = '''"""Sample {agent} environment."""

import pathlib
from datetime import datetime

import flyte
from agent_loop_common.deploy import agent_image, agent_secrets
{imports}
PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
env = flyte.TaskEnvironment(
    name="{agent}", image=agent_image("{agent}", PACKAGE_DIR), secrets=agent_secrets()
)


@env.task(
    report=True,
    triggers=[
        flyte.Trigger(
            name="{agent}_schedule",
            automation=flyte.Cron("*/5 * * * *"),
            inputs={{"{bound}": flyte.TriggerTime}},
        )
    ],
)
async def {agent}_tick(trigger_time: datetime | None = None) -> dict[str, str]:
    return {{}}
'''


def _sample(tmp: pathlib.Path, *, imports: str = "", bound: str = "trigger_time") -> Workspace:
    common = tmp / "packages/common/src/agent_loop_common"
    common.mkdir(parents=True)
    for name in ("__init__.py", "deploy.py", "model_keys.py"):
        source = ROOT / "packages/common/src/agent_loop_common" / name
        (common / name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    for agent in AGENTS:
        package = tmp / f"packages/{agent}"
        src = package / f"src/sample_{agent}"
        src.mkdir(parents=True)
        (package / "tests").mkdir()
        (package / "tests/fixtures.py").write_text("ISSUE = 1\n", encoding="utf-8")
        (package / "requirements.lock.txt").write_text("flyte==2.12.1\n", encoding="utf-8")
        (src / "__init__.py").write_text(f'"""sample_{agent}."""\n', encoding="utf-8")
        (src / "helpers.py").write_text("VALUE = 1\n", encoding="utf-8")
        env = ENV.format(
            agent=agent,
            imports=imports if agent == "alpha" else "",
            bound=bound if agent == "alpha" else "trigger_time",
        )
        (src / "env.py").write_text(env, encoding="utf-8")
    return Workspace(tmp, agents=AGENTS)


def test_a_clean_agent_dry_runs_offline_with_only_itself_and_common(tmp_path: pathlib.Path) -> None:
    ws = _sample(tmp_path)
    spec = inspect_agent("alpha", ws=ws)

    assert check_spec(ws, spec) == []
    assert sorted(spec.bundle) == [
        "packages/alpha/src/sample_alpha/__init__.py",
        "packages/alpha/src/sample_alpha/env.py",
        "packages/alpha/src/sample_alpha/helpers.py",
        "packages/common/src/agent_loop_common/__init__.py",
        "packages/common/src/agent_loop_common/deploy.py",
        "packages/common/src/agent_loop_common/model_keys.py",
    ]
    image = spec.images["alpha"]
    assert image["identity"].startswith("agent-loop-alpha:")
    assert "--requirement requirements.txt" in image["dockerfile"]
    assert "FROM ghcr.io/flyteorg/flyte:py3.11-" in image["dockerfile"]
    [trigger] = spec.triggers["alpha.alpha_tick"]
    assert trigger["automation_spec"]["schedule"]["kickoff_time_input_arg"] == "trigger_time"
    [task] = spec.report["dry_run"]["tasks"]
    assert task["name"] == "alpha.alpha_tick"
    assert task["version"] == spec.version
    assert task["image"].endswith(image["identity"])
    sys_path = task["env"]["_F_SYS_PATH"].split(":")
    assert sys_path[:2] == ["./packages/alpha/src", "./packages/common/src"]
    assert not any("beta" in p for p in sys_path)


def _findings(ws: Workspace) -> list[str]:
    return check_spec(ws, inspect_agent("alpha", ws=ws, dry_run=False))


def test_broken_packages_are_refused(tmp_path: pathlib.Path) -> None:
    offenders = (
        "from packages.beta.src.sample_beta import helpers\n"  # another agent, by path
        "from packages.alpha.tests import fixtures\n"  # the package's own tests
        "import sample_beta\n"  # another agent: off the path, as in the image
    )
    cases = [
        _sample(tmp_path / "trigger", bound="when"),
        _sample(tmp_path / "bundle", imports=offenders),
    ]
    with ThreadPoolExecutor(max_workers=2) as pool:
        trigger, bundle = pool.map(_findings, cases)

    assert trigger == [
        "alpha.alpha_tick: trigger 'alpha_schedule': For a scheduled trigger, the TriggerTime "
        "input 'when' must be an input to the task, but not found in task alpha.alpha_tick. "
        "Available inputs: ['trigger_time']"
    ]
    beta, fixtures = "packages/beta/src/sample_beta", "packages/alpha/tests/fixtures.py"
    offending = [
        f"{fixtures}: test code",
        f"{beta}/__init__.py: code of the beta agent",
        f"{beta}/helpers.py: code of the beta agent",
    ]
    assert bundle == [  # the failed import first, without what only follows from it
        "cannot import sample_alpha.env: ModuleNotFoundError: No module named 'sample_beta'",
        *(f"deploy imports {o}" for o in offending),
        *(f"bundle holds {o}" for o in offending),
    ]


def test_agent_loop_deploy_dry_run_of_the_real_builder() -> None:
    out = io.StringIO()
    assert deploy_agent("builder", dry_run=True, config=None, out=out) == 0, out.getvalue()
    text = out.getvalue()
    assert "env builder: image agent-loop-builder:" in text
    assert "task builder.builder_tick: builder_schedule" in text
    assert text.rstrip().splitlines()[-1].startswith("builder: dry run ok in ")


def test_the_test_doubles_are_refused_in_an_image_and_off_the_path(
    tmp_path: pathlib.Path,
) -> None:
    """agent-loop-testing (the emulator, the scripted model) never reaches a deploy: pinned
    by name or exported as a path its lock is refused, and importing it fails as in the image.
    """
    pinned = _sample(tmp_path / "pinned")
    lock = pinned.lock_path("alpha")
    lock.write_text("flyte==2.12.1\nagent-loop-testing==0.1.0\n", encoding="utf-8")
    by_path = _sample(tmp_path / "by-path")
    doubles = by_path.package_dir("testing")
    doubles.mkdir(parents=True)
    (doubles / "pyproject.toml").write_text(
        '[project]\nname = "agent_loop_testing"\nversion = "0.1.0"\n', encoding="utf-8"
    )
    lock = by_path.lock_path("alpha")
    lock.write_text("flyte==2.12.1\n-e ./packages/testing\n", encoding="utf-8")
    imported = _sample(tmp_path / "imported", imports="import agent_loop_testing\n")
    with ThreadPoolExecutor(max_workers=2) as pool:
        findings = list(pool.map(_findings, [pinned, by_path, imported]))

    refused = "packages/alpha/requirements.lock.txt pins test-only agent-loop-testing"
    assert findings == [
        [refused],
        [refused],
        [
            "cannot import sample_alpha.env: ModuleNotFoundError: "
            "No module named 'agent_loop_testing'"
        ],
    ]
