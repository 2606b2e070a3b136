"""Exceptions raised while staging a proposal.

```
StagingError                 anything the stage or its policy refuses
├── PolicyViolation          a path or content the policy does not allow
└── PlanError                a proposal that is not a valid plan (empty, cyclic, ...)
```

Every message is written for the model: it says what was wrong and what to do instead,
because the staging tools hand it back verbatim as the tool result.
"""

from __future__ import annotations

__all__ = ["PlanError", "PolicyViolation", "StagingError"]


class StagingError(Exception):
    """Base class: the staged proposal was refused; `str(exc)` is the model-facing reason."""


class PolicyViolation(StagingError):
    """A path or file content that the `StagingPolicy` refuses."""


class PlanError(StagingError):
    """A proposal that cannot become a plan (nothing staged, a dependency cycle, ...)."""
