"""Evidence without configuration (issue 22, point 9), end to end through `agent-loop run`.

A plain Python repository (a `pyproject.toml` with a `test` extra, no environment in the
tree) served by the emulator, with no test or setup command set anywhere: the builder's
tests run in the real bubblewrap sandbox on the default setup (a private environment
built in the copy with `python3 -m venv` + pip), its pull request is ready with counts
and says which setup ran, and a later try and tick reuse the built environment.

Hermetic: pip never reaches an index (`agent_loop_testing.wheelhouse`: this workspace's
pytest and its dependencies zipped as wheels, shown read-only to the sandbox and named
with `AGENT_LOOP_PIP_OPTIONS=--no-index --find-links <wheelhouse>`); the sample
(`ZERO_CONFIG_CALC`) builds with an in-tree PEP 517 backend.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from agent_loop import cli
from agent_loop_common.records import Role
from agent_loop_common.sandbox import BwrapSandbox, _select
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    CALC,
    CALC_SUB,
    VERIFIED,
    ZERO_CONFIG_CALC,
    CliLoop,
    GitHubEmulator,
    ScriptedModel,
    bwrap_e2e_marks,
    serve_for_cli,
    subtract_try,
    turn,
    wheelhouse,
)

pytestmark = [
    *bwrap_e2e_marks(),
    pytest.mark.skipif(
        not pathlib.Path("/usr/bin/python3").exists(), reason="no /usr/bin/python3 here"
    ),
]

CALC_WRONG = CALC + "\n\ndef subtract(a, b):\n    return b - a\n"
SETUP_LINE = (
    "- Setup: default Python environment (.sandbox-venv: uv when on the sandbox's PATH, "
    "else python3 -m venv + pip; install -e .[test] --no-index --find-links "
)


@pytest.fixture(scope="module")
def wheels() -> Iterator[pathlib.Path]:
    with wheelhouse() as directory:
        yield directory


@dataclass
class Loop(CliLoop):
    """The CLI loop, with what the sandbox executed (each command's argv)."""

    executed: list[tuple[str, ...]] = field(default_factory=list[tuple[str, ...]])

    def setups(self) -> int:
        return sum(1 for argv in self.executed if argv[:2] == ("/bin/sh", "-c"))

    def test_runs(self) -> int:
        return sum(1 for argv in self.executed if argv[0] == ".sandbox-venv/bin/python")


@pytest.fixture
def loop(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: pathlib.Path,
    wheels: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[Loop]:
    _select.clear_probe_cache()
    emulator = GitHubEmulator()
    emulator.seed_files(ZERO_CONFIG_CALC)
    executed: list[tuple[str, ...]] = []
    real_execute = BwrapSandbox._execute  # pyright: ignore[reportPrivateUsage]

    async def spy(self: BwrapSandbox, workspace: object, argv: tuple[str, ...], **kw: object):  # type: ignore[no-untyped-def]
        executed.append(argv)
        return await real_execute(self, workspace, argv, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(BwrapSandbox, "_execute", spy)
    with serve_for_cli(
        monkeypatch,
        emulator,
        tmp_path / "home",
        AGENT_LOOP_SANDBOX="bwrap",
        AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS="300",
        AGENT_LOOP_SANDBOX_READONLY_PATHS=str(wheels),
        AGENT_LOOP_PIP_OPTIONS=f"--no-index --find-links {wheels}",
    ):
        yield Loop(emulator, cli.main, capsys, executed=executed)
    _select.clear_probe_cache()


def test_a_python_repository_with_nothing_configured_gets_a_ready_pr_with_counts(
    loop: Loop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LOOP_MAX_TRIES", "2")
    loop.emulator.add_issue("Add subtract()", "We need `subtract(a, b)` in calc, with a test.")
    model = ScriptedModel(
        [*subtract_try(CALC_WRONG), *subtract_try(CALC_SUB)],
        routes={
            VERIFIER_MARKER: [
                turn(VERIFIED, expect_in_messages=["2 passed (base: 1 passed)", "test_subtract"])
            ]
        },
        name="builder",
    )
    built = loop.run(Role.BUILDER, model)

    assert built.outcome == "opened_pr"
    pull = loop.emulator.pull(built.made[0])
    body = pull.body or ""
    assert not pull.draft, body
    assert (
        ".sandbox-venv/bin/python -m pytest -q --junitxml=$SANDBOX_JUNIT` (from pyproject.toml)"
        in body
    )
    assert SETUP_LINE in body
    assert "- Result: 2 passed (base: 1 passed)" in body
    assert "- Fail-to-pass: `tests.test_calc::test_subtract`" in body
    record = loop.record(built.run_id)
    first, accepted = record.attempts
    assert first.tests.startswith("failed: ")
    assert accepted.verified
    assert record.tests is not None
    assert record.tests.setup.startswith("default Python environment")
    # One setup for the baseline; both tries' runs reused the environment it built.
    assert loop.setups() == 1
    assert loop.test_runs() == 3

    # A later tick at the same base commit (a new process's runtime) reuses it too.
    loop.emulator.add_issue("Add subtract() again", "Same, for the second module.")
    second = ScriptedModel(
        subtract_try(CALC_SUB),
        routes={VERIFIER_MARKER: [turn(VERIFIED, expect_in_messages="2 passed (base: 1 passed)")]},
        name="builder",
    )
    again = loop.run(Role.BUILDER, second)
    assert again.outcome == "opened_pr"
    assert not loop.emulator.pull(again.made[0]).draft
    assert loop.setups() == 1
    assert loop.test_runs() == 5
