"""Text the agents write in public: one sanitizer for every comment, body and title.

Everything a model wrote (or quoted: an issue title, an error message, a reviewer's
words) is posted on GitHub under the agents' own identity, and GitHub acts on some of
what it reads there: a closing keyword closes an issue when the pull request merges, an
`@mention` notifies a person, and the claim protocol trusts a marker *because* the
agents' identity wrote it. `public_text` makes all of that inert, except the one
`Fixes #N` the pipeline itself means to write.

```python
body = public_text(plan.body, allow_closing=issue)
comment = public_text(verifier_notes, limit=6_000)
```
"""

from agent_loop_common.texts._public import (
    MENTION_BREAK,
    REDACTED,
    closing_references,
    public_text,
    redact_secrets,
)

__all__ = ["MENTION_BREAK", "REDACTED", "closing_references", "public_text", "redact_secrets"]
