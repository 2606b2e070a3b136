"""parse_verdict: only a real JSON true passes; everything else fails closed."""

from __future__ import annotations

import pytest

from agent_loop_common.verify import Verdict, parse_verdict


@pytest.mark.parametrize(
    ("text", "verified", "notes"),
    [
        ('{"verified": true, "notes": "All good."}', True, "All good."),
        ('{"verified": false, "notes": "Missing tests."}', False, "Missing tests."),
        ('Checked everything.\n```json\n{"verified": true, "notes": "ok"}\n```', True, "ok"),
        ('```\n{\n  "verified": false,\n  "notes": "a\\nb"\n}\n```\nThanks.', False, "a\nb"),
        ('{"verified": true}', True, ""),
        # the last object with a "verified" key wins (the model may quote an example first)
        (
            'Format: {"verified": true, "notes": "..."}\nMy verdict: {"verified": false, "notes": "no"}',
            False,
            "no",
        ),
        (
            '{"verified": false, "notes": "x"} then {"verified": true, "notes": "changed my mind"}',
            True,
            "changed my mind",
        ),
        # objects without the key are ignored, nested keys do not count
        ('{"verified": true, "notes": "ok"} {"other": 1}', True, "ok"),
        ('{"notes": "x", "details": {"verified": true}}', False, None),
        # non-string notes are kept as JSON
        ('{"verified": false, "notes": ["a", "b"]}', False, '["a", "b"]'),
        # braces in code before the verdict do not confuse the scan
        ('def f(): return {x: 1}  {"verified": true, "notes": "fine"}', True, "fine"),
    ],
)
def test_verdicts(text: str, verified: bool, notes: str | None) -> None:
    verdict = parse_verdict(text)
    assert verdict.verified is verified
    if notes is not None:
        assert verdict.notes == notes


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"verified": "true", "notes": "ok"}', '"verified" was "true", not a JSON boolean'),
        ('{"verified": 1, "notes": "ok"}', '"verified" was 1, not a JSON boolean'),
        ('{"verified": null}', '"verified" was null'),
        ('{"verified": "yes"}', '"verified" was "yes"'),
        ("Looks good to me, verified!", "no JSON object"),
        ("", "no JSON object"),
        ('{"verified": true, "notes": "truncated', "no JSON object"),
        ("{'verified': True, 'notes': 'python dict'}", "no JSON object"),
        ('{"Verified": true}', "no JSON object"),
    ],
)
def test_fails_closed(text: str, why: str) -> None:
    verdict = parse_verdict(text)
    assert verdict.verified is False
    assert verdict.notes.startswith("Not verified")
    assert why in verdict.notes


def test_failing_closed_keeps_the_notes_and_the_tail() -> None:
    assert (
        "Notes: please check"
        in parse_verdict('{"verified": "true", "notes": "please check"}').notes
    )
    assert "the end of my answer" in parse_verdict("blah " * 200 + "the end of my answer").notes


def test_verdict_is_frozen_and_serializable() -> None:
    verdict = Verdict(verified=True, notes="n")
    assert Verdict.model_validate_json(verdict.model_dump_json()) == verdict
