"""The Metrics tab's figures: each defined once, read by its card and by its chart.

A report that says "Runs 8" beside a chart of seven runs, or "first-try 83%" beside a
line at 80%, is computed twice. Here every figure is one `Figure` (a function of a
`Period`'s counts, with its definition in words), every chart draws figures over
periods (days, or months for the grades), and every card is computed from the same
figures over the sum of the same periods:

- a count card (`Runs`, `PRs opened`, `Total cost`) is the sum of its chart's bars;
- a ratio card (`Success rate`, `Cost per PR`, `Merged (of decided)`) is the sum of
  its numerators over the sum of its denominators, the very counts each point of its
  chart was computed from (never an average of the points).

The periods are the ingested runs' daily rollups with this distiller pass folded in, so
the cards, the charts and `agent-loop status` all count the pass. The figures' ratios
are `Metrics`' (`agent_loop_common.metrics.summarize`): the same numerators and
denominators, so the "All figures" table agrees with the cards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agent_loop_common.metrics import (
    IDLE_OUTCOMES,
    SUCCESS_OUTCOMES,
    UNCOUNTED_OUTCOMES,
    GradeTally,
    Tally,
)
from agent_loop_common.records import Outcome
from agent_loop_distiller._report._charts import Series

__all__ = ["CARDS", "FIGURES", "Card", "Figure", "Period", "card_value", "series"]


@dataclass(frozen=True)
class Period:
    """The counts of one day (runs, idle ticks) or one month (grades)."""

    label: str
    runs: Tally = field(default_factory=Tally)
    idle: int = 0
    """Ticks that found nothing to claim."""
    grades: GradeTally = field(default_factory=GradeTally)

    def __add__(self, other: Period) -> Period:
        return Period(
            label=self.label,
            runs=self.runs + other.runs,
            idle=self.idle + other.idle,
            grades=self.grades + other.grades,
        )


def total(periods: Sequence[Period]) -> Period:
    """The sum of `periods`: what a card is computed over."""
    out = Period(label="window")
    for period in periods:
        out = out + period
    return out


@dataclass(frozen=True)
class Figure:
    """One figure: a count (`den` is `None`) or a ratio of two counts."""

    key: str
    name: str
    """How its chart's legend names it."""
    definition: str
    """What it counts, stated under its chart."""
    num: Callable[[Period], float]
    den: Callable[[Period], float] | None = None

    def value(self, period: Period) -> float | None:
        """The count, or the ratio (`None` when its denominator is 0: a gap, never 0)."""
        n = self.num(period)
        if self.den is None:
            return n
        d = self.den(period)
        return None if d == 0 else n / d


Count = Callable[[Period], float]


def _named(outcomes: frozenset[Outcome]) -> str:
    """The outcomes a figure counts, as `status` and the records name them, in the
    order `Outcome` declares them: a definition that cannot drift from the count."""
    return ", ".join(o.value for o in Outcome if o in outcomes)


_FAILED = frozenset(Outcome) - SUCCESS_OUTCOMES - IDLE_OUTCOMES - UNCOUNTED_OUTCOMES
"""Outcomes of runs that did the work and did not deliver."""


def _f(key: str, name: str, definition: str, num: Count, den: Count | None = None) -> Figure:
    return Figure(key, name, definition, num, den)


FIGURES: dict[str, Figure] = {
    f.key: f
    for f in (
        _f(
            "succeeded",
            "succeeded",
            f"succeeded: runs that delivered (outcome {_named(SUCCESS_OUTCOMES)})",
            lambda p: p.runs.successes,
        ),
        _f(
            "failed",
            "failed",
            f"failed: runs that did the work and did not deliver (outcome {_named(_FAILED)})",
            lambda p: p.runs.worked - p.runs.successes,
        ),
        _f(
            "declined",
            "declined",
            f"declined: runs that reached their target and did not work on it (outcome "
            f"{_named(IDLE_OUTCOMES)}): an issue or PR asked for by number and refused "
            "(not trusted, in back-off, already handled), one found done once claimed, or "
            "an issue the builder's model declined; not in the success rate",
            lambda p: p.runs.runs - p.runs.worked - p.runs.interrupted,
        ),
        _f(
            "interrupted",
            "interrupted",
            "interrupted: runs stopped by the operator (outcome interrupted: SIGINT, "
            "SIGTERM), in no rate",
            lambda p: p.runs.interrupted,
        ),
        _f("idle", "idle", "idle: ticks that found nothing to claim", lambda p: p.idle),
        _f(
            "preflight",
            "preflight failed",
            "preflight failed: ticks that never reached their target (outcome "
            "preflight_failed: a wrong repository, a refused token, a missing issue, an "
            "unreachable model); not runs, in no rate",
            lambda p: p.runs.preflight_failed,
        ),
        _f(
            "success",
            "success",
            "success = delivered / runs that did the work (declined and interrupted runs left out)",
            lambda p: p.runs.successes,
            lambda p: p.runs.worked,
        ),
        _f(
            "verified",
            "verified",
            "verified = builder and reviewer runs where some try passed the verifier / "
            "those with any try (the distiller has no verifier)",
            lambda p: p.runs.verified,
            lambda p: p.runs.with_attempts,
        ),
        _f(
            "first_try",
            "first-try verified",
            "first-try verified = builder and reviewer runs whose try 1 passed the verifier "
            "/ those with any try",
            lambda p: p.runs.first_try_verified,
            lambda p: p.runs.with_attempts,
        ),
        _f(
            "cached_input",
            "cached input",
            "cached input = prompt tokens read from the provider's cache / prompt tokens",
            lambda p: p.runs.tokens_cache_read,
            lambda p: p.runs.tokens_in,
        ),
        _f(
            "prs",
            "PRs opened",
            "PRs opened: builder runs that opened a pull request",
            lambda p: p.runs.opened_prs,
        ),
        _f(
            "cost",
            "cost",
            "cost: every run's estimated cost, all roles (reviews and distiller passes included)",
            lambda p: p.runs.cost_usd,
        ),
        _f(
            "cost_per_pr",
            "cost per PR",
            "cost per PR = all roles' cost / PRs opened (a day with cost and no PR is a gap "
            "whose cost still counts in the card)",
            lambda p: p.runs.cost_usd,
            lambda p: p.runs.opened_prs,
        ),
        _f(
            "merged",
            "merged",
            "merged: agent PRs a person merged",
            lambda p: p.grades.merged,
        ),
        _f(
            "closed",
            "closed unmerged",
            "closed unmerged: agent PRs closed without merging",
            lambda p: p.grades.closed_unmerged,
        ),
        _f("open", "open", "open: agent PRs still undecided", lambda p: p.grades.open),
    )
}
"""Every figure the tab's charts draw and its cards read, by key."""


def series(key: str, periods: Sequence[Period], color: str) -> Series:
    """Figure `key` over `periods`, with the counts of each point in its marks."""
    figure = FIGURES[key]
    return Series(
        figure.name,
        [figure.value(p) for p in periods],
        color,
        key=figure.key,
        num=[float(figure.num(p)) for p in periods],
        den=None if figure.den is None else [float(figure.den(p)) for p in periods],
    )


@dataclass(frozen=True)
class Card:
    """A headline number: the sum of figures `num` (a count), or over the sum of `den`
    (a ratio), over the window; drawn by chart `chart`."""

    title: str
    chart: str
    num: tuple[str, ...]
    den: tuple[str, ...] = ()
    """Figures whose denominators (or, for a count figure, whose values) are summed
    below; empty: the card is a count."""
    money: bool = False


def card_value(card: Card, window: Period) -> float | None:
    """The card's value over `window`, from the figures its chart draws."""
    n = sum(float(FIGURES[k].num(window)) for k in card.num)
    if not card.den:
        return n
    d = 0.0
    for key in card.den:
        figure = FIGURES[key]
        d += float((figure.den or figure.num)(window))
    return None if d == 0 else n / d


CARDS: tuple[Card, ...] = (
    Card("Runs", "outcomes", ("succeeded", "failed", "declined", "interrupted")),
    Card("Idle ticks", "no-run", ("idle",)),
    Card("Preflight failures", "no-run", ("preflight",)),
    Card("Success rate", "rates", ("success",), ("success",)),
    Card("First-try verified", "rates", ("first_try",), ("first_try",)),
    Card("PRs opened", "prs", ("prs",)),
    Card("Merged (of decided)", "grades", ("merged",), ("merged", "closed")),
    Card("Cost per PR", "cost-per-pr", ("cost_per_pr",), ("cost_per_pr",), money=True),
    Card("Cached input", "rates", ("cached_input",), ("cached_input",)),
    Card("Total cost", "cost", ("cost",), money=True),
)
"""The tab's cards, in order, each with the chart it sums."""


def definitions(keys: Sequence[str], closing: str) -> str:
    """What a chart's figures are, stated under it."""
    return "; ".join(FIGURES[k].definition for k in keys) + f". {closing}"
