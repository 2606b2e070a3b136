"""The model call through real litellm, offline.

Three offline paths reach litellm's real request handling with no network:
- `mock_response` (litellm answers itself),
- a registered `CustomLLM` provider (`scripted/<name>`) that records each request and
  replies from a script,
- a fake provider API served on loopback (Anthropic Messages and OpenAI chat formats),
  which exercises litellm's provider translation and HTTP error mapping. Those tests opt
  in with `AGENT_LOOP_ALLOW_MODEL_REQUESTS=1`; the network guard still keeps every
  connection on loopback.

This module imports litellm (several seconds, once per session).
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import litellm  # noqa: TID251 - this test drives the litellm path on purpose
import pytest
from flyte.ai.agents import Agent
from litellm import ModelResponse  # noqa: TID251
from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER  # noqa: TID251
from litellm.llms.custom_llm import CustomLLM  # noqa: TID251

from agent_loop_common.llm import (
    UNKNOWN_MODEL_MAX_TOKENS,
    Budget,
    BudgetExceeded,
    ErrorKind,
    ModelCallFailed,
    ModelRequestsDisabled,
    ModelRetryPolicy,
    UsageMeter,
    make_call_llm,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
]


def model_response(
    content: str | None = None,
    tool_calls: list[tuple[str, str, dict[str, Any]]] = (),  # type: ignore[assignment]
    *,
    prompt_tokens: int = 30,
    completion_tokens: int = 10,
) -> ModelResponse:
    """A litellm response as a provider would return it (`model=None`: unpriced)."""
    calls = [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for cid, name, args in tool_calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return ModelResponse(
        choices=[{"message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        usage={
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    )


Reply = ModelResponse | Exception | Callable[[list[dict[str, Any]]], ModelResponse]


@dataclass
class ScriptedProvider(CustomLLM):
    """An in-process litellm provider: records requests, answers from a script."""

    script: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__()

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:  # type: ignore[override]
        self.requests.append(
            {
                "model": kwargs["model"],
                "messages": kwargs["messages"],
                "optional_params": dict(kwargs["optional_params"]),
            }
        )
        if not self.script:
            raise AssertionError("ScriptedProvider: unexpected extra model call")
        reply = self.script.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if callable(reply) and not isinstance(reply, ModelResponse):
            return reply(kwargs["messages"])
        return reply


@pytest.fixture(autouse=True)
async def _stop_litellm_logging_worker() -> AsyncIterator[None]:
    """litellm starts a logging task on the running loop; each test has its own loop."""
    yield
    await GLOBAL_LOGGING_WORKER.flush()
    await GLOBAL_LOGGING_WORKER.stop()


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    scripted = ScriptedProvider()
    saved = list(litellm.custom_provider_map)
    litellm.custom_provider_map = [
        *saved,
        {"provider": "scripted", "custom_handler": scripted},
    ]
    try:
        yield scripted
    finally:
        litellm.custom_provider_map = saved


@dataclass
class FakeProviderAPI:
    """A provider HTTP API on loopback: scripted (status, headers, body) replies."""

    base_url: str
    script: list[tuple[int, dict[str, str], dict[str, Any]]]
    requests: list[tuple[str, dict[str, Any]]]


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProviderAPI]:
    script: list[tuple[int, dict[str, str], dict[str, Any]]] = []
    requests: list[tuple[str, dict[str, Any]]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            requests.append((self.path, body))
            status, headers, reply = (
                script.pop(0) if script else (500, {}, {"error": "unexpected request"})
            )
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    monkeypatch.setenv("AGENT_LOOP_ALLOW_MODEL_REQUESTS", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    try:
        yield FakeProviderAPI(f"http://127.0.0.1:{server.server_port}", script, requests)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class InstantSleep:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def anthropic_tool_use(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1000, "output_tokens": 50},
    }


# ---------------------------------------------------------------- mock_response


async def test_mock_response_runs_the_real_path_and_prices_a_known_model() -> None:
    usage = UsageMeter()
    call = make_call_llm(
        model="anthropic/claude-sonnet-4-5", usage=usage, extra_params={"mock_response": "hello"}
    )
    message = await call(
        "anthropic/claude-sonnet-4-5", "sys", [{"role": "user", "content": "hi"}], None
    )
    assert message.content == "hello"
    assert message.tool_calls == []
    assert (usage.llm_calls, usage.prompt_tokens, usage.completion_tokens) == (1, 10, 20)
    assert usage.cost_usd > 0
    assert usage.cost_known


async def test_mock_response_with_tool_calls_converts_back() -> None:
    usage = UsageMeter()
    scripted = model_response(None, [("toolu_9", "add", {"a": 2, "b": 3})])
    call = make_call_llm(
        model="anthropic/claude-sonnet-4-5", usage=usage, extra_params={"mock_response": scripted}
    )
    message = await call(
        "anthropic/claude-sonnet-4-5", "sys", [{"role": "user", "content": "2+3"}], TOOLS
    )
    assert message.tool_calls == [{"id": "toolu_9", "name": "add", "arguments": {"a": 2, "b": 3}}]
    assert message.content == ""


async def test_mock_exception_is_classified_and_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    sleep = InstantSleep()
    usage = UsageMeter()
    call = make_call_llm(
        model="anthropic/claude-sonnet-4-5",
        usage=usage,
        retry=ModelRetryPolicy(max_attempts=2, sleep=sleep, jitter=lambda: 1.0),
        extra_params={"mock_response": "litellm.RateLimitError"},
    )
    with pytest.raises(ModelCallFailed, match="still failing after 2 attempts") as failed:
        await call("anthropic/claude-sonnet-4-5", "sys", [{"role": "user", "content": "hi"}], None)
    assert failed.value.kind is ErrorKind.TRANSIENT
    assert sleep.waits == [2.0]
    assert (usage.retries, usage.llm_calls) == (1, 0)


# ---------------------------------------------------------------- CustomLLM provider


async def test_request_shape_sent_to_the_provider(provider: ScriptedProvider) -> None:
    provider.script.append(model_response(None, [("c1", "add", {"a": 1, "b": 2})]))
    usage = UsageMeter()
    call = make_call_llm(model="scripted/m", usage=usage)
    history = [
        {"role": "user", "content": "add"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c0", "type": "function", "function": {"name": "add", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c0", "name": "add", "content": "missing a"},
    ]
    message = await call("scripted/m", "you add", history, TOOLS)

    sent = provider.requests[0]
    assert sent["model"] == "m"
    assert sent["messages"][0] == {"role": "system", "content": "you add"}
    assert sent["messages"][2].get("content") is None  # litellm drops a None content
    assert sent["messages"][3]["tool_call_id"] == "c0"
    params = sent["optional_params"]
    assert params["tools"] == TOOLS
    assert params["tool_choice"] == "auto"
    assert params["parallel_tool_calls"] is False
    assert params["max_tokens"] == UNKNOWN_MODEL_MAX_TOKENS
    assert params["max_retries"] == 0
    assert message.tool_calls == [{"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}}]
    assert (usage.llm_calls, usage.total_tokens, usage.unpriced_calls) == (1, 40, 1)
    assert not usage.cost_known


async def test_no_tools_means_no_tool_params_and_parallel_can_be_left_on(
    provider: ScriptedProvider,
) -> None:
    provider.script += [model_response("plain"), model_response("with tools")]
    plain = make_call_llm(model="scripted/m", usage=UsageMeter(), max_tokens=1234)
    assert (
        await plain("scripted/m", "s", [{"role": "user", "content": "x"}], None)
    ).content == "plain"
    params = provider.requests[0]["optional_params"]
    assert "tools" not in params
    assert "tool_choice" not in params
    assert "parallel_tool_calls" not in params
    assert params["max_tokens"] == 1234

    parallel = make_call_llm(model="scripted/m", usage=UsageMeter(), parallel_tool_calls=True)
    await parallel("scripted/m", "s", [{"role": "user", "content": "x"}], TOOLS)
    assert "parallel_tool_calls" not in provider.requests[1]["optional_params"]


async def test_budget_stops_before_the_call_that_would_exceed_it(
    provider: ScriptedProvider,
) -> None:
    provider.script += [model_response("one"), model_response("two"), model_response("three")]
    usage = UsageMeter()
    call = make_call_llm(model="scripted/m", usage=usage, budget=Budget(max_tokens=70))
    user = [{"role": "user", "content": "x"}]
    await call("scripted/m", "s", user, None)
    await call("scripted/m", "s", user, None)  # starts at 40 < 70, ends at 80
    with pytest.raises(BudgetExceeded, match=r"run budget exceeded: 80 tokens used, limit 70"):
        await call("scripted/m", "s", user, None)
    assert usage.exceeded == "80 tokens used, limit 70 (AGENT_LOOP_MAX_TOKENS_PER_RUN)"
    assert len(provider.requests) == 2
    with pytest.raises(BudgetExceeded):  # stays stopped
        await call("scripted/m", "s", user, None)


async def test_agent_model_field_does_not_override_the_bound_model(
    provider: ScriptedProvider,
) -> None:
    provider.script.append(model_response("ok"))
    call = make_call_llm(model="scripted/right", usage=UsageMeter())
    await call("claude-haiku-4-5", "s", [{"role": "user", "content": "x"}], None)
    assert provider.requests[0]["model"] == "right"


async def test_requests_disabled_refuses_a_real_provider(
    fake_api: FakeProviderAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LOOP_ALLOW_MODEL_REQUESTS", "0")
    call = make_call_llm(
        model="anthropic/claude-sonnet-4-5", api_base=fake_api.base_url, usage=UsageMeter()
    )
    with pytest.raises(
        ModelRequestsDisabled, match="refusing to call 'anthropic/claude-sonnet-4-5'"
    ):
        await call("anthropic/claude-sonnet-4-5", "s", [{"role": "user", "content": "x"}], None)
    assert fake_api.requests == []


# ---------------------------------------------------------------- a real Agent loop


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_flyte_agent_loop_over_litellm(provider: ScriptedProvider) -> None:
    def answer(messages: list[dict[str, Any]]) -> ModelResponse:
        tool_message = messages[-1]
        assert tool_message["role"] == "tool"
        assert tool_message["tool_call_id"] == "call_add_1"
        return model_response(f"The sum is {tool_message['content']}.")

    provider.script += [model_response(None, [("call_add_1", "add", {"a": 2, "b": 3})]), answer]
    usage = UsageMeter()
    agent = Agent(
        name="adder",
        instructions="Use the add tool.",
        model="scripted/adder",
        tools=[add],
        max_turns=4,
        parallel_tool_calls=False,
        call_llm=make_call_llm(model="scripted/adder", usage=usage, budget=Budget(max_tokens=1000)),
    )
    result = await agent.run.aio("What is 2 + 3?")
    assert result.error == ""
    assert result.summary == "The sum is 5."
    assert usage.llm_calls == 2
    first = provider.requests[0]
    assert first["optional_params"]["tools"][0]["function"]["name"] == "add"
    assert first["optional_params"]["parallel_tool_calls"] is False
    assert first["messages"][0]["role"] == "system"
    assert first["messages"][1] == {"role": "user", "content": "What is 2 + 3?"}


async def test_flyte_agent_loop_stops_on_budget(provider: ScriptedProvider) -> None:
    provider.script += [
        model_response(None, [(f"c{n}", "add", {"a": n, "b": 1})], prompt_tokens=400)
        for n in range(5)
    ]
    usage = UsageMeter()
    agent = Agent(
        name="spender",
        model="scripted/spender",
        tools=[add],
        max_turns=10,
        call_llm=make_call_llm(
            model="scripted/spender", usage=usage, budget=Budget(max_tokens=1000)
        ),
    )
    result = await agent.run.aio("keep adding")
    assert "run budget exceeded: 1230 tokens used, limit 1000" in result.error
    assert usage.exceeded is not None
    assert usage.llm_calls == 3


# ---------------------------------------------------------------- provider APIs on loopback


async def test_anthropic_request_disables_parallel_tool_use_and_clamps_max_tokens(
    fake_api: FakeProviderAPI,
) -> None:
    fake_api.script.append((200, {}, anthropic_tool_use("toolu_1", "add", {"a": 1, "b": 2})))
    usage = UsageMeter()
    call = make_call_llm(
        model="anthropic/claude-sonnet-4-5",
        api_base=fake_api.base_url,
        usage=usage,
        max_tokens=500_000,
    )
    message = await call(
        "anthropic/claude-sonnet-4-5", "sys", [{"role": "user", "content": "1+2"}], TOOLS
    )
    path, body = fake_api.requests[0]
    assert path == "/v1/messages"
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert body["max_tokens"] == 64_000  # the model's published output limit
    # Prompt caching is on by default: the system text ends the stable prefix.
    assert body["system"] == [
        {"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["tools"][0]["name"] == "add"
    assert message.tool_calls == [{"id": "toolu_1", "name": "add", "arguments": {"a": 1, "b": 2}}]
    assert (usage.prompt_tokens, usage.completion_tokens) == (1000, 50)
    assert usage.cost_usd == pytest.approx(1000 * 3e-6 + 50 * 15e-6)


async def test_openai_compatible_server_through_api_base(fake_api: FakeProviderAPI) -> None:
    reply = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "local-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "hi there"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }
    fake_api.script.append((200, {}, reply))
    usage = UsageMeter()
    call = make_call_llm(
        model="openai/local-model", api_base=f"{fake_api.base_url}/v1", usage=usage
    )
    message = await call("openai/local-model", "sys", [{"role": "user", "content": "hi"}], TOOLS)
    path, body = fake_api.requests[0]
    assert path == "/v1/chat/completions"
    assert body["model"] == "local-model"
    assert body["parallel_tool_calls"] is False
    assert body["max_tokens"] == UNKNOWN_MODEL_MAX_TOKENS
    assert message.content == "hi there"
    assert (usage.total_tokens, usage.unpriced_calls) == (15, 1)


async def test_transient_errors_are_retried_with_capped_backoff(fake_api: FakeProviderAPI) -> None:
    fake_api.script += [
        (429, {"retry-after": "7"}, anthropic_error("rate_limit_error", "slow down")),
        (529, {}, anthropic_error("overloaded_error", "Overloaded")),
        (200, {}, anthropic_tool_use("toolu_2", "add", {"a": 5, "b": 5})),
    ]
    sleep = InstantSleep()
    usage = UsageMeter()
    call = make_call_llm(
        model="anthropic/claude-sonnet-4-5",
        api_base=fake_api.base_url,
        usage=usage,
        retry=ModelRetryPolicy(
            max_attempts=4, base_delay=1.0, max_delay=5.0, sleep=sleep, jitter=lambda: 1.0
        ),
    )
    message = await call(
        "anthropic/claude-sonnet-4-5", "s", [{"role": "user", "content": "x"}], TOOLS
    )
    assert message.tool_calls[0]["id"] == "toolu_2"
    assert len(fake_api.requests) == 3
    assert sleep.waits == [5.0, 2.0]  # Retry-After 7 capped at 5; then 1 * 2
    assert (usage.retries, usage.llm_calls) == (2, 1)


@pytest.mark.parametrize(
    ("status", "error", "kind"),
    [
        (401, anthropic_error("authentication_error", "invalid x-api-key"), ErrorKind.AUTH),
        (
            400,
            anthropic_error(
                "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"
            ),
            ErrorKind.CONTEXT_WINDOW,
        ),
        (
            400,
            anthropic_error("invalid_request_error", "tools.0: bad schema"),
            ErrorKind.BAD_REQUEST,
        ),
    ],
)
async def test_permanent_errors_are_not_retried(
    fake_api: FakeProviderAPI, status: int, error: dict[str, Any], kind: ErrorKind
) -> None:
    fake_api.script.append((status, {}, error))
    sleep = InstantSleep()
    call = make_call_llm(
        model="anthropic/claude-sonnet-4-5",
        api_base=fake_api.base_url,
        usage=UsageMeter(),
        retry=ModelRetryPolicy(sleep=sleep),
    )
    with pytest.raises(ModelCallFailed, match=f"{kind.value} error, not retried") as failed:
        await call("anthropic/claude-sonnet-4-5", "s", [{"role": "user", "content": "x"}], None)
    assert failed.value.kind is kind
    assert len(fake_api.requests) == 1
    assert sleep.waits == []


async def test_retries_run_out(fake_api: FakeProviderAPI) -> None:
    fake_api.script += [(503, {}, {"error": {"message": "busy"}})] * 3
    sleep = InstantSleep()
    call = make_call_llm(
        model="openai/local-model",
        api_base=f"{fake_api.base_url}/v1",
        usage=UsageMeter(),
        retry=ModelRetryPolicy(max_attempts=3, sleep=sleep, jitter=lambda: 1.0),
    )
    with pytest.raises(ModelCallFailed, match="still failing after 3 attempts") as failed:
        await call("openai/local-model", "s", [{"role": "user", "content": "x"}], None)
    assert failed.value.attempts == 3
    assert len(fake_api.requests) == 3
    assert sleep.waits == [2.0, 4.0]
