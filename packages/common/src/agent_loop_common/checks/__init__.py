"""Verdicts that rest on evidence: the repository's tests, run by code before any model judges.

The builder and the reviewer open one `Checks` per run, once they know the commit their
change applies to, and hand it to the shared attempt loop, which checks every submitted
change before the model verifier (issue 14):

```python
async with open_checks(runtime, tree=snapshot, config=base_branch) as checks:
    tools = [..., run_tests_tool(checks, stage)]          # the agent tries its stage
    result = await attempt_loop(scope, proposer, tries=3, checks=checks)
    # a try whose tests break a hard rule is rejected, its failures fed back; otherwise
    # the verifier is shown the evidence; `Verified.tests` is the accepted try's report
```

A `CheckReport` renders the same facts for each reader: `feedback()` for the agent,
`for_verifier()` for the verifier, `markdown()` for a pull request body or a fix
summary, `evidence(runs=...)` for the run record.
"""

from agent_loop_common.checks._checks import NO_COMMAND, Checks, open_checks, open_sandbox_checks
from agent_loop_common.checks._report import CheckReport
from agent_loop_common.checks._tool import run_tests_instructions, run_tests_tool

__all__ = [
    "NO_COMMAND",
    "CheckReport",
    "Checks",
    "open_checks",
    "open_sandbox_checks",
    "run_tests_instructions",
    "run_tests_tool",
]
