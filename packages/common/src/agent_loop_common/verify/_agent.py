"""The strict verifier sub-agent shared by the builder and the reviewer.

The verifier is a second `Agent` with read-only tools and instructions that make it a
sceptic: it checks a proposal against the request and the repository, and ends with a
JSON verdict. One builder function covers three kinds of proposal, each with its own
checklist: a change implementing an issue, a decomposition of a spec into sub-issues,
and a fix answering review feedback on a pull request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from flyte.ai.agents import Agent, LLMCallable

from agent_loop_common.agents import UNTRUSTED_DATA_RULE

__all__ = ["VERIFIER_MARKER", "VerifierKind", "make_verifier_agent", "verifier_instructions"]

VerifierKind = Literal["change", "decomposition", "fix"]

VERIFIER_MARKER = "You are a strict verifier"
"""Opening of every verifier's instructions (tests route a scripted model by it)."""

_SUBJECT: dict[VerifierKind, str] = {
    "change": "a change to a repository that another agent proposed to implement an issue",
    "decomposition": "a decomposition of a specification issue into sub-issues that another agent proposed",
    "fix": "a fix that another agent proposed for a pull request in response to review feedback and failing checks",
}

_CHECKLIST: dict[VerifierKind, str] = {
    "change": """\
- Correctness: the code does what the issue asks and would work: names, imports,
  signatures and files it relies on exist at the base branch (check with your tools),
  edge cases the issue implies are handled, nothing is left as a placeholder.
- Completeness: every requirement of the issue is met. Tests are added or updated
  wherever behavior changes; docs and examples are updated when the change is
  user-facing. Each staged file is complete, not an excerpt ("rest unchanged").
- Scope: nothing unrelated to the issue is changed, reformatted or deleted; no debug
  code, secrets, generated or binary files.""",
    "decomposition": """\
- Coverage: together the sub-issues cover everything the specification asks for, and
  nothing it does not ask for.
- Scoping: each sub-issue is one reviewable pull request's worth of work, self-contained
  (readable without the spec), with clear acceptance criteria; sub-issues do not overlap.
- Dependencies: each sub-issue depends on exactly the sub-issues it needs, the graph is
  acyclic, and independent work is not chained needlessly (it can run in parallel).""",
    "fix": """\
- Alignment: every feedback point and failing check is addressed by the change or
  answered in a reply; each reply is accurate about what the change does; nothing asked
  for is silently ignored.
- Correctness: the fixed code is right and consistent with the rest of the pull request
  and the repository (check with your tools); tests are updated where behavior changes.
- Scope: the fix changes only what the feedback and checks call for.""",
}


def verifier_instructions(kind: VerifierKind) -> str:
    """The system instructions of a verifier of `kind`."""
    if kind not in _CHECKLIST:
        raise ValueError(f"unknown verifier kind {kind!r}; expected change, decomposition or fix")
    return f"""\
{VERIFIER_MARKER}. You review {_SUBJECT[kind]}, and decide whether it may be applied
as it is. Be strict: approve only what you have checked and found right. You have
read-only tools for the repository; use them to check claims instead of trusting the
proposal's own description. You cannot change the proposal.

{UNTRUSTED_DATA_RULE}

Check:
{_CHECKLIST[kind]}

If anything required is wrong or missing, or you could not check something that matters,
do not verify it. Your notes go back to the author for the next attempt: make them
specific and actionable (name the file, the function, the requirement, and what to
change). When you verify, say briefly what you checked.

End your final reply with your verdict as one JSON object, exactly in this shape:
{{"verified": true, "notes": "..."}} or {{"verified": false, "notes": "..."}}
"verified" must be the JSON boolean true or false."""


def make_verifier_agent(
    call_llm: LLMCallable,
    model: str,
    read_tools: Sequence[Any],
    max_turns: int = 12,
    kind: VerifierKind = "change",
    *,
    name: str | None = None,
) -> Agent:
    """Build a verifier agent of `kind`.

    Args:
        call_llm: The model call (the run's, so usage and budget cover the verifier).
        model: Model string passed to `call_llm`.
        read_tools: Read-only tools (never staging tools: the verifier only judges).
        max_turns: Turn limit; running out is a failed run (`VerifierError`), not a pass.
        kind: `"change"`, `"decomposition"` or `"fix"`.
        name: Agent name for events and traces (default `verifier-<kind>`).
    """
    return Agent(
        name=name or f"verifier-{kind}",
        instructions=verifier_instructions(kind),
        model=model,
        tools=list(read_tools),
        max_turns=max_turns,
        call_llm=call_llm,
        parallel_tool_calls=False,
    )
