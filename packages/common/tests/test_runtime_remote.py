"""A remote run's Flyte config: found as the flyte CLI finds it, or a FlyteConfigError."""

from __future__ import annotations

import pathlib

import pytest

from agent_loop_common.runtime import FlyteConfigError, RemoteConfig, remote_flyte_config
from agent_loop_common.settings import ConfigError


@pytest.fixture
def nowhere(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> pathlib.Path:
    for key in ("FLYTECTL_CONFIG", "UCTL_CONFIG", "FLYTE_ADMIN_ENDPOINT"):
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "user").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_nothing_found_is_a_configuration_error_naming_what_to_pass(nowhere: pathlib.Path) -> None:
    with pytest.raises(FlyteConfigError) as raised:
        remote_flyte_config(purpose="agent-loop deploy builder")
    assert isinstance(raised.value, ConfigError)  # every entry point exits 2 on it
    message = str(raised.value)
    assert message.startswith("No Flyte config found")
    assert "agent-loop deploy builder needs a Flyte config" in message
    assert "--config infra/flyte/remote.yaml" in message


def test_a_config_in_the_working_folder_is_found_as_flyte_finds_it(nowhere: pathlib.Path) -> None:
    found = nowhere / ".flyte" / "config.yaml"
    found.parent.mkdir()
    found.write_text("admin:\n  endpoint: dns:///flyte.example.com:443\n")
    assert remote_flyte_config() == RemoteConfig(found.resolve(), "dns:///flyte.example.com:443")


def test_an_endpoint_in_the_environment_alone_is_not_a_config(
    nowhere: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flyte reads no environment variable without a config file: it would run locally."""
    monkeypatch.setenv("FLYTE_ADMIN_ENDPOINT", "dns:///flyte.example.com:443")
    with pytest.raises(FlyteConfigError, match="No Flyte config found"):
        remote_flyte_config()


def test_a_config_without_an_endpoint_is_refused(nowhere: pathlib.Path) -> None:
    bare = nowhere / "bare.yaml"
    bare.write_text("task:\n  project: p\n")
    with pytest.raises(FlyteConfigError, match=r"names no admin\.endpoint"):
        remote_flyte_config(bare)
