"""Two result sets paired: the table, the statistics, and what is left out."""

from __future__ import annotations

import pytest

from agent_loop_eval import InstanceResult, compare_results, comparison_text


def _result(iid: str, resolved: bool, *, tokens: int = 100, cost: float = 0.01) -> InstanceResult:
    return InstanceResult(
        instance_id=iid, resolved=resolved, tokens_in=tokens, tokens_out=tokens // 10, cost_usd=cost
    )


def test_two_runs_are_paired_on_their_common_instances() -> None:
    a = [
        _result("x-1", True),
        _result("x-2", True),
        _result("x-3", False),
        _result("x-4", True),
        _result("x-only-a", True),
    ]
    b = [
        _result("x-1", True, tokens=300, cost=0.05),
        _result("x-2", False, tokens=300, cost=0.05),
        _result("x-3", False, tokens=300, cost=0.05),
        _result("x-4", False, tokens=300, cost=0.05),
        _result("x-only-b", False),
    ]
    c = compare_results(a, b)
    assert c.paired == 4
    assert (c.both, c.only_a, c.only_b, c.neither) == (["x-1"], ["x-2", "x-4"], [], ["x-3"])
    assert (c.a.rate, c.b.rate) == (0.75, 0.25)
    assert c.difference == pytest.approx(0.5)
    assert c.low < 0.5 < c.high
    assert c.p_value == pytest.approx(0.5)  # 2 discordant, both A's: 2 * (1/4)
    assert (c.a.tokens_in, c.b.tokens_in) == (400, 1200)
    assert c.b.cost_usd == pytest.approx(0.2)
    assert (c.unpaired_a, c.unpaired_b) == (["x-only-a"], ["x-only-b"])

    text = comparison_text(c, a_name="runs/sonnet", b_name="runs/haiku")
    assert "resolved by both: 1, neither: 1, only A: 2, only B: 0" in text
    assert "exact McNemar p = 0.5000" in text
    assert "A - B = +50.0%" in text
    assert "only A: x-2, x-4" in text
    assert "not in B (not compared): x-only-a" in text


def test_runs_with_nothing_in_common_compare_nothing() -> None:
    c = compare_results([_result("a-1", True)], [_result("b-1", True)])
    assert c.paired == 0
    assert c.p_value == 1.0
    assert (c.low, c.high) == (-1.0, 1.0)
