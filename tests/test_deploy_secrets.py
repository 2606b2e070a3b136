"""What every agent env injects: GitHub credentials, the key named for the provider, settings."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import flyte
import pytest

from agent_loop.deploy import ROOT
from agent_loop_common.deploy import (
    agent_env_vars,
    agent_schedule,
    agent_secrets,
    github_auth,
    model_key_envs,
    secret_key,
)


def _pairs(environ: dict[str, str]) -> list[tuple[str, str | None]]:
    secrets = agent_secrets(environ)
    assert all(isinstance(s, flyte.Secret) for s in secrets)
    return [(s.key, s.as_env_var) for s in secrets if isinstance(s, flyte.Secret)]


def test_default_is_a_github_token_and_the_default_models_key() -> None:
    assert _pairs({}) == [
        ("github-token", "GITHUB_TOKEN"),
        ("anthropic-api-key", "ANTHROPIC_API_KEY"),
    ]


@pytest.mark.parametrize(
    ("environ", "keys"),
    [
        ({"AGENT_LOOP_MODEL": "openai/gpt-5"}, ["OPENAI_API_KEY"]),
        ({"AGENT_LOOP_MODEL": "gpt-4o"}, ["OPENAI_API_KEY"]),
        ({"AGENT_LOOP_MODEL": "gemini/gemini-2.5-pro"}, ["GEMINI_API_KEY"]),
        ({"AGENT_LOOP_MODEL": "mistral/mistral-large"}, ["MISTRAL_API_KEY"]),
        ({"AGENT_LOOP_MODEL": "together_ai/x"}, ["TOGETHERAI_API_KEY"]),
        (
            {
                "AGENT_LOOP_MODEL": "anthropic/claude-sonnet-4-6",
                "AGENT_LOOP_VERIFIER_MODEL": "openai/o3",
            },
            ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"],
        ),
        ({"AGENT_LOOP_VERIFIER_MODEL": "anthropic/claude-haiku"}, ["ANTHROPIC_API_KEY"]),
        ({"AGENT_LOOP_MODEL_KEY_ENV": "VLLM_KEY", "AGENT_LOOP_MODEL": "openai/x"}, ["VLLM_KEY"]),
        ({"AGENT_LOOP_MODEL_KEY_ENV": "none"}, []),
    ],
)
def test_the_model_key_follows_the_provider(environ: dict[str, str], keys: list[str]) -> None:
    assert model_key_envs(environ) == keys


def test_github_app_credentials() -> None:
    pairs = _pairs({"AGENT_LOOP_GITHUB_AUTH": "app", "AGENT_LOOP_MODEL_KEY_ENV": "none"})
    assert pairs == [
        ("github-app-id", "GITHUB_APP_ID"),
        ("github-app-private-key", "GITHUB_APP_PRIVATE_KEY"),
    ]
    with pytest.raises(ValueError, match="'token' or 'app'"):
        agent_secrets({"AGENT_LOOP_GITHUB_AUTH": "oauth"})


def test_secret_key() -> None:
    assert secret_key("OPENAI_API_KEY") == "openai-api-key"


def test_env_vars_forward_settings_but_never_secrets_or_local_paths() -> None:
    environ = {
        "AGENT_LOOP_REPO": "acme/widgets",
        "GITHUB_API_URL": "https://ghe.example.com/api/v3",
        "AGENT_LOOP_MAX_COST_USD_PER_RUN": "2.5",
        "AGENT_LOOP_MODEL": "openai/gpt-5",
        "AGENT_LOOP_BOT_LOGIN": "",
        "GITHUB_TOKEN": "ghp_secret",
        "OPENAI_API_KEY": "sk-secret",
        "GITHUB_APP_PRIVATE_KEY": "pem",
        "GITHUB_APP_PRIVATE_KEY_PATH": "/home/me/key.pem",
        "AGENT_LOOP_HOME": "/home/me/.agent-loop",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HOME": "/home/me",
    }
    assert agent_env_vars(environ) == {
        "AGENT_LOOP_REPO": "acme/widgets",
        "GITHUB_API_URL": "https://ghe.example.com/api/v3",
        "AGENT_LOOP_MAX_COST_USD_PER_RUN": "2.5",
        "AGENT_LOOP_MODEL": "openai/gpt-5",
    }


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("AGENT_LOOP_API_BASE", "https://user:sk-proxy-0123456789abcdefXYZ@llm.example.com/v1"),
        ("AGENT_LOOP_API_BASE", "https://llm.example.com/v1?api_key=sk-proxy-0123456789abcdef"),
        ("GITHUB_API_URL", "https://ghp_0123456789abcdefghij0123@ghe.example.com/api/v3"),
        ("AGENT_LOOP_BOT_LOGIN", "ghp_0123456789abcdefghij0123456789abcd"),  # pasted wrong
    ],
)
def test_a_credential_in_a_plain_setting_never_reaches_the_deploy_spec(
    name: str, value: str
) -> None:
    environ = {"AGENT_LOOP_REPO": "acme/widgets", name: value}
    with pytest.raises(ValueError, match=f"^{name} holds") as info:
        agent_env_vars(environ)
    assert "0123456789" not in str(info.value)
    assert "Flyte secret" in str(info.value)


def test_forwarded_values_never_look_like_secrets() -> None:
    from agent_loop_common.settings._secrets import credential_in

    environ = {
        "AGENT_LOOP_REPO": "acme/widgets",
        "AGENT_LOOP_API_BASE": "http://vllm.internal:8000/v1",
        "GITHUB_API_URL": "https://ghe.example.com/api/v3",
        "AGENT_LOOP_MODEL": "openai/qwen3",
        "GITHUB_TOKEN": "ghp_0123456789abcdefghij0123456789abcd",
        "OPENAI_API_KEY": "sk-0123456789abcdefghij",
    }
    forwarded = agent_env_vars(environ)
    assert forwarded["AGENT_LOOP_API_BASE"] == "http://vllm.internal:8000/v1"
    assert "GITHUB_TOKEN" not in forwarded
    assert "OPENAI_API_KEY" not in forwarded
    assert all(credential_in(value) is None for value in forwarded.values())


def test_an_app_id_injected_as_a_secret_is_not_also_an_env_var() -> None:
    environ = {"AGENT_LOOP_GITHUB_AUTH": "app", "GITHUB_APP_ID": "123", "AGENT_LOOP_REPO": "a/b"}
    assert agent_env_vars(environ) == {"AGENT_LOOP_REPO": "a/b"}
    assert agent_env_vars({"GITHUB_APP_ID": "123"}) == {}  # an App: its id is a secret
    explicit = {"AGENT_LOOP_GITHUB_AUTH": "token", "GITHUB_APP_ID": "123"}
    assert agent_env_vars(explicit) == {"GITHUB_APP_ID": "123"}


def test_app_credentials_are_wired_as_app_credentials_without_the_auth_variable() -> None:
    """Only the App id and the key path set: the deploy used to wire `github-token`."""
    environ = {
        "GITHUB_APP_ID": "123",
        "GITHUB_APP_PRIVATE_KEY_PATH": "/keys/app.pem",
        "AGENT_LOOP_MODEL_KEY_ENV": "none",
    }
    assert github_auth(environ) == "app"
    assert _pairs(environ) == [
        ("github-app-id", "GITHUB_APP_ID"),
        ("github-app-private-key", "GITHUB_APP_PRIVATE_KEY"),
    ]
    assert github_auth({}) == "token"


def _create_secrets(
    tmp_path: pathlib.Path, environ: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    """Run `infra/flyte/create-secrets` with `uv run ... flyte` recorded, never called."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    log = tmp_path / "flyte.log"
    real_uv = shutil.which("uv")
    assert real_uv is not None
    (fake / "uv").write_text(
        "#!/bin/sh\n"
        'if [ "$1 $2 $3" = "run --frozen flyte" ]; then\n'
        f'  shift 3; for a in "$@"; do printf "%s " "$a"; done >> {log}; echo >> {log}\n'
        '  for a in "$@"; do last=$a; done; cat "$last" >> '
        + str(log)
        + "; echo >> "
        + str(log)
        + "\n"
        "  exit 0\n"
        "fi\n"
        f'exec {real_uv} "$@"\n',
        encoding="utf-8",
    )
    (fake / "uv").chmod(0o755)
    drop = {"GITHUB_TOKEN", "GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY", "AGENT_LOOP_GITHUB_AUTH"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env |= {"PATH": f"{fake}{os.pathsep}{env['PATH']}", **environ}
    return subprocess.run(
        [str(ROOT / "infra/flyte/create-secrets"), *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_create_secrets_reads_the_app_key_from_the_key_path(tmp_path: pathlib.Path) -> None:
    key = tmp_path / "app.pem"
    key.write_text("-----BEGIN RSA PRIVATE KEY-----\nfake\n", encoding="utf-8")
    environ = {
        "GITHUB_APP_ID": "123",
        "GITHUB_APP_PRIVATE_KEY_PATH": str(key),
        "AGENT_LOOP_MODEL_KEY_ENV": "none",
    }
    shown = _create_secrets(tmp_path, environ, "--print")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "flyte create secret github-app-id --from-file <file holding $GITHUB_APP_ID>",
        f"flyte create secret github-app-private-key --from-file {key}",
    ]
    created = _create_secrets(tmp_path, environ)
    assert created.returncode == 0, created.stderr
    assert f"created secret github-app-private-key from {key}" in created.stdout
    log = (tmp_path / "flyte.log").read_text(encoding="utf-8")
    assert f"create secret github-app-private-key --from-file {key}" in log
    assert "BEGIN RSA PRIVATE KEY" in log  # the file itself became the secret
    missing = _create_secrets(tmp_path, environ | {"GITHUB_APP_PRIVATE_KEY_PATH": "/nope.pem"})
    assert missing.returncode == 1
    assert "GITHUB_APP_PRIVATE_KEY_PATH=/nope.pem is not a readable file" in missing.stderr


def test_schedules_come_from_settings_defaults_and_variables() -> None:
    assert agent_schedule("builder", {}) == "*/5 * * * *"
    assert agent_schedule("distiller", {}) == "*/10 * * * *"
    assert agent_schedule("reviewer", {"AGENT_LOOP_REVIEWER_SCHEDULE": "0  *  * * 1-5"}) == (
        "0 * * * 1-5"
    )
    with pytest.raises(ValueError, match="AGENT_LOOP_BUILDER_SCHEDULE: expected a 5-field cron"):
        agent_schedule("builder", {"AGENT_LOOP_BUILDER_SCHEDULE": "every 5 minutes"})


def test_the_key_override_is_passed_to_the_model_library() -> None:
    """litellm reads only the provider's variable: with `AGENT_LOOP_MODEL_KEY_ENV` the
    call gets the named variable's key, and `none` a placeholder (OpenAI's client
    refused a keyless local server with "Missing credentials")."""
    from agent_loop_common.model_keys import NO_KEY, key_override

    assert key_override({}) is None
    assert key_override({"AGENT_LOOP_MODEL_KEY_ENV": "none"}) == NO_KEY
    assert key_override({"AGENT_LOOP_MODEL_KEY_ENV": "VLLM_KEY", "VLLM_KEY": "k-1"}) == "k-1"
    assert key_override({"AGENT_LOOP_MODEL_KEY_ENV": "VLLM_KEY"}) is None
