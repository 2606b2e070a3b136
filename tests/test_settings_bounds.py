"""A setting that loads must work: every numeric setting, at each documented bound, runs a tick.

`AGENT_LOOP_CLAIM_TTL_MINUTES=2` used to pass the settings' check (minimum 2) and then
fail every tick in the claims code (which wanted more than twice its skew margin), exit
1. Each rule now lives once, in the settings, with its range documented from the same
constraint; this file loads each numeric setting at its documented minimum and maximum
(with the settings that must be at least it moved along) and runs a builder tick with it
against the emulator, and drives the CLI at the claim TTL's old and new minimum.
"""

from __future__ import annotations

import os
import pathlib
import re
import typing
from collections.abc import Iterator

import pytest

from agent_loop import cli
from agent_loop_builder import run_builder_tick
from agent_loop_common.claims import BackoffPolicy
from agent_loop_common.llm import Budget, ModelRetryPolicy
from agent_loop_common.records import Outcome, Role
from agent_loop_common.settings import (
    MIN_CLAIM_TTL_MINUTES,
    SETTING_FLOORS,
    Settings,
    env_var_name,
    field_bounds,
)
from agent_loop_common.staging import StagingPolicy
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    GitHubEmulator,
    ScriptedModel,
    call,
    emulator_runtime,
    emulator_settings,
    turn,
)
from agent_loop_testing.pytest_plugin import Install

ROOT = pathlib.Path(__file__).resolve().parents[1]
_IDENTIFIERS = frozenset({"github_app_installation_id"})
"""Numeric fields that are ids, not quantities: they have no range to document."""


def _numeric_fields() -> list[str]:
    out: list[str] = []
    for name, info in Settings.model_fields.items():
        kinds = set(typing.get_args(info.annotation)) | {info.annotation}
        if kinds & {int, float} and bool not in kinds and name not in _IDENTIFIERS:
            out.append(name)
    return out


NUMERIC = _numeric_fields()


def _at_bound(name: str, value: float) -> dict[str, float]:
    """`name=value`, and the settings that must be at least one another moved along."""
    values: dict[str, float] = {name: value}
    defaults = Settings.model_fields

    def current(field: str) -> float:
        return values.get(field, typing.cast(float, defaults[field].default))

    moved = True
    while moved:  # along chains too (a per-event cap, its per-source share, the budget)
        moved = False
        for cap, floor in SETTING_FLOORS.items():
            if current(cap) < current(floor):
                if floor in values and cap != name:
                    values[cap] = current(floor)
                else:
                    values[floor] = current(cap)
                moved = True
    return values


def test_every_numeric_setting_documents_its_range() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(NUMERIC) >= 20
    for name in NUMERIC:
        low, high = field_bounds(name)
        assert low is not None, name
        assert high is not None, name
        row = next(
            line for line in readme.splitlines() if line.startswith(f"| `{env_var_name(name)}` |")
        )
        assert f"Allowed: {low} to {high}." in row, name


def _script(tries: int = 3) -> ScriptedModel:
    """One try's turns for each of `tries` (a setting at its bound may refuse a try)."""
    return ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="src/colour.py", content="BLUE = 1\n")]),
            turn(tool_calls=[call("submit_implementation", title="Colour", body="b", summary="s")]),
            turn("Done."),
        ]
        * tries,
        routes={VERIFIER_MARKER: [turn('{"verified": true, "notes": "ok"}')] * tries},
    )


@pytest.mark.parametrize(
    ("name", "bound"), [(name, bound) for name in NUMERIC for bound in ("min", "max")]
)
async def test_a_tick_runs_with_each_setting_at_each_bound(
    name: str,
    bound: str,
    emulator: GitHubEmulator,
    install: Install,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: pathlib.Path,
) -> None:
    low, high = field_bounds(name)
    value = low if bound == "min" else high
    assert value is not None
    values = _at_bound(name, value)
    # Set as a user would: the environment variables, with the values the docs name.
    env = {env_var_name(field): str(v) for field, v in values.items()}
    for variable, text in env.items():
        monkeypatch.setenv(variable, text)
    settings = emulator_settings(emulator, tmp_path / "home")
    assert all(getattr(settings, f) == v for f, v in values.items()), env
    # What every run builds from the settings accepts them.
    (
        ModelRetryPolicy.from_settings(settings),
        Budget.from_settings(settings),
        StagingPolicy.from_settings(settings),
    )
    BackoffPolicy.from_settings(settings)
    emulator.add_issue("Add a colour", "Widgets need a colour.")
    install(_script(settings.max_tries))
    async with emulator_runtime(
        settings, emulator, Role.BUILDER, memory_root=tmp_path / "mem"
    ) as runtime:
        record = await run_builder_tick(runtime)
    assert record is not None
    assert record.outcome is not Outcome.ERROR, (env, record.error)


@pytest.fixture
def served(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, emulator: GitHubEmulator
) -> Iterator[GitHubEmulator]:
    for key in list(os.environ):
        if key.startswith(("GITHUB_", "AGENT_LOOP_")) and key != "AGENT_LOOP_ALLOW_MODEL_REQUESTS":
            monkeypatch.delenv(key)
    with emulator.serve() as url:
        monkeypatch.setenv("GITHUB_API_URL", url)
        monkeypatch.setenv("GITHUB_TOKEN", emulator.bot_token)
        monkeypatch.setenv("AGENT_LOOP_REPO", emulator.full_name)
        monkeypatch.setenv("AGENT_LOOP_HOME", str(tmp_path / "home"))
        yield emulator


def test_a_claim_ttl_too_short_for_the_claims_exits_2_naming_the_range(
    served: GitHubEmulator, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_LOOP_CLAIM_TTL_MINUTES", str(MIN_CLAIM_TTL_MINUTES - 1))
    assert cli.main(["run", "builder"]) == cli.EXIT_CONFIG
    err = capsys.readouterr().err
    assert re.search(
        r"AGENT_LOOP_CLAIM_TTL_MINUTES: '2' is invalid: .*\(allowed: 3 to 1440\)", err
    ), err
    assert served.requests == []


@pytest.mark.slow
def test_the_shortest_allowed_claim_ttl_runs_a_tick_through_the_cli(
    served: GitHubEmulator,
    install: Install,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AGENT_LOOP_CLAIM_TTL_MINUTES", str(MIN_CLAIM_TTL_MINUTES))
    number = served.add_issue("Add a colour", "Widgets need a colour.")
    model = install(_script(tries=1))
    code = cli.main(["run", "builder", "--issue", str(number)])
    out, err = capsys.readouterr()
    model.assert_finished()
    assert code == 0, err
    # The tick's live lines come first; its outcome line follows them.
    assert any(
        line.startswith(f"builder: opened_pr on issue #{number}") for line in out.splitlines()
    )


@pytest.mark.parametrize(
    ("variable", "value", "allowed"),
    [
        ("AGENT_LOOP_PROMPT_CACHE", "maybe", "on, off, true, false, yes, no, 1, 0"),
        ("AGENT_LOOP_KEEP_TURNS", "abc", "0 to 1000"),
        ("AGENT_LOOP_KEEP_TURNS", "-1", "0 to 1000"),
        ("AGENT_LOOP_KEEP_TURNS", "1001", "0 to 1000"),
    ],
)
def test_a_value_that_is_not_a_switch_or_a_number_exits_2_naming_what_is_allowed(
    served: GitHubEmulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    value: str,
    allowed: str,
) -> None:
    monkeypatch.setenv(variable, value)
    assert cli.main(["run", "builder"]) == cli.EXIT_CONFIG
    err = capsys.readouterr().err
    assert f"{variable}: '{value}' is invalid: " in err, err
    assert f"(allowed: {allowed})" in err, err
    assert served.requests == []
