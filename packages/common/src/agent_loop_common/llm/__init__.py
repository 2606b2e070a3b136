"""The model call used by every Agent in agent-loop (litellm, limits, usage, retries).

Importing this package does not import litellm (about 10 s): that happens on the first
real call, or in the background from `prefetch_litellm` once a tick has work. Typical use in a pipeline:

```python
usage = UsageMeter()                       # one per pipeline run, shared by every agent
call_llm = make_call_llm(
    model=settings.model, api_base=settings.api_base, usage=usage,
    budget=Budget.from_settings(settings), retry=ModelRetryPolicy.from_settings(settings),
    max_tokens=settings.max_output_tokens, timeout=settings.llm_timeout_seconds,
)
agent = Agent(model=settings.model, call_llm=call_llm, parallel_tool_calls=False, ...)
result = await agent.run.aio(task)         # a BudgetExceeded ends up in result.error
outcome = "budget_exceeded" if usage.exceeded else ...
record_usage = usage.as_dict()             # tokens (cached ones too), calls, cost, cost_known
```

The runtime wraps every run's `call_llm` (litellm's or an in-process model's) in
`masked_call_llm` (`AGENT_LOOP_KEEP_TURNS`), and `make_call_llm` marks prompt-cache
breakpoints where the model takes them (`AGENT_LOOP_PROMPT_CACHE`).
"""

from agent_loop_common.llm._cache import CACHE_CONTROL, with_cache_breakpoints
from agent_loop_common.llm._call import make_call_llm
from agent_loop_common.llm._convert import (
    CallTokens,
    from_litellm_response,
    parse_tool_arguments,
    to_litellm_messages,
    usage_tokens,
)
from agent_loop_common.llm._errors import (
    AgentRunFailed,
    BudgetExceeded,
    ErrorKind,
    LLMError,
    ModelCallFailed,
    ModelRequestsDisabled,
    ModelSettingNames,
    classify_error,
)
from agent_loop_common.llm._limits import (
    ALLOW_MODEL_REQUESTS_ENV,
    GENEROUS_MAX_TOKENS,
    UNKNOWN_MODEL_MAX_TOKENS,
    model_requests_allowed,
    resolve_max_tokens,
)
from agent_loop_common.llm._litellm import load_litellm, prefetch_litellm
from agent_loop_common.llm._masking import (
    MASK_AT_CHARS,
    MIN_MASKED_CHARS,
    mask_observations,
    masked_call_llm,
)
from agent_loop_common.llm._retry import ModelRetryPolicy
from agent_loop_common.llm._usage import Budget, ModelUsage, UsageMeter

__all__ = [
    "ALLOW_MODEL_REQUESTS_ENV",
    "CACHE_CONTROL",
    "GENEROUS_MAX_TOKENS",
    "MASK_AT_CHARS",
    "MIN_MASKED_CHARS",
    "UNKNOWN_MODEL_MAX_TOKENS",
    "AgentRunFailed",
    "Budget",
    "BudgetExceeded",
    "CallTokens",
    "ErrorKind",
    "LLMError",
    "ModelCallFailed",
    "ModelRequestsDisabled",
    "ModelRetryPolicy",
    "ModelSettingNames",
    "ModelUsage",
    "UsageMeter",
    "classify_error",
    "from_litellm_response",
    "load_litellm",
    "make_call_llm",
    "mask_observations",
    "masked_call_llm",
    "model_requests_allowed",
    "parse_tool_arguments",
    "prefetch_litellm",
    "resolve_max_tokens",
    "to_litellm_messages",
    "usage_tokens",
    "with_cache_breakpoints",
]
