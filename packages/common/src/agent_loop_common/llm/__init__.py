"""The model call used by every Agent in agent-loop (litellm, limits, usage, retries).

Importing this package does not import litellm (about 10 s): that happens on the first
real call. Typical use in a pipeline:

```python
usage = UsageMeter()
call_llm = make_call_llm(model=settings.model, usage=usage, budget=settings.budget())
agent = Agent(model=settings.model, call_llm=call_llm, ...)
result = await agent.run.aio(task)
record.usage = usage.as_dict()          # and outcome budget_exceeded if usage.exceeded
```
"""

from agent_loop_common.llm._call import make_call_llm
from agent_loop_common.llm._convert import (
    from_litellm_response,
    parse_tool_arguments,
    to_litellm_messages,
)
from agent_loop_common.llm._errors import (
    BudgetExceeded,
    ErrorKind,
    LLMError,
    ModelCallFailed,
    ModelRequestsDisabled,
    classify_error,
)
from agent_loop_common.llm._limits import (
    ALLOW_MODEL_REQUESTS_ENV,
    GENEROUS_MAX_TOKENS,
    UNKNOWN_MODEL_MAX_TOKENS,
    model_requests_allowed,
    resolve_max_tokens,
)
from agent_loop_common.llm._retry import RetryPolicy
from agent_loop_common.llm._usage import Budget, ModelUsage, UsageMeter

__all__ = [
    "ALLOW_MODEL_REQUESTS_ENV",
    "GENEROUS_MAX_TOKENS",
    "UNKNOWN_MODEL_MAX_TOKENS",
    "Budget",
    "BudgetExceeded",
    "ErrorKind",
    "LLMError",
    "ModelCallFailed",
    "ModelRequestsDisabled",
    "ModelUsage",
    "RetryPolicy",
    "UsageMeter",
    "classify_error",
    "from_litellm_response",
    "make_call_llm",
    "model_requests_allowed",
    "parse_tool_arguments",
    "resolve_max_tokens",
    "to_litellm_messages",
]
