"""The default Python setup (issue 22, point 9): when it applies, what wins over it, and
why a change can neither poison the environment others reuse nor reuse a wrong one.

The full path (the emulator, the builder, pip building a real environment in bubblewrap)
is `tests/test_e2e_default_setup.py`; here the choice is tested as pure logic, through
`open_checks`, and the cache through the real bubblewrap sandbox with a cheap setup.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_loop_common.checks import open_checks
from agent_loop_common.records import Role
from agent_loop_common.repo import RepoSnapshot
from agent_loop_common.runtime import use_sandbox
from agent_loop_common.sandbox import (
    VENV_DIR,
    BwrapSandbox,
    EnvReuse,
    PlainSubprocessSandbox,
    SandboxLimits,
    TestCommand,
    agents_md_setup_command,
    default_python_setup,
    dependency_digest,
    detect_test_command,
)
from agent_loop_common.settings import Settings
from agent_loop_testing import GitHubEmulator, emulator_client
from agent_loop_testing.pytest_plugin import AgentRuntime

EXTRA = '[project]\nname = "calc"\nversion = "0"\n\n[project.optional-dependencies]\n{}\n'


def _setup(files: dict[str, str], pip: tuple[str, ...] = ()) -> tuple[str, ...] | None:
    found = default_python_setup(files, detect_test_command(files), pip)
    return found.install if found is not None else None


def test_the_test_extra_then_the_requirements_files_are_installed() -> None:
    assert _setup({"pyproject.toml": EXTRA.format('dev = ["pytest"]\ntests = ["pytest"]')}) == (
        "-e",
        ".[tests]",
    )
    assert _setup({"pyproject.toml": EXTRA.format('dev = ["pytest"]')}, ("--no-index",)) == (
        "-e",
        ".[dev]",
        "--no-index",
    )
    reqs = {"pytest.ini": "", "requirements.txt": "x\n", "requirements-dev.txt": "pytest\n"}
    assert _setup(reqs) == ("-r", "requirements-dev.txt", "-r", "requirements.txt")
    assert _setup({"pyproject.toml": '[project]\nname = "a"\n[tool.pytest.ini_options]\n'}) == (
        "-e",
        ".",
        "pytest",
    )
    found = default_python_setup(
        {"pyproject.toml": EXTRA.format('test = ["pytest"]')},
        detect_test_command({"pyproject.toml": EXTRA.format('test = ["pytest"]')}),
    )
    assert found is not None
    assert found.command.argv[0] == f"{VENV_DIR}/bin/python"
    assert found.setup[:2] == ("/bin/sh", "-c")
    assert "python3 -m venv + pip; install -e .[test]" in found.label()


def test_a_command_named_by_agents_md_or_a_setting_gets_no_default_setup() -> None:
    files = {
        "pyproject.toml": EXTRA.format('test = ["pytest"]'),
        "AGENTS.md": "Test command: tox\n",
    }
    assert default_python_setup(files, detect_test_command(files)) is None
    setting = TestCommand(argv=("python", "-m", "pytest"), source="setting")
    assert default_python_setup(files, setting) is None
    assert default_python_setup({"go.mod": ""}, detect_test_command({"go.mod": ""})) is None


def test_agents_md_names_a_setup_command_like_its_test_command() -> None:
    assert agents_md_setup_command("# A\n\n- **Setup command:** `uv sync --frozen`\n") == (
        "uv sync --frozen"
    )
    assert agents_md_setup_command("setup-command: make deps\nSetup command: no\n") == "make deps"
    assert agents_md_setup_command("# Nothing here\n") is None


async def _snapshot(emulator: GitHubEmulator) -> RepoSnapshot:
    github = emulator_client(emulator)
    sha = await github.get_ref("heads/main")
    assert sha is not None
    return RepoSnapshot(github, sha, "main", label="base branch main")


async def test_open_checks_picks_the_setting_then_agents_md_then_the_default(
    agent_runtime: AgentRuntime, settings: Settings
) -> None:
    emulator = GitHubEmulator()
    pyproject = EXTRA.format('test = ["pytest"]')
    emulator.seed_files({"pyproject.toml": pyproject, "src/calc.py": "X = 1\n"})
    base = await _snapshot(emulator)
    with use_sandbox(PlainSubprocessSandbox(SandboxLimits(wall_seconds=30))):
        async with (
            agent_runtime(Role.BUILDER, settings=settings) as rt,
            open_checks(rt, tree=base, config=base) as checks,
        ):
            assert checks.default_setup is not None
            assert checks.setup == checks.default_setup.setup
            assert checks.command is not None
            assert checks.command.argv[0] == f"{VENV_DIR}/bin/python"
        configured = settings.model_copy(update={"setup_command": "make deps"})
        async with (
            agent_runtime(Role.BUILDER, settings=configured) as rt,
            open_checks(rt, tree=base, config=base) as checks,
        ):
            assert checks.default_setup is None
            assert checks.setup == ("make", "deps")
            assert checks.command is not None
            assert checks.command.argv[0] == "python"

    marker = f"{sys.executable} -c \"open('setup-ran', 'w').write('yes')\""
    emulator.seed_files({"pyproject.toml": pyproject, "AGENTS.md": f"Setup command: `{marker}`\n"})
    base = await _snapshot(emulator)
    with use_sandbox(PlainSubprocessSandbox(SandboxLimits(wall_seconds=30))):
        async with (
            agent_runtime(Role.BUILDER, settings=settings) as rt,
            open_checks(rt, tree=base, config=base) as checks,
        ):
            assert checks.default_setup is None
            assert checks.setup_from_repo
            assert checks.setup is not None
            assert checks.setup[0] == sys.executable
            report = await checks.check({"src/calc.py": "X = 2\n"})
    assert report.base is not None
    assert report.base.setup is not None
    assert report.base.setup.ok


@pytest.mark.slow
async def test_only_the_base_fills_the_cache_and_only_same_dependencies_reuse_it(
    tmp_path: Path,
) -> None:
    works, why = await BwrapSandbox(SandboxLimits()).probe()
    if not works:
        pytest.skip(f"bubblewrap cannot run here: {why}")
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "pyproject.toml").write_text(EXTRA.format('test = ["pytest"]'))

    def read(name: str) -> bytes | None:
        path = tree / name
        return path.read_bytes() if path.is_file() else None

    reuse = EnvReuse(store=tmp_path / "envs" / "key", digest=dependency_digest(read))
    setup = ("/bin/sh", "-c", f"mkdir -p {VENV_DIR} && echo built >> {VENV_DIR}/marker")
    # The tests write into the environment: a copy, never the kept one.
    test = ("/bin/sh", "-c", f"cat {VENV_DIR}/marker && echo poisoned > {VENV_DIR}/marker")
    sandbox = BwrapSandbox(SandboxLimits(wall_seconds=60))

    async def run(changes: dict[str, str | bytes | None] | None) -> tuple[str, bool]:
        result = await sandbox.run(tree, test, setup=setup, changes=changes, reuse=reuse)
        assert result.ok, result.summary()
        return result.output.head, result.setup is not None

    # A change's run builds its own and keeps nothing (the cache is the base's alone).
    assert await run({"src/a.py": "A = 1\n"}) == ("built\n", True)
    assert not reuse.store.exists()
    assert await run(None) == ("built\n", True)
    assert (reuse.store / "marker").read_text() == "built\n"
    # Later runs copy it in: no setup, and what the tests wrote did not reach it.
    assert await run({"src/a.py": "A = 2\n"}) == ("built\n", False)
    assert await run(None) == ("built\n", False)
    # Other dependencies (a changed pyproject) get a fresh build, never the kept one.
    changed = EXTRA.format('test = ["pytest", "evil"]')
    assert await run({"pyproject.toml": changed}) == ("built\n", True)
    assert (reuse.store / "marker").read_text() == "built\n"
