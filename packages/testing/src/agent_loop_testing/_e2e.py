"""The end-to-end harness: the whole loop as a user runs it, `agent-loop run` against the
emulator served on loopback, with the calc sample project most of those tests share.

An end-to-end test goes through the CLI's `main(["run", ...])`: settings from the
environment, Flyte local mode, githubkit over real HTTP to the served emulator, memory
under `AGENT_LOOP_HOME`, and models installed with `use_model`. Every such test needs
the same wiring (a clean environment, the emulator served and named by the GitHub and
agent-loop variables, a tick read back as its JSON summary, the run's record read back
from memory), so it lives here once, and each test file keeps only its scenario.

The CLI is not imported here (the test doubles depend on `common` alone; an
import-linter contract checks it): the test passes its `main` in.

```python
with serve_for_cli(monkeypatch, emulator, tmp_path / "home", AGENT_LOOP_SANDBOX="off"):
    loop = CliLoop(emulator, cli.main, capsys)
    summary = loop.run(Role.BUILDER, ScriptedModel([*subtract_try(CALC_SUB)], ...))
    assert loop.record(summary.run_id).outcome is Outcome.OPENED_PR
```
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from agent_loop_common.records import Role, RunRecord
from agent_loop_common.runtime import TickSummary, local_memory, use_model
from agent_loop_common.sandbox import BwrapSandbox, SandboxLimits
from agent_loop_common.settings import Settings, load_settings
from agent_loop_testing._harness import stored_record
from agent_loop_testing._scripted import ScriptedCall, ScriptedModel, Turn, call, turn

if TYPE_CHECKING:
    import pytest
    from flyte.ai.agents import LLMCallable

    from agent_loop_testing._emulator import GitHubEmulator
    from agent_loop_testing._emulator_host import GitHubHost

__all__ = [
    "CALC",
    "CALC_ISSUE",
    "CALC_PYPROJECT",
    "CALC_REPO",
    "CALC_SUB",
    "REPORT_FORGERY",
    "TESTS",
    "TESTS_SUB",
    "VERIFIED",
    "CliLoop",
    "bwrap_e2e_marks",
    "bwrap_works",
    "serve_for_cli",
    "submit_subtract",
    "subtract_try",
]

CALC = "def add(a, b):\n    return a + b\n"
"""The calc sample's `src/calc.py` on the default branch: `add` only."""
CALC_SUB = CALC + "\n\ndef subtract(a, b):\n    return a - b\n"
"""`src/calc.py` with a correct `subtract`: what `CALC_ISSUE` asks for."""
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
"""The sample's `tests/test_calc.py`: one passing test on the base."""
TESTS_SUB = TESTS.replace("import add", "import add, subtract") + (
    "\n\ndef test_subtract():\n    assert subtract(5, 3) == 2\n"
)
"""`tests/test_calc.py` with `test_subtract`: fails on the base, passes with `CALC_SUB`."""
CALC_PYPROJECT = (
    '[project]\nname = "calc"\nversion = "0.1.0"\n\n'
    '[tool.pytest.ini_options]\npythonpath = ["src"]\n'
)
"""A `pyproject.toml` that lets pytest import `src/calc.py` without installing it."""
CALC_REPO: Mapping[str, str] = {
    "pyproject.toml": CALC_PYPROJECT,
    "src/calc.py": CALC,
    "tests/test_calc.py": TESTS,
    "README.md": "# calc\n",
}
"""The calc sample's tree, to `seed_files` (merge a test's own files over it)."""
CALC_ISSUE = ("Add subtract()", "We need `subtract(a, b)` in calc, with a test.")
"""The sample's issue, as `add_issue(*CALC_ISSUE)` takes it."""
VERIFIED = '{"verified": true, "notes": "Checked the code and the tests."}'
"""A verifier's acceptance, as the model answers it."""
REPORT_FORGERY = """

import gc

_HOOK = "py" + "test_runtest_log" + "report"


def _passed(report):
    if report.failed:
        report.outcome = "passed"


_passed.__dict__["py" + "test_impl"] = {
    "wrapper": False,
    "hookwrapper": False,
    "optionalhook": False,
    "tryfirst": True,
    "trylast": False,
    "specname": None,
}


class _Steer:
    pass


setattr(_Steer, _HOOK, staticmethod(_passed))

for _found in gc.get_objects():
    if type(_found).__name__ == "Config" and hasattr(_found, "pluginmanager"):
        _found.pluginmanager.register(_Steer())
        break
"""
"""Product code in the forged-pass shape of the fourth security review, to append to a
module under test: at import it finds pytest's `Config` through `gc`, registers a plugin
whose hook name is assembled at run time (`"py" + "test_runtest_log" + "report"`), first
in line, and turns every failed report into a pass, so exit status, printed summary and
JUnit report all agree on a pass. The sandbox's pytest guard and its scan of the change
must find it (`tampered`)."""


def bwrap_works() -> tuple[bool, str]:
    """Whether the bubblewrap sandbox runs on this machine, and why not."""
    return asyncio.run(BwrapSandbox(SandboxLimits()).probe())


def bwrap_e2e_marks() -> list[pytest.MarkDecorator]:
    """A test module's `pytestmark` when it runs repository code in the real bubblewrap
    sandbox: `slow`, and skipped (saying why) where bubblewrap cannot run."""
    import pytest

    works, why = bwrap_works()
    return [
        pytest.mark.slow,
        pytest.mark.skipif(not works, reason=f"bubblewrap cannot run here: {why}"),
    ]


def submit_subtract() -> ScriptedCall:
    """The builder's `submit_implementation` of the sample's subtract change."""
    return call(
        "submit_implementation",
        title="Add subtract()",
        body="Adds `subtract(a, b)` with a test.",
        summary="subtract() and its test.",
    ).expecting("Submitted")


def subtract_try(calc: str) -> list[Turn]:
    """One builder try at `CALC_ISSUE`: stage `calc` as `src/calc.py` and `TESTS_SUB`,
    submit, and stop (four turns; `calc` may be right, wrong or hostile)."""
    return [
        turn(tool_calls=[call("stage_file", path="src/calc.py", content=calc)]),
        turn(tool_calls=[call("stage_file", path="tests/test_calc.py", content=TESTS_SUB)]),
        turn(tool_calls=[submit_subtract()]),
        turn("Submitted."),
    ]


@contextmanager
def serve_for_cli(
    monkeypatch: pytest.MonkeyPatch,
    github: GitHubEmulator | GitHubHost,
    home: str | os.PathLike[str],
    *,
    repo_variable: str | None = None,
    **env: str,
) -> Generator[str]:
    """Serve `github` on loopback and point a CLI run at it, as a user's environment does.

    Every `GITHUB_*` and `AGENT_LOOP_*` variable the process had is removed first (a
    developer's own settings must not leak into a test), then `GITHUB_API_URL`,
    `GITHUB_TOKEN` (the bot's), `AGENT_LOOP_HOME=home`, and the repository are set:
    `AGENT_LOOP_REPO` for one emulator, `AGENT_LOOP_REPOS` listing a host's
    repositories, or the variable `repo_variable` names. `env` adds the test's own
    (`AGENT_LOOP_SANDBOX="off"`). Yields the served URL.
    """
    for key in list(os.environ):
        if key.startswith(("GITHUB_", "AGENT_LOOP_")) and key != "AGENT_LOOP_ALLOW_MODEL_REQUESTS":
            monkeypatch.delenv(key)
    from agent_loop_testing._emulator import GitHubEmulator

    if isinstance(github, GitHubEmulator):
        repos, variable = github.full_name, "AGENT_LOOP_REPO"
    else:
        repos, variable = ",".join(em.full_name for em in github), "AGENT_LOOP_REPOS"
    with github.serve() as url:
        monkeypatch.setenv("GITHUB_API_URL", url)
        monkeypatch.setenv("GITHUB_TOKEN", github.bot_token)
        monkeypatch.setenv(repo_variable or variable, repos)
        monkeypatch.setenv("AGENT_LOOP_HOME", os.fspath(home))
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        yield url


@dataclass
class CliLoop:
    """`agent-loop run` ticks over a served emulator (see `serve_for_cli`), one model
    per role, each tick's summary and record read back as a person would.

    Args:
        emulator: The served repository (for a `GitHubHost`, any one of its emulators).
        main: The CLI's entry point (`agent_loop.cli.main`).
        capture: The test's `capsys`: a tick's JSON summary is read from its stdout.
        models: The model answering each role's runs (`provider` hands them out).
        printed: Every tick's (stdout, stderr), in order (e.g. to check a secret never
            reached the terminal).
        events: Every progress event the ticks printed (`--json` prints one JSON line per
            event before the summary), in order.
    """

    emulator: GitHubEmulator
    main: Callable[[list[str]], int]
    capture: pytest.CaptureFixture[str]
    models: dict[Role, LLMCallable] = field(default_factory=dict[Role, "LLMCallable"])
    printed: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    events: list[dict[str, object]] = field(default_factory=list[dict[str, object]])

    @property
    def settings(self) -> Settings:
        """The settings a tick loads now (from the environment, as the CLI does)."""
        return load_settings()

    def provider(self, role: Role, purpose: str, usage: object, budget: object) -> LLMCallable:
        """The `ModelProvider` shape: the model put in `models` for `role`."""
        return self.models[role]

    def ticks(self, *argv: str) -> list[TickSummary]:
        """Run `agent-loop run *argv --json`, which must exit 0; the summary lines it
        printed, `"event": "tick.summary"` (its progress events go to `events`)."""
        code = self.main(["run", *argv, "--json"])
        out, err = self.capture.readouterr()
        self.printed.append((out, err))
        assert code == 0, err
        summaries: list[TickSummary] = []
        for line in out.strip().splitlines():
            loaded = cast("dict[str, object]", json.loads(line))
            if loaded.get("event") == "tick.summary":
                summaries.append(TickSummary.model_validate(loaded))
            else:
                self.events.append(loaded)
        return summaries

    def tick(self, *argv: str) -> TickSummary:
        """Run `agent-loop run *argv --json`, which must exit 0; the last tick's summary."""
        return self.ticks(*argv)[-1]

    def run(self, role: Role, model: ScriptedModel, *argv: str) -> TickSummary:
        """One tick of `role` answered by `model` (installed for every role's provider),
        which must have used its whole script; the tick's summary."""
        self.models[role] = model
        with use_model(self.provider):
            summary = self.tick(role.value, *argv)
        model.assert_finished()
        return summary

    def record(self, run_id: str) -> RunRecord:
        """The record of `run_id` in local memory (in whichever repository's namespace
        holds it, with `AGENT_LOOP_REPOS`).

        Raises:
            LookupError: No runs bucket, or more than one, holds it.
        """
        settings = self.settings
        locations = [local_memory(settings.for_repo(r)) for r in settings.repos] or [
            local_memory(settings)
        ]
        found: list[RunRecord] = []
        for location in locations:
            try:
                found.append(stored_record(location, run_id))
            except LookupError:
                continue
        if len(found) != 1:
            raise LookupError(f"run {run_id!r} is in {len(found)} repositories' memory")
        return found[0]
