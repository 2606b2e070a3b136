"""Run ids: format, sortability, uniqueness."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from agent_loop_common.claims import (
    RUN_ID_PATTERN,
    InvalidRunId,
    is_run_id,
    new_run_id,
    run_id_time,
    validate_run_id,
)


def test_format_and_time_round_trip() -> None:
    start = datetime(2026, 12, 2, 10, 56, 0, 123_456, tzinfo=UTC)
    run_id = new_run_id(now=start, suffix="3fa9c1d2")
    assert run_id == "20261202T105600Z-3fa9c1d2"
    assert RUN_ID_PATTERN.match(run_id)
    assert run_id_time(run_id) == start.replace(microsecond=0)


def test_local_times_are_converted_to_utc() -> None:
    start = datetime(2026, 12, 2, 11, 56, tzinfo=timezone(timedelta(hours=1)))
    assert new_run_id(now=start, suffix="00000000").startswith("20261202T105600Z-")


def test_ten_thousand_ids_in_one_second_are_unique() -> None:
    start = datetime(2026, 12, 2, tzinfo=UTC)
    ids = {new_run_id(now=start) for _ in range(10_000)}
    assert len(ids) == 10_000
    assert all(is_run_id(run_id) for run_id in ids)


def test_ids_sort_by_start_time() -> None:
    base = datetime(2026, 12, 2, tzinfo=UTC)
    ids = [new_run_id(now=base + timedelta(seconds=s)) for s in (0, 1, 59, 3600, 86_400 * 40)]
    assert sorted(ids) == ids


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "run-1",
        "20261202T105600Z",
        "20261202T105600Z-3FA9C1D2",
        "20261202T105600Z-3fa9c1d",
        "20261202T105600Z-3fa9c1d2 ",
        "20261302T105600Z-3fa9c1d2",  # month 13
        "20261202T105600-3fa9c1d2",
        "a0261202T105600Z-3fa9c1d2",
    ],
)
def test_invalid_ids_are_rejected(bad: str) -> None:
    assert not is_run_id(bad)
    with pytest.raises(InvalidRunId, match="invalid run id"):
        validate_run_id(bad)


def test_invalid_suffix_and_naive_time() -> None:
    with pytest.raises(InvalidRunId):
        new_run_id(suffix="xyz")
    with pytest.raises(ValueError, match="timezone-aware"):
        new_run_id(now=datetime(2026, 1, 1))  # noqa: DTZ001 - the naive time is the point
    assert isinstance(InvalidRunId("x"), ValueError)
