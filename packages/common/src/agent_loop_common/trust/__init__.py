"""Who counts as trusted, and which pull requests are the agents' own.

Every agent asks the same questions before anything reaches a model: does this person
have at least the configured repository permission, did the agents' own identity write
this, is this pull request one the agents opened, was this text last edited by someone
below the trust rule? One answer per question lives here.

```python
trust = Trust(github, minimum="write", agent_login="agent-loop[bot]")
await trust.resolve(["alice", "mallory"])      # one permission request per new login
trust("alice"), await trust.trusted("bob")      # True, False
```
"""

from agent_loop_common.trust._edits import (
    EditorTrust,
    as_their_authors_left_them,
    comments_edited_by_untrusted,
    untrusted_edit,
    untrusted_issue_editor,
)
from agent_loop_common.trust._permissions import (
    PERMISSION_RANK,
    Trust,
    permission_at_least,
)
from agent_loop_common.trust._pulls import (
    LabelApplied,
    is_agent_pull,
    label_applied,
    label_applier,
)

__all__ = [
    "PERMISSION_RANK",
    "EditorTrust",
    "LabelApplied",
    "Trust",
    "as_their_authors_left_them",
    "comments_edited_by_untrusted",
    "is_agent_pull",
    "label_applied",
    "label_applier",
    "permission_at_least",
    "untrusted_edit",
    "untrusted_issue_editor",
]
