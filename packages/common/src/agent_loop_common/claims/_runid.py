"""Unique, sortable run ids.

Every cluster run's root action carries the same name, so the action name alone cannot
tell two runs apart; yet the claim protocol hinges on run identity (a claim is re-entrant
only for the run that holds it). A run id therefore combines the UTC start second (so ids
sort by time, in logs and in `ls`) with 32 random bits from `secrets` (so two runs
started in the same second, on different machines, still differ): `20261202T105600Z-3fa9c1d2`.

The format is validated wherever a run id crosses a boundary (markers, refs, records),
because a run id ends up inside an HTML comment and a commit message: a stray `--` or
space would break the marker grammar.
"""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime

from agent_loop_common.claims._errors import InvalidRunId

__all__ = ["RUN_ID_PATTERN", "is_run_id", "new_run_id", "run_id_time", "validate_run_id"]

RUN_ID_PATTERN = re.compile(r"\A(\d{8}T\d{6}Z)-([0-9a-f]{8})\Z")
"""`YYYYMMDDTHHMMSSZ-<8 lowercase hex digits>`."""

_STAMP = "%Y%m%dT%H%M%SZ"


def new_run_id(*, now: datetime | None = None, suffix: str | None = None) -> str:
    """Return a fresh run id such as `20261202T105600Z-3fa9c1d2`.

    Args:
        now: the run's start (timezone-aware); defaults to the current UTC time.
        suffix: eight lowercase hex digits; random by default. Tests pass one to get a
            fixed id, production code should not.

    Raises:
        ValueError: `now` is naive.
        InvalidRunId: `suffix` is not eight lowercase hex digits.
    """
    moment = datetime.now(UTC) if now is None else now
    if moment.tzinfo is None:
        raise ValueError("new_run_id needs a timezone-aware datetime")
    tail = secrets.token_hex(4) if suffix is None else suffix
    return validate_run_id(f"{moment.astimezone(UTC).strftime(_STAMP)}-{tail}")


def is_run_id(value: str) -> bool:
    """Tell whether `value` has the run id format (and a real calendar time)."""
    match = RUN_ID_PATTERN.match(value)
    if match is None:
        return False
    try:
        datetime.strptime(match.group(1), _STAMP)  # noqa: DTZ007 - format ends in a literal Z
    except ValueError:
        return False
    return True


def validate_run_id(value: str) -> str:
    """Return `value` unchanged when it is a valid run id.

    Raises:
        InvalidRunId: it is not.
    """
    if not is_run_id(value):
        raise InvalidRunId(
            f"invalid run id {value!r}: expected YYYYMMDDTHHMMSSZ-xxxxxxxx (UTC start + 8 hex digits)"
        )
    return value


def run_id_time(value: str) -> datetime:
    """Return the UTC start time encoded in a run id.

    Raises:
        InvalidRunId: `value` is not a run id.
    """
    stamp = validate_run_id(value).split("-", 1)[0]
    return datetime.strptime(stamp, _STAMP).replace(tzinfo=UTC)
