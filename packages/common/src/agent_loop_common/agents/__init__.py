"""Running agents: a traced `run_agent`, and fencing untrusted text for prompts.

```python
run = await run_agent(agent, prompt)
if not run.ok:
    ...                      # run.result.error: the model call failed or turns ran out
record.trace = run.trace     # [TraceStep(tool="stage_file", args='{"path": ...}', ...), ...]
```

Untrusted text (issue bodies, comments, files, the context digest) goes into prompts
through `fence_untrusted`, and agent instructions include `UNTRUSTED_DATA_RULE`.
"""

from agent_loop_common.agents._run import AgentRun, AgentStop, EventHook, run_agent
from agent_loop_common.agents._trace import LLM_STEP, TraceCollector, short_args
from agent_loop_common.agents._untrusted import UNTRUSTED_DATA_RULE, fence_untrusted, strip_hidden

__all__ = [
    "LLM_STEP",
    "UNTRUSTED_DATA_RULE",
    "AgentRun",
    "AgentStop",
    "EventHook",
    "TraceCollector",
    "fence_untrusted",
    "run_agent",
    "short_args",
    "strip_hidden",
]
