"""The pure parts of the model call: classification, back-off, budgets, conversion.

None of these tests imports litellm; the litellm path itself is in test_llm_litellm.py.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Sequence
from types import SimpleNamespace

import httpx
import pytest
from flyte.ai.agents import LLMMessage

from agent_loop_common.llm import (
    GENEROUS_MAX_TOKENS,
    UNKNOWN_MODEL_MAX_TOKENS,
    Budget,
    BudgetExceeded,
    ErrorKind,
    ModelCallFailed,
    ModelRequestsDisabled,
    ModelRetryPolicy,
    UsageMeter,
    classify_error,
    from_litellm_response,
    model_requests_allowed,
    parse_tool_arguments,
    resolve_max_tokens,
    to_litellm_messages,
)
from agent_loop_common.llm._retry import retry_after_seconds


class _StatusError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


# Same names as litellm/openai classes: classification goes by name along the MRO.
class BadRequestError(Exception):
    status_code = 400


class ContextWindowExceededError(BadRequestError):
    pass


class RateLimitError(Exception):
    status_code = 429


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (RateLimitError("slow down"), ErrorKind.TRANSIENT),
        (ContextWindowExceededError("too long"), ErrorKind.CONTEXT_WINDOW),
        (BadRequestError("bad"), ErrorKind.BAD_REQUEST),
        (_StatusError(500), ErrorKind.TRANSIENT),
        (_StatusError(529), ErrorKind.TRANSIENT),
        (_StatusError(408), ErrorKind.TRANSIENT),
        (_StatusError(401), ErrorKind.AUTH),
        (_StatusError(403), ErrorKind.AUTH),
        (_StatusError(404), ErrorKind.NOT_FOUND),
        (_StatusError(422), ErrorKind.BAD_REQUEST),
        (TimeoutError(), ErrorKind.TRANSIENT),
        (ConnectionResetError(), ErrorKind.TRANSIENT),
        (httpx.ReadTimeout("read timed out"), ErrorKind.TRANSIENT),
        (httpx.ConnectError("refused"), ErrorKind.TRANSIENT),
        (KeyError("bug"), ErrorKind.UNKNOWN),
        (BudgetExceeded("x"), ErrorKind.UNKNOWN),
        (ModelRequestsDisabled("m"), ErrorKind.UNKNOWN),
    ],
)
def test_classify_error(exc: BaseException, kind: ErrorKind) -> None:
    assert classify_error(exc) is kind


def test_model_call_failed_message_says_why_and_keeps_the_kind() -> None:
    transient = ModelCallFailed("m", ErrorKind.TRANSIENT, 4, RateLimitError("slow down"))
    assert str(transient) == (
        "model call to 'm' failed (still failing after 4 attempts): RateLimitError: slow down"
    )
    auth = ModelCallFailed("m", ErrorKind.AUTH, 1, _StatusError(401))
    assert "auth error, not retried" in str(auth)
    assert (auth.kind, auth.attempts, auth.model) == (ErrorKind.AUTH, 1, "m")


def test_requests_disabled_error_names_the_model_and_the_way_out() -> None:
    message = str(ModelRequestsDisabled("anthropic/claude-sonnet-4-6"))
    assert "'anthropic/claude-sonnet-4-6'" in message
    assert "AGENT_LOOP_ALLOW_MODEL_REQUESTS=0" in message
    assert "mock_response" in message


@pytest.mark.parametrize(
    ("requested", "limit", "expected"),
    [
        (None, 64_000, GENEROUS_MAX_TOKENS),
        (None, 16_384, 16_384),
        (None, None, UNKNOWN_MODEL_MAX_TOKENS),
        (100_000, 64_000, 64_000),
        (2_000, 64_000, 2_000),
        (50_000, None, 50_000),
    ],
)
def test_resolve_max_tokens(requested: int | None, limit: int | None, expected: int) -> None:
    assert resolve_max_tokens(requested, limit) == expected


def test_resolve_max_tokens_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        resolve_max_tokens(0, 1000)


def test_backoff_doubles_jitters_and_is_capped() -> None:
    policy = ModelRetryPolicy(base_delay=2.0, max_delay=10.0, jitter=lambda: 1.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5)] == [2.0, 4.0, 8.0, 10.0, 10.0]
    low = ModelRetryPolicy(base_delay=2.0, max_delay=10.0, jitter=lambda: 0.0)
    assert [low.delay(n) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]


def test_backoff_honours_retry_after_up_to_the_cap() -> None:
    def with_header(value: str) -> Exception:
        exc = RateLimitError("slow")
        exc.response = httpx.Response(429, headers={"Retry-After": value})  # type: ignore[attr-defined]
        return exc

    policy = ModelRetryPolicy(base_delay=1.0, max_delay=30.0, jitter=lambda: 1.0)
    assert policy.delay(1, with_header("7")) == 7.0
    assert policy.delay(1, with_header("600")) == 30.0
    assert policy.delay(1, with_header("Wed, 21 Oct 2015 07:28:00 GMT")) == 1.0
    litellm_style = RateLimitError("slow")
    litellm_style.litellm_response_headers = httpx.Headers({"retry-after": "3"})  # type: ignore[attr-defined]
    assert retry_after_seconds(litellm_style) == 3.0
    assert retry_after_seconds(RateLimitError("no headers")) is None


def test_retry_policy_validates() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        ModelRetryPolicy(max_attempts=0)


def test_usage_meter_accumulates_per_model_and_flags_unpriced_calls() -> None:
    usage = UsageMeter()
    usage.record("a", prompt_tokens=100, completion_tokens=10, cost_usd=0.5)
    usage.record("b", prompt_tokens=50, completion_tokens=5, cost_usd=None)
    usage.record(
        "a",
        prompt_tokens=100,
        completion_tokens=10,
        cost_usd=0.25,
        cache_read_tokens=80,
        cache_write_tokens=500,  # more than the prompt's rest: clamped to the 20 left
    )
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (250, 25, 275)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (80, 20)
    assert (usage.llm_calls, usage.cost_usd, usage.unpriced_calls) == (3, 0.75, 1)
    assert usage.cost_known is False
    figures = usage.as_dict()
    assert figures["by_model"] == {
        "a": {
            "prompt_tokens": 200,
            "completion_tokens": 20,
            "cache_read_tokens": 80,
            "cache_write_tokens": 20,
            "llm_calls": 2,
            "cost_usd": 0.75,
        },
        "b": {
            "prompt_tokens": 50,
            "completion_tokens": 5,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
            "llm_calls": 1,
            "cost_usd": 0.0,
        },
    }
    assert json.loads(json.dumps(figures)) == figures


def test_budget_reasons_name_the_limit_and_the_variable() -> None:
    usage = UsageMeter()
    budget = Budget(max_tokens=1_000, max_cost_usd=1.0)
    assert budget.exceeded_by(usage) is None
    usage.record("m", prompt_tokens=900, completion_tokens=99, cost_usd=0.1)
    assert budget.exceeded_by(usage) is None
    usage.record("m", prompt_tokens=1, completion_tokens=0, cost_usd=0.0)
    assert budget.exceeded_by(usage) == (
        "1000 tokens used, limit 1000 (AGENT_LOOP_MAX_TOKENS_PER_RUN)"
    )
    pricey = UsageMeter()
    pricey.record("m", prompt_tokens=1, completion_tokens=1, cost_usd=1.5)
    reason = budget.exceeded_by(pricey)
    assert reason == "estimated cost $1.5000, limit $1.00 (AGENT_LOOP_MAX_COST_USD_PER_RUN)"
    assert Budget().exceeded_by(pricey) is None
    with pytest.raises(ValueError, match="max_tokens"):
        Budget(max_tokens=0)


def test_model_requests_switch() -> None:
    assert model_requests_allowed({}) is True
    assert model_requests_allowed({"AGENT_LOOP_ALLOW_MODEL_REQUESTS": "1"}) is True
    assert model_requests_allowed({"AGENT_LOOP_ALLOW_MODEL_REQUESTS": "0"}) is False
    # The pytest plugin switches real requests off for every test.
    assert model_requests_allowed() is False


def test_agent_messages_become_a_litellm_request_without_sharing_dicts() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
    messages = [
        {"role": "user", "content": "do it"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    out = to_litellm_messages("be strict", messages)
    assert out == [
        {"role": "system", "content": "be strict"},
        {"role": "user", "content": "do it"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    out[2]["tool_calls"][0]["function"]["name"] = "changed"
    assert call["function"]["name"] == "f"
    assert messages[1]["content"] == ""


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        ('{"path": "a.py", "n": 2}', {"path": "a.py", "n": 2}),
        ({"already": "a dict"}, {"already": "a dict"}),
        ("", {}),
        (None, {}),
        ('{"truncated": ', {"_raw": '{"truncated": '}),
        ("[1, 2]", {"_raw": [1, 2]}),
    ],
)
def test_parse_tool_arguments(raw: object, parsed: dict[str, object]) -> None:
    assert parse_tool_arguments(raw) == parsed


def _response(content: object, tool_calls: Sequence[object] | None) -> SimpleNamespace:
    message = SimpleNamespace(content=content, tool_calls=tool_calls)
    return SimpleNamespace(choices=[SimpleNamespace(message=message, finish_reason="stop")])


def test_response_becomes_an_llm_message_with_ids_names_and_dict_arguments() -> None:
    calls: list[object] = [
        SimpleNamespace(id="toolu_1", function=SimpleNamespace(name="read", arguments='{"p": 1}')),
        SimpleNamespace(id=None, function=SimpleNamespace(name="list", arguments=None)),
    ]
    response = _response(None, calls)
    message = from_litellm_response(response)
    assert isinstance(message, LLMMessage)
    assert message.content == ""
    assert message.raw is response
    assert message.tool_calls[0] == {"id": "toolu_1", "name": "read", "arguments": {"p": 1}}
    assert message.tool_calls[1]["id"].startswith("call_")
    assert message.tool_calls[1]["arguments"] == {}
    assert from_litellm_response(_response("final", None)).tool_calls == []


def test_malformed_responses_fail_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match="no choices"):
        from_litellm_response(SimpleNamespace(choices=[]))
    nameless = [SimpleNamespace(id="x", function=SimpleNamespace(name="", arguments="{}"))]
    with pytest.raises(ValueError, match="without a function name"):
        from_litellm_response(_response(None, nameless))


async def test_disabled_model_requests_refuse_before_importing_litellm() -> None:
    # Runs in a fresh interpreter: this process may already have litellm imported.
    code = (
        "import asyncio, sys\n"
        "from agent_loop_common.llm import make_call_llm, UsageMeter, ModelRequestsDisabled\n"
        "assert 'litellm' not in sys.modules, 'importing agent_loop_common.llm imported litellm'\n"
        "call = make_call_llm(model='anthropic/claude-sonnet-4-6', usage=UsageMeter())\n"
        "try:\n"
        "    asyncio.run(call('anthropic/claude-sonnet-4-6', 's', [], None))\n"
        "except ModelRequestsDisabled as exc:\n"
        "    print('refused:', exc)\n"
        "assert 'litellm' not in sys.modules, 'the refusal imported litellm'\n"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        env={"AGENT_LOOP_ALLOW_MODEL_REQUESTS": "0", "PATH": ""},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert "refused: model requests are disabled" in out.decode()
    assert "'anthropic/claude-sonnet-4-6'" in out.decode()


def test_ensure_within_stops_once_and_stays_stopped() -> None:
    usage = UsageMeter()
    budget = Budget(max_cost_usd=1.0)
    usage.ensure_within(budget)
    usage.ensure_within(None)
    usage.record("m", prompt_tokens=1, completion_tokens=1, cost_usd=1.0)
    with pytest.raises(BudgetExceeded, match=r"estimated cost \$1.0000, limit \$1.00"):
        usage.ensure_within(budget)
    assert usage.exceeded is not None
    with pytest.raises(BudgetExceeded):
        usage.ensure_within(None)  # a stopped run stays stopped whatever budget is passed
