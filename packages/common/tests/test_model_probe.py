"""Before a tick claims anything, one cheap request proves the model endpoint answers and
takes the key, and a failure names the setting to fix (issue 31).

Every endpoint here is a scripted model served on loopback (`serve_chat_model`) or a
port nothing listens on: no provider is ever called.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from agent_loop_common.llm import ErrorKind, ModelCallFailed, ModelSettingNames
from agent_loop_common.runtime import ModelUnavailable, forget_probes, probe_model, use_model
from agent_loop_common.settings import Settings
from agent_loop_testing import ScriptedModel, serve_chat_model


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("AGENT_LOOP_ALLOW_MODEL_REQUESTS", "1")  # every endpoint is local
    forget_probes()
    yield
    forget_probes()


def _settings(settings: Settings, **changes: object) -> Settings:
    """`settings` with another model (the verifier's too) and api base."""
    return settings.model_copy(update={"verifier_model": changes.get("model"), **changes})


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_endpoint_that_does_not_answer_names_the_api_base(settings: Settings) -> None:
    base = f"http://127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(ModelUnavailable) as caught:
        await probe_model(
            _settings(settings, model="openai/gpt-x", api_base=base),
            environ={"OPENAI_API_KEY": "sk-test"},
        )
    text = str(caught.value)
    assert text.startswith(f"AGENT_LOOP_API_BASE={base}: the model server does not answer")
    assert "ConnectError" in text


async def test_a_refused_key_names_its_variable_and_never_shows_the_key(
    settings: Settings,
) -> None:
    with serve_chat_model(ScriptedModel([]), key="sk-right") as base:
        config = _settings(settings, model="openai/scripted", api_base=base)
        with pytest.raises(ModelUnavailable) as caught:
            await probe_model(config, environ={"OPENAI_API_KEY": "sk-wrong-one"})
        assert str(caught.value).startswith("OPENAI_API_KEY: the key was refused")
        assert "401" in str(caught.value)
        assert "sk-wrong-one" not in str(caught.value)
        env = {"AGENT_LOOP_MODEL_KEY_ENV": "LOCAL_LLM_KEY", "LOCAL_LLM_KEY": "nope"}
        with pytest.raises(ModelUnavailable) as named:
            await probe_model(config, environ=env)
        assert str(named.value).startswith("LOCAL_LLM_KEY: the key was refused")
        await probe_model(config, environ={"OPENAI_API_KEY": "sk-right"})


async def test_an_answer_is_kept_for_the_process(settings: Settings) -> None:
    asked: list[str] = []

    def listing(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        return httpx.Response(200, json={"object": "list", "data": []})

    config = _settings(settings, model="openai/x", api_base="http://models.test/v1")
    times = iter([0.0, 10.0, 1_000.0])  # asked, kept, asked again after the TTL
    for _ in range(3):
        await probe_model(
            config,
            environ={"OPENAI_API_KEY": "sk-test"},
            transport=httpx.MockTransport(listing),
            clock=lambda: next(times),
        )
    assert asked == ["http://models.test/v1/models"] * 2


async def test_a_server_without_a_model_list_passes(settings: Settings) -> None:
    with serve_chat_model(ScriptedModel([])) as base:
        # `/v2/models` is not served (404): the server answers, the first call says more
        config = _settings(settings, model="openai/scripted", api_base=base[:-3] + "/v2")
        await probe_model(config, environ={"OPENAI_API_KEY": "sk-test"})


async def test_a_provider_without_a_listing_or_an_installed_model_is_not_asked(
    settings: Settings,
) -> None:
    # cohere has no listing in the table and no api base: nothing to ask (no network)
    await probe_model(_settings(settings, model="cohere/command"), environ={})
    closed = _settings(settings, model="openai/x", api_base=f"http://127.0.0.1:{_closed_port()}")
    with use_model(lambda *_: ScriptedModel([])):
        await probe_model(closed)
    off = {"AGENT_LOOP_ALLOW_MODEL_REQUESTS": "0", "OPENAI_API_KEY": "sk-test"}
    await probe_model(closed, environ=off)  # requests are off: the call itself would say so


@pytest.mark.parametrize(
    ("kind", "label", "detail", "fix"),
    [
        (ErrorKind.AUTH, "AuthenticationError", "bad key", "check OPENAI_API_KEY"),
        (ErrorKind.NOT_FOUND, "NotFoundError", "no such model", "Check AGENT_LOOP_MODEL='openai/x' and AGENT_LOOP_API_BASE=http://h:1/v1"),
        (ErrorKind.TRANSIENT, "InternalServerError", "Connection error.", "Check AGENT_LOOP_API_BASE=http://h:1/v1: is its server running"),
    ],
)  # fmt: skip
def test_a_failed_model_call_names_the_setting_to_fix(
    kind: ErrorKind, label: str, detail: str, fix: str
) -> None:
    cause = type(label, (Exception,), {})(detail)
    names = ModelSettingNames(key_variable="OPENAI_API_KEY", api_base="http://h:1/v1")
    assert fix in str(ModelCallFailed("openai/x", kind, 4, cause, settings=names))


def test_a_call_refused_without_a_key_names_the_key_setting_and_the_api_base() -> None:
    """`AGENT_LOOP_MODEL_KEY_ENV=none` and an `AGENT_LOOP_API_BASE` whose server wants a
    key (or is not the model server at all: GitHub's API answers 401 there, and 404 to
    the probe's model list, which passes): the failure names both settings, not "the
    model's credentials"."""
    cause = type("AuthenticationError", (Exception,), {})("Bad credentials")
    names = ModelSettingNames(key_variable="", api_base="http://127.0.0.1:8765/v1")
    text = str(ModelCallFailed("openai/x", ErrorKind.AUTH, 1, cause, settings=names))
    assert "AGENT_LOOP_MODEL_KEY_ENV" in text
    assert "AGENT_LOOP_API_BASE=http://127.0.0.1:8765/v1" in text


@pytest.mark.parametrize("status", [404, 405, 501])
async def test_a_server_that_does_not_list_models_in_any_way_passes(
    settings: Settings, status: int
) -> None:
    """An OpenAI-compatible server may have no `GET /models` at all, answering 404, 405
    (the route exists for another method) or 501: it answered, so the probe must not
    refuse a working endpoint."""
    config = _settings(settings, model="openai/x", api_base="http://models.test/v1")
    await probe_model(
        config,
        environ={"AGENT_LOOP_MODEL_KEY_ENV": "none"},
        transport=httpx.MockTransport(lambda _: httpx.Response(status, json={"detail": "no"})),
    )
