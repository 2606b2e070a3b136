"""The one attempt loop of the agents that propose work: try, verify, feed back, retry.

The builder and the reviewer run the same loop; each plugs in its agent, its prompts,
how to read its proposal from its stages, and what its verifier is shown:

```python
async with open_checks(runtime, tree=snapshot, config=base_branch) as checks:
    result = await attempt_loop(scope, proposer, tries=settings.max_tries, checks=checks)
match result:
    case Verified(plan=plan, tests=report): ...  # apply it, with the tests' evidence
    case Declined(reason=reason): ...    # the agent chose not to act
    case Rejected(notes=notes): ...      # no try passed the tests and the verifier
```

A submitted change is tested before the verifier (a hard-rule failure rejects the try
by code) and the verifier is shown the results; a verdict on a change the verifier was
not shown in full does not count.

Failures are exceptions, never outcomes: `AgentFailed` (the agent's model call failed),
`BudgetExceeded` (the run's budget stopped a model call) and `VerifierError` (the
verifier could not reach a verdict). Every try is an `Attempt` on the run's record.
"""

from agent_loop_common.attempts._loop import attempt_loop
from agent_loop_common.attempts._types import (
    AgentFailed,
    AttemptResult,
    Declined,
    Plan,
    Proposer,
    Rejected,
    Verified,
    VerifierInput,
)

__all__ = [
    "AgentFailed",
    "AttemptResult",
    "Declined",
    "Plan",
    "Proposer",
    "Rejected",
    "Verified",
    "VerifierInput",
    "attempt_loop",
]
