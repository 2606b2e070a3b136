"""The eval's statistics against published values (Newcombe 1998a/b; Fagerland, Lydersen
and Laake, "Statistical Analysis of Contingency Tables", 2017, whose worked examples the
R package `contingencytables` reproduces)."""

from __future__ import annotations

import pytest

from agent_loop_eval import PairedTable, mcnemar_exact, paired_difference, wilson


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (13, 16, 0.5699, 0.9341),  # Fagerland et al., chapter 2
        (81, 263, 0.2553, 0.3662),  # Newcombe 1998a, table I
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_matches_published_intervals(k: int, n: int, low: float, high: float) -> None:
    got = wilson(k, n)
    assert got == pytest.approx((low, high), abs=6e-5)


def test_wilson_of_nothing_is_everything() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="successes"):
        wilson(3, 2)


def test_the_paired_example_of_cavo_2012() -> None:
    """Complete response before and after consolidation therapy: 59 both, 6 first only,
    16 second only, 80 neither (Fagerland et al., chapter 8)."""
    table = PairedTable(both=59, only_a=6, only_b=16, neither=80)
    estimate, low, high = paired_difference(table)
    assert estimate == pytest.approx(-0.0621, abs=5e-5)
    assert (low, high) == pytest.approx((-0.1186, -0.0046), abs=5e-5)
    assert mcnemar_exact(6, 16) == pytest.approx(0.052479, abs=5e-7)


def test_mcnemar_exact_edge_cases() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == 1.0  # capped at 1
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact(5, 0) == mcnemar_exact(0, 5)  # two-sided


def test_a_paired_interval_stays_within_bounds_and_covers_its_estimate() -> None:
    for table in (
        PairedTable(both=0, only_a=5, only_b=0, neither=0),
        PairedTable(both=3, only_a=0, only_b=0, neither=0),
        PairedTable(both=1, only_a=2, only_b=1, neither=3),
        PairedTable(both=0, only_a=0, only_b=0, neither=0),
    ):
        estimate, low, high = paired_difference(table)
        assert -1.0 <= low <= estimate <= high <= 1.0
