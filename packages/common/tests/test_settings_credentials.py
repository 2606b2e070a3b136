"""A credential written into a URL setting is refused, never echoed (issue 16).

`AGENT_LOOP_API_BASE` is a plain setting: it travels as a plain environment variable
and into the deploy spec. A proxy key written into it (`https://user:key@host/v1`,
`?api_key=...`) would leak there, so settings refuse it at load time and say where the
key belongs instead.
"""

from __future__ import annotations

import pytest

from agent_loop_common.settings import ConfigError, Settings, env_var_name, load_settings
from agent_loop_common.settings._secrets import credential_in

KEY = "sk-proxy-0123456789abcdefXYZ"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in Settings.model_fields:
        monkeypatch.delenv(env_var_name(name), raising=False)
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgets")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    return monkeypatch


@pytest.mark.parametrize(
    "url",
    [
        f"https://user:{KEY}@llm-proxy.example.com/v1",
        f"https://{KEY}@llm-proxy.example.com/v1",
        f"https://llm-proxy.example.com/v1?key={KEY}",
        f"https://llm-proxy.example.com/v1?api-version=1&api_key={KEY}",
        f"http://localhost:8000/v1?token={KEY}",
        f"https://llm-proxy.example.com/v1?X-Api-Key={KEY}",
        f"https://llm-proxy.example.com/{KEY}/v1",
    ],
)
def test_an_api_base_with_a_credential_is_refused_at_load(
    env: pytest.MonkeyPatch, url: str
) -> None:
    env.setenv("AGENT_LOOP_API_BASE", url)
    with pytest.raises(ConfigError) as info:
        load_settings()
    message = str(info.value)
    assert "AGENT_LOOP_API_BASE" in message
    assert "put the key in a secret" in message
    assert "OPENAI_API_KEY" in message
    assert KEY not in message
    assert "0123456789" not in message


def test_a_github_api_url_with_a_token_is_refused(env: pytest.MonkeyPatch) -> None:
    env.setenv(
        "GITHUB_API_URL", "https://x-access-token:ghs_abcdefghijklmnopqrstuv@ghe.example.com/api/v3"
    )
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "GITHUB_API_URL" in str(info.value)
    assert "GITHUB_TOKEN" in str(info.value)
    assert "abcdefghij" not in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:8000/v1",
        "https://llm-proxy.example.com/v1?api-version=2024-06-01",
        "https://my-resource.openai.azure.com/openai/deployments/skill-model",
    ],
)
def test_plain_urls_still_load(env: pytest.MonkeyPatch, url: str) -> None:
    env.setenv("AGENT_LOOP_API_BASE", url)
    assert load_settings().api_base == url


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ("https://u:p@h/", "a user name or password in the URL (user:key@host)"),
        ("https://h/?access_token=abc", "the URL query parameter 'access_token'"),
        ("https://h/?sig=abc", "the URL query parameter 'sig'"),
        ("ghp_" + "a" * 36, "an API token"),
        ("github_pat_" + "a" * 30, "an API token"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMII", "a private key"),
        ("acme/widgets", None),
        ("anthropic/claude-sonnet-4-6", None),
        ("**/*.pem,deploy/**", None),
        ("https://api.github.com", None),
        ("desk-1234567890abcdefghij", None),
    ],
)
def test_what_counts_as_a_credential(value: str, found: str | None) -> None:
    assert credential_in(value) == found
