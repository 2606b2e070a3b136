"""Remote means remote: `run --remote` and `deploy` need a Flyte config naming a cluster.

Without one, `run builder --remote` used to say "on the Flyte cluster" and then run the
tick locally against the repository, and `deploy builder` showed Flyte's internal
`InitializationError`. Now both exit 2 before anything runs, naming what to pass; with a
config they go to the cluster and fail there if it is unreachable, never locally.
Deploy also checks the settings it ships first, so a bad one is reported as itself.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator

import pytest

from agent_loop import cli
from agent_loop.deploy import ROOT
from agent_loop_testing import GitHubEmulator

TEMPLATE = ROOT / "infra" / "flyte" / "remote.yaml"
OFFLINE = ROOT / "infra" / "flyte" / "offline.yaml"
_FLYTE_VARIABLES = ("FLYTECTL_CONFIG", "UCTL_CONFIG", "FLYTE_ADMIN_ENDPOINT")


@pytest.fixture
def nowhere(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> pathlib.Path:
    """A machine with no Flyte config anywhere flyte looks: a fresh home and working
    folder (outside any git repository), no config variables, no agent-loop settings."""
    for key in list(os.environ):
        if key.startswith(("GITHUB_", "AGENT_LOOP_")) and key != "AGENT_LOOP_ALLOW_MODEL_REQUESTS":
            monkeypatch.delenv(key)
    for key in _FLYTE_VARIABLES:
        monkeypatch.delenv(key, raising=False)
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def repo(nowhere: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubEmulator]:
    """The emulator served on loopback as the configured repository (to see that nothing
    reached it), local state under the test's folder."""
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "# widgets\n"})
    emulator.add_issue("Add a colour", "Widgets need a colour.")
    with emulator.serve() as url:
        monkeypatch.setenv("GITHUB_API_URL", url)
        monkeypatch.setenv("GITHUB_TOKEN", emulator.bot_token)
        monkeypatch.setenv("AGENT_LOOP_REPO", emulator.full_name)
        monkeypatch.setenv("AGENT_LOOP_HOME", str(nowhere / "state"))
        yield emulator


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_run_remote_without_a_config_exits_2_naming_what_to_pass(
    repo: GitHubEmulator, nowhere: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _main(["run", "builder", "--remote"], capsys)
    assert code == cli.EXIT_CONFIG
    assert out == ""
    assert "No Flyte config found" in err
    assert "--config infra/flyte/remote.yaml" in err
    assert "FLYTECTL_CONFIG" in err
    assert "AGENT_LOOP_FLYTE_CONFIG" in err
    assert "on the Flyte cluster" not in err  # it never claimed to run there
    assert "Traceback" not in err
    assert repo.requests == []  # nothing ran: not locally, not anywhere
    assert not (nowhere / "state").exists()


@pytest.mark.parametrize(
    ("how", "complaint"),
    [
        (["--config", "missing.yaml"], "Flyte config missing.yaml does not exist"),
        (["--config", str(TEMPLATE)], "still has the template's endpoint"),
        ("AGENT_LOOP_FLYTE_CONFIG", "still has the template's endpoint"),
        ("FLYTECTL_CONFIG", "still has the template's endpoint"),
    ],
)
def test_run_remote_with_an_unusable_config_exits_2(
    how: list[str] | str,
    complaint: str,
    repo: GitHubEmulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    flags = how if isinstance(how, list) else []
    if isinstance(how, str):
        monkeypatch.setenv(how, str(TEMPLATE))
    code, _, err = _main(["run", "reviewer", "--remote", *flags], capsys)
    assert code == cli.EXIT_CONFIG
    assert complaint in err
    assert "--config infra/flyte/remote.yaml" in err
    assert repo.requests == []


def test_config_without_remote_is_bad_usage(
    repo: GitHubEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _main(["run", "distiller", "--config", str(OFFLINE)], capsys)
    assert code == cli.EXIT_CONFIG
    assert "add --remote" in err
    assert repo.requests == []


@pytest.mark.slow
def test_a_remote_run_goes_to_the_cluster_and_fails_there_never_locally(
    repo: GitHubEmulator, nowhere: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The offline config names a closed loopback port: the run must fail to reach it."""
    code, out, err = _main(["run", "builder", "--remote", "--config", str(OFFLINE)], capsys)
    assert code == cli.EXIT_FAILED
    assert out == ""
    assert "on the Flyte cluster dns:///127.0.0.1:1" in err
    assert "the builder tick failed" in err
    assert repo.requests == []  # no local tick touched the repository
    assert not (nowhere / "state" / "flyte-data").exists()


def test_deploy_without_a_config_exits_2_naming_what_to_pass(
    nowhere: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgets")
    code, out, err = _main(["deploy", "builder"], capsys)
    assert code == cli.EXIT_CONFIG
    assert "No Flyte config found" in err
    assert "agent-loop deploy builder needs a Flyte config" in err
    assert "--config infra/flyte/remote.yaml" in err
    assert "InitializationError" not in err + out
    assert "Traceback" not in err


def test_deploy_needs_the_repository_it_will_work_on(
    nowhere: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _main(["deploy", "reviewer", "--config", str(OFFLINE)], capsys)
    assert code == cli.EXIT_CONFIG
    assert "AGENT_LOOP_REPO: not set" in err
    assert "GITHUB_TOKEN" not in err  # credentials come from Flyte secrets, not this shell


def test_a_bad_setting_stops_a_dry_run_with_the_root_cause_only(
    nowhere: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_LOOP_BUILDER_SCHEDULE", "every five minutes")
    monkeypatch.setenv("AGENT_LOOP_MAX_TRIES", "0")
    code, out, err = _main(["deploy", "builder", "--dry-run"], capsys)
    assert code == cli.EXIT_CONFIG
    assert err.startswith("agent-loop configuration is invalid (2 problems)")
    assert "AGENT_LOOP_BUILDER_SCHEDULE" in err
    assert "AGENT_LOOP_MAX_TRIES" in err
    # none of the knock-on findings of an agent that could not be imported
    assert "declares environments" not in out + err
    assert "no task declares a trigger" not in out + err


def test_an_unknown_github_auth_stops_a_dry_run(
    nowhere: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_LOOP_GITHUB_AUTH", "oauth")
    code, _, err = _main(["deploy", "distiller", "--dry-run"], capsys)
    assert code == cli.EXIT_CONFIG
    assert "AGENT_LOOP_GITHUB_AUTH must be 'token' or 'app'" in err


def test_python_m_an_agent_remote_without_a_config_exits_2(
    repo: GitHubEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent_loop_reviewer.__main__ import main

    assert main(["--remote"]) == 2
    err = capsys.readouterr().err
    assert "No Flyte config found" in err
    assert "--config infra/flyte/remote.yaml" in err
    assert repo.requests == []


def test_many_repositories_deploy_without_a_placeholder_repository(
    nowhere: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dry run injected `AGENT_LOOP_REPO=dry-run/unset`, then refused it as "not both"."""
    from agent_loop._deploy_preflight import deploy_settings

    monkeypatch.setenv("AGENT_LOOP_REPOS", "acme/api,acme/web")
    for dry_run in (True, False):
        settings = deploy_settings(dry_run=dry_run)
        assert settings.repos == ("acme/api", "acme/web")
        assert settings.repo == ""
    code, out, err = _main(["deploy", "reviewer", "--dry-run"], capsys)
    assert code == 0, out + err
    assert "    AGENT_LOOP_SANDBOX=flyte" in out  # a deployed reviewer's default
    assert (
        "    secrets: github-token as GITHUB_TOKEN, anthropic-api-key as ANTHROPIC_API_KEY" in out
    )
    assert out.rstrip().splitlines()[-1].startswith("reviewer: dry run ok in ")


def test_a_dry_run_shows_the_app_secrets_it_wires(
    nowhere: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/api")
    monkeypatch.setenv("GITHUB_APP_ID", "123")
    monkeypatch.setenv("GITHUB_APP_PRIVATE_KEY_PATH", str(nowhere / "app.pem"))
    code, out, err = _main(["deploy", "distiller", "--dry-run"], capsys)
    assert code == 0, out + err
    assert (
        "    secrets: github-app-id as GITHUB_APP_ID, github-app-private-key as "
        "GITHUB_APP_PRIVATE_KEY, anthropic-api-key as ANTHROPIC_API_KEY"
    ) in out
    assert "github-token" not in out


def test_a_bad_repository_list_entry_is_named_alone(
    nowhere: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_LOOP_REPOS", "acme/api,not a repo")
    code, out, err = _main(["deploy", "builder", "--dry-run"], capsys)
    assert code == cli.EXIT_CONFIG
    assert err.startswith("agent-loop configuration is invalid (1 problem)")
    assert "AGENT_LOOP_REPOS: entry 'not a repo' is invalid: expected owner/name" in err
    assert "acme/api" not in err  # the good entry is not the problem
    assert "AGENT_LOOP_REPO:" not in err  # no false "not set": the list is the target
    assert out == ""
