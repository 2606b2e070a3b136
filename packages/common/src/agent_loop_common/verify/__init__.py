"""The strict verifier shared by the builder and the reviewer, and its verdicts.

```python
verifier = make_verifier_agent(call_llm, model, read_tools, kind="change")
try:
    verdict = await run_verifier(verifier, plan, request=issue_text, originals=base)
except VerifierError:
    ...                          # a failed run: record an error, do not post a verdict
if verdict.verified:
    ...                          # apply; otherwise retry with verdict.notes
```
"""

from agent_loop_common.verify._agent import (
    VERIFIER_MARKER,
    VerifierKind,
    make_verifier_agent,
    verifier_instructions,
)
from agent_loop_common.verify._render import RenderLimits, render_plan, render_verifier_prompt
from agent_loop_common.verify._run import run_verifier
from agent_loop_common.verify._verdict import Verdict, VerifierError, parse_verdict

__all__ = [
    "VERIFIER_MARKER",
    "RenderLimits",
    "Verdict",
    "VerifierError",
    "VerifierKind",
    "make_verifier_agent",
    "parse_verdict",
    "render_plan",
    "render_verifier_prompt",
    "run_verifier",
    "verifier_instructions",
]
