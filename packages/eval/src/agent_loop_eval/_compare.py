"""Two runs compared on the instances both ran: the paired table and its statistics (pure).

Model A against model B, lessons on against off, a prompt before and after a change: run
both on the same instances and compare them pair by pair. Instances only one run has
are listed, not compared. The figures (`_stats`): each run's resolved rate, the
difference with Newcombe's paired 95% interval, and the exact McNemar p-value on the
discordant instances; tokens and cost side by side over the paired instances.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from agent_loop_eval._results import InstanceResult
from agent_loop_eval._stats import PairedTable, mcnemar_exact, paired_difference

__all__ = ["Comparison", "RunFigures", "compare_results", "comparison_text"]


class RunFigures(BaseModel):
    """One side's figures over the paired instances."""

    resolved: int
    rate: float
    tokens_in: int
    tokens_out: int
    cost_usd: float


class Comparison(BaseModel):
    """Run A against run B, paired on their common instances."""

    paired: int
    both: list[str] = Field(default_factory=list[str])
    """Instances resolved by both runs."""
    neither: list[str] = Field(default_factory=list[str])
    only_a: list[str] = Field(default_factory=list[str])
    """Resolved by A, not by B."""
    only_b: list[str] = Field(default_factory=list[str])
    a: RunFigures
    b: RunFigures
    difference: float
    """A's resolved rate minus B's."""
    low: float
    """The difference's 95% interval (Newcombe's paired method)."""
    high: float
    p_value: float
    """Exact McNemar test (two-sided) of equal resolved rates."""
    tampered_a: list[str] = Field(default_factory=list[str])
    """Paired instances whose change in A reached into the test runner (never resolved)."""
    tampered_b: list[str] = Field(default_factory=list[str])
    errors_a: list[str] = Field(default_factory=list[str])
    """Paired instances that ended in `error` in A (the eval failed: GitHub, the setup;
    not a verdict on a change), counted as not resolved as the runs counted them."""
    errors_b: list[str] = Field(default_factory=list[str])
    unpaired_a: list[str] = Field(default_factory=list[str])
    """Instances only A ran (left out of the comparison)."""
    unpaired_b: list[str] = Field(default_factory=list[str])
    partial_a: str = ""
    """A's run was interrupted (`RunResults.note`: `interrupted after N of M instances;
    not a complete run`); "" when it is complete. Only what it finished is paired, and
    the instances that finish first are no fair sample of the file."""
    partial_b: str = ""


def _figures(results: Sequence[InstanceResult], n: int) -> RunFigures:
    resolved = sum(r.resolved for r in results)
    return RunFigures(
        resolved=resolved,
        rate=resolved / n if n else 0.0,
        tokens_in=sum(r.tokens_in for r in results),
        tokens_out=sum(r.tokens_out for r in results),
        cost_usd=sum(r.cost_usd for r in results),
    )


def compare_results(a: Sequence[InstanceResult], b: Sequence[InstanceResult]) -> Comparison:
    """Pair `a` and `b` by `instance_id` (a run listing an instance twice keeps its last)."""
    by_a = {r.instance_id: r for r in a}
    by_b = {r.instance_id: r for r in b}
    common = sorted(by_a.keys() & by_b.keys())
    groups: dict[tuple[bool, bool], list[str]] = {}
    for iid in common:
        groups.setdefault((by_a[iid].resolved, by_b[iid].resolved), []).append(iid)
    table = PairedTable(
        both=len(groups.get((True, True), [])),
        only_a=len(groups.get((True, False), [])),
        only_b=len(groups.get((False, True), [])),
        neither=len(groups.get((False, False), [])),
    )
    difference, low, high = paired_difference(table)
    return Comparison(
        paired=len(common),
        both=groups.get((True, True), []),
        neither=groups.get((False, False), []),
        only_a=groups.get((True, False), []),
        only_b=groups.get((False, True), []),
        a=_figures([by_a[i] for i in common], len(common)),
        b=_figures([by_b[i] for i in common], len(common)),
        difference=difference,
        low=low,
        high=high,
        p_value=mcnemar_exact(table.only_a, table.only_b),
        tampered_a=[i for i in common if by_a[i].tampered],
        tampered_b=[i for i in common if by_b[i].tampered],
        errors_a=[i for i in common if by_a[i].outcome == "error"],
        errors_b=[i for i in common if by_b[i].outcome == "error"],
        unpaired_a=sorted(by_a.keys() - by_b.keys()),
        unpaired_b=sorted(by_b.keys() - by_a.keys()),
    )


def comparison_text(c: Comparison, *, a_name: str = "A", b_name: str = "B") -> str:
    """The comparison as a person reads it in a terminal: the paired table, the rates,
    the difference with its interval and p-value, tokens and cost side by side."""
    width = len("A resolved")  # the rows' labels (the runs' names are on lines of their own)
    lines = [
        f"A: {a_name}",
        f"B: {b_name}",
        *(
            f"warning: {side} is a partial run ({note}): only the instances it finished "
            "are paired, the first to finish, not a fair sample; compare complete runs "
            "for a verdict"
            for side, note in (("A", c.partial_a), ("B", c.partial_b))
            if note
        ),
        f"{c.paired} instance(s) paired",
        "",
        f"{'':<{width}}  {'B resolved':>11}  {'B not':>6}",
        f"{'A resolved':<{width}}  {len(c.both):>11}  {len(c.only_a):>6}",
        f"{'A not':<{width}}  {len(c.only_b):>11}  {len(c.neither):>6}",
        "",
        f"resolved by both: {len(c.both)}, neither: {len(c.neither)}, "
        f"only A: {len(c.only_a)}, only B: {len(c.only_b)}",
        f"resolved rate: A {c.a.rate:.1%}, B {c.b.rate:.1%}; A - B = {c.difference:+.1%} "
        f"(95% CI {c.low:+.1%} to {c.high:+.1%}, Newcombe paired)",
        f"exact McNemar p = {c.p_value:.4f}",
        "",
        f"{'':<12}{'A':>14}{'B':>14}",
        f"{'tokens in':<12}{c.a.tokens_in:>14,}{c.b.tokens_in:>14,}",
        f"{'tokens out':<12}{c.a.tokens_out:>14,}{c.b.tokens_out:>14,}",
        f"{'cost':<12}{'$' + format(c.a.cost_usd, '.4f'):>14}{'$' + format(c.b.cost_usd, '.4f'):>14}",
    ]
    for label, ids in (("only A", c.only_a), ("only B", c.only_b)):
        if ids:
            lines.append(f"{label}: {', '.join(ids)}")
    for label, ids in (("tampered in A", c.tampered_a), ("tampered in B", c.tampered_b)):
        if ids:
            lines.append(f"{label} (never resolved): {', '.join(ids)}")
    for label, ids in (("error in A", c.errors_a), ("error in B", c.errors_b)):
        if ids:  # an eval that failed counts against its run: say so, it is no verdict
            lines.append(
                f"{label} (counted as not resolved; the eval failed, not the change: run "
                f"them again): {', '.join(ids)}"
            )
    for label, ids in (("not in B", c.unpaired_a), ("not in A", c.unpaired_b)):
        if ids:
            lines.append(f"{label} (not compared): {', '.join(ids)}")
    return "\n".join(lines)
