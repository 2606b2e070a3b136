"""Exceptions of the claim protocol.

```
ClaimError                  base of everything raised here
├── InvalidRunId            a run id does not have the run id format (also a ValueError)
├── InvalidMarker           a marker cannot be rendered from these values (also a ValueError)
├── NotClaimed              hold() did not win the target: someone else holds it
└── ClaimLost               the claim ref moved under a holder: another run took it over
```

Reading markers never raises: malformed markers are logged and ignored, because one broken
comment on an issue must not stop every future run. Losing a race in `Claimer.claim` is
not an exception either (it returns `None`): it is the normal outcome for all but one
racer. Exceptions are kept for non-local exits a caller cannot ignore by accident.
"""

from __future__ import annotations

__all__ = ["ClaimError", "ClaimLost", "InvalidMarker", "InvalidRunId", "NotClaimed"]


class ClaimError(Exception):
    """Base class of the claim protocol's errors."""


class InvalidRunId(ClaimError, ValueError):
    """A run id does not match `YYYYMMDDTHHMMSSZ-xxxxxxxx`."""


class InvalidMarker(ClaimError, ValueError):
    """A marker field holds a value the grammar cannot carry (space, `--`, naive time...)."""


class NotClaimed(ClaimError):
    """`Claimer.hold` could not claim the target because another live run holds it."""


class ClaimLost(ClaimError):
    """The claim ref no longer points at this run's commit: another run took the target over.

    Raised by `Claimer.extend`; the holder should stop writing to the target.
    """
