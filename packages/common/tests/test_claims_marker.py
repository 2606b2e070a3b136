"""Marker grammar: render/parse round trips, strictness, and a reader that never raises."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from structlog.testing import capture_logs

from agent_loop_common.claims import (
    BackoffMarker,
    DibsMarker,
    InvalidMarker,
    format_time,
    parse_backoff,
    parse_dibs,
    parse_time,
    render_backoff,
    render_dibs,
    safe_text,
)

RUN = "20261202T105600Z-3fa9c1d2"
UNTIL = datetime(2026, 12, 2, 11, 26, tzinfo=UTC)


def dibs(**changes: object) -> DibsMarker:
    fields: dict[str, object] = {
        "op": "claim",
        "kind": "issue",
        "agent": "prod-eu",
        "role": "builder",
        "run": RUN,
        "until": UNTIL,
    }
    fields.update(changes)
    return DibsMarker(**fields)  # type: ignore[arg-type]


def test_render_matches_the_documented_grammar() -> None:
    assert render_dibs(dibs()) == (
        "<!-- agent-loop:dibs v1 op=claim kind=issue agent=prod-eu role=builder "
        "run=20261202T105600Z-3fa9c1d2 until=2026-12-02T11:26:00Z -->"
    )
    assert render_backoff(BackoffMarker(3, UNTIL, RUN)) == (
        "<!-- agent-loop:backoff v1 attempts=3 until=2026-12-02T11:26:00Z "
        "run=20261202T105600Z-3fa9c1d2 -->"
    )


@pytest.mark.parametrize("op", ["claim", "extend", "release"])
@pytest.mark.parametrize("kind", ["issue", "pr", "repo"])
def test_round_trip_inside_human_text(op: str, kind: str) -> None:
    marker = dibs(op=op, kind=kind, agent="team/ci@eu-1:blue")
    body = f"I am working on this.\n\n{render_dibs(marker)}\n\nthanks"
    assert parse_dibs(body) == [marker]


def test_backoff_round_trip() -> None:
    marker = BackoffMarker(attempts=12, until=UNTIL, run=RUN)
    assert parse_backoff(f"failed\n{render_backoff(marker)}") == [marker]
    assert parse_dibs(render_backoff(marker)) == []
    assert parse_backoff(render_dibs(dibs())) == []


def test_several_markers_parse_in_order() -> None:
    first, second = dibs(), dibs(op="release")
    assert parse_dibs(render_dibs(first) + "\n" + render_dibs(second)) == [first, second]


def test_times_are_utc_seconds_with_z() -> None:
    from datetime import timedelta, timezone

    local = datetime(2026, 12, 2, 12, 26, 0, 999_999, tzinfo=timezone(timedelta(hours=1)))
    assert format_time(local) == "2026-12-02T11:26:00Z"
    assert parse_time("2026-12-02T11:26:00Z") == UNTIL
    for bad in ("2026-12-02T11:26:00", "2026-12-02T11:26:00+00:00", "2026-13-02T11:26:00Z", ""):
        assert parse_time(bad) is None
    with pytest.raises(InvalidMarker):
        format_time(datetime(2026, 1, 1))  # noqa: DTZ001 - the naive time is the point


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("op", "steal"),
        ("kind", "discussion"),
        ("agent", "has space"),
        ("agent", "a--b"),
        ("agent", ""),
        ("role", "Builder"),
        ("role", "x--y"),
        ("run", "run-1"),
    ],
)
def test_render_refuses_values_outside_the_grammar(field: str, value: str) -> None:
    with pytest.raises(InvalidMarker, match=field):
        render_dibs(dibs(**{field: value}))


def test_render_refuses_bad_backoff_values() -> None:
    with pytest.raises(InvalidMarker):
        render_backoff(BackoffMarker(0, UNTIL, RUN))
    with pytest.raises(InvalidMarker):
        render_backoff(BackoffMarker(1, UNTIL, "nope"))


VALID = render_dibs(dibs())


@pytest.mark.parametrize(
    "text",
    [
        VALID.replace(" v1 ", " v2 "),  # unknown version
        VALID.replace(" v1 ", " "),  # no version
        VALID.replace("op=claim", "op=steal"),
        VALID.replace("kind=issue", "kind=discussion"),
        VALID.replace(" role=builder", ""),  # missing field
        VALID.replace("role=builder", "role=builder role=reviewer"),  # duplicate field
        VALID.replace("role=builder", "role=builder colour=blue"),  # unknown field
        VALID.replace("role=builder", "role="),  # empty value
        VALID.replace("role=builder", "rolebuilder"),  # not key=value
        VALID.replace("until=2026-12-02T11:26:00Z", "until=tomorrow"),
        VALID.replace("until=2026-12-02T11:26:00Z", "until=2026-02-30T11:26:00Z"),
        VALID.replace(RUN, "20261202T105600Z-XYZ"),
        VALID.replace("agent=prod-eu", "agent=-bad"),
        "<!-- agent-loop:dibs -->",
        "<!-- agent-loop:dibs v1 op=claim",  # never closed: not a marker at all
    ],
)
def test_malformed_markers_are_ignored_and_logged_never_raised(text: str) -> None:
    with capture_logs() as logs:
        assert parse_dibs(f"hello {text} world") == []
    if text.endswith("-->"):
        assert [entry["event"] for entry in logs] == ["claims.marker_ignored"]


def test_unknown_version_is_logged_as_such() -> None:
    with capture_logs() as logs:
        assert parse_dibs(VALID.replace(" v1 ", " v7 "), where="issue 4 comment 2") == []
    assert logs[0]["reason"] == "unknown version"
    assert logs[0]["version"] == "v7"
    assert logs[0]["where"] == "issue 4 comment 2"


def test_a_malformed_marker_does_not_hide_a_valid_one() -> None:
    body = VALID.replace(" v1 ", " v9 ") + "\n" + VALID
    assert parse_dibs(body) == [dibs()]


def test_tolerant_of_whitespace_and_garbage_around() -> None:
    body = "\r\n<!--   agent-loop:dibs\tv1 " + VALID.split(" v1 ", 1)[1].replace(" -->", "\n-->")
    assert parse_dibs("x" * 10_000 + body + "<!-- other -->") == [dibs()]
    assert parse_dibs("") == []
    assert parse_dibs("<!-- agent-loop:dibsv1 -->") == []


def test_safe_text_makes_quoted_markers_inert() -> None:
    quoted = safe_text(f"model said: {VALID}")
    assert "<!--" not in quoted
    assert "-->" not in quoted
    assert parse_dibs(quoted) == []
