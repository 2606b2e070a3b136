"""A set `AGENT_LOOP_*` variable that is no setting is an error naming the closest one:
a misspelt setting used to be ignored in silence, its default used (issue 31)."""

from __future__ import annotations

import os

import pytest

from agent_loop_common.settings import (
    ConfigError,
    known_variables,
    load_settings,
    unknown_variable_problems,
)
from agent_loop_common.settings._outside import OUTSIDE_THE_MODEL


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if (
            name.upper().startswith(("AGENT_LOOP_", "GITHUB_"))
            and name != "AGENT_LOOP_ALLOW_MODEL_REQUESTS"
        ):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgets")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_test")


def test_a_misspelt_setting_names_the_closest_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_LOOP_MODLE", "openai/gpt-5")
    monkeypatch.setenv("AGENT_LOOP_SANDBOX_TIMOUT_SECONDS", "60")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert caught.value.problems == (
        "AGENT_LOOP_MODLE: not a setting of agent-loop (did you mean AGENT_LOOP_MODEL?). "
        "Rename or unset it: a misspelt setting would otherwise be ignored and its default "
        "used.",
        "AGENT_LOOP_SANDBOX_TIMOUT_SECONDS: not a setting of agent-loop (did you mean "
        "AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS?). Rename or unset it: a misspelt setting would "
        "otherwise be ignored and its default used.",
    )


def test_it_is_listed_with_the_other_problems(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_LOOP_XYZZY", "1")
    monkeypatch.setenv("AGENT_LOOP_MAX_TRIES", "many")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    named = [p.split(":", 1)[0] for p in caught.value.problems]
    assert named == ["AGENT_LOOP_XYZZY", "AGENT_LOOP_MAX_TRIES"]
    assert "(see docs/configuration.md)" in caught.value.problems[0]


def test_the_variables_read_outside_the_settings_are_known(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, _, _ in OUTSIDE_THE_MODEL:
        assert name in known_variables()
    monkeypatch.setenv("AGENT_LOOP_MODEL_KEY_ENV", "none")
    monkeypatch.setenv("AGENT_LOOP_GITHUB_AUTH", "token")
    monkeypatch.setenv("AGENT_LOOP_ALLOW_MODEL_REQUESTS", "0")
    monkeypatch.setenv("AGENT_LOOP_LITELLM_REMOTE_CATALOGS", "false")
    assert load_settings().repo == "acme/widgets"
    assert unknown_variable_problems({"OTHER_TOOL_SETTING": "x", "AGENT_LOOP_HOME": "."}) == []


def test_the_case_of_a_name_is_judged_as_the_settings_read_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The settings read their variables in any case, so `AGENT_LOOP_home` is applied
    (never called "not a setting ... ignored"), and a typo in lower case is caught like
    one in upper case; a variable read outside the settings counts only as spelt."""
    monkeypatch.setenv("AGENT_LOOP_home", "/tmp/agent-loop-case")
    assert str(load_settings().home) == "/tmp/agent-loop-case"
    monkeypatch.setenv("agent_loop_modle", "openai/gpt-5")
    monkeypatch.setenv("agent_loop_allow_model_requests", "0")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    named = {p.split(":", 1)[0]: p for p in caught.value.problems}
    assert set(named) == {"agent_loop_modle", "agent_loop_allow_model_requests"}
    assert "did you mean AGENT_LOOP_MODEL?" in named["agent_loop_modle"]
    assert (
        "did you mean AGENT_LOOP_ALLOW_MODEL_REQUESTS?" in named["agent_loop_allow_model_requests"]
    )
