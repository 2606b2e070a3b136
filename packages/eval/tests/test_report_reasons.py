"""The report's table stays readable when a build's reason is long: its first line in the
row, the whole reason (a verifier's notes, the tests' output) folded below with its line
breaks, HTML-escaped as every value."""

from __future__ import annotations

from agent_loop_eval import InstanceResult, report_html

REASON = (
    "no try was verified: Not accepted: the repository's tests fail the hard rules.\n"
    "Failing tests: tests.test_calc::test_neg\n"
    ">       assert neg(2) == -2\n"
    "E       assert 2 == -2"
)


def test_a_long_reason_is_folded_under_its_first_line() -> None:
    result = InstanceResult(
        instance_id="acme__calc-6", resolved=False, outcome="rejected", reason=REASON
    )
    page = report_html([result], title="run", model="m", lessons="on")
    row = page.split("acme__calc-6", 1)[1]
    first = "no try was verified: Not accepted: the repository&#x27;s tests fail the hard rules."
    assert f"<small>{first}</small>" in row
    folded = row.split("<pre>", 1)[1].split("</pre>", 1)[0]
    assert folded.splitlines()[-1] == "E       assert 2 == -2"
    assert "&gt;       assert neg(2) == -2" in folded
    short = InstanceResult(
        instance_id="x-1", resolved=False, outcome="change", reason="1 hidden test(s) did not pass"
    )
    assert "why, in full" not in report_html([short], title="run", model="m", lessons="on")
