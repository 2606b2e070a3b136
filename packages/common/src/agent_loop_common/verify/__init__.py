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

`Coverage` tracks what of a change the verifier was shown (the prompt, and the pages of
the proposed tree its `read_file` showed): a verdict on a change it did not fully see
is not accepted.
"""

from agent_loop_common.verify._agent import (
    VERIFIER_MARKER,
    VerifierKind,
    make_verifier_agent,
    verifier_instructions,
)
from agent_loop_common.verify._coverage import Coverage
from agent_loop_common.verify._render import (
    RenderLimits,
    instructions_change_note,
    render_plan,
    render_verifier_prompt,
    show_exact,
)
from agent_loop_common.verify._run import run_verifier
from agent_loop_common.verify._verdict import Verdict, VerifierError, parse_verdict

__all__ = [
    "VERIFIER_MARKER",
    "Coverage",
    "RenderLimits",
    "Verdict",
    "VerifierError",
    "VerifierKind",
    "instructions_change_note",
    "make_verifier_agent",
    "parse_verdict",
    "render_plan",
    "render_verifier_prompt",
    "run_verifier",
    "show_exact",
    "verifier_instructions",
]
