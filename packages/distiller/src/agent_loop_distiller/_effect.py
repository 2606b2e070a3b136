"""Each lesson's effect, decided without fooling itself. Pure, incremental.

The runs where a lesson applied are a randomized experiment: the draw showed it with a
known probability (`agent_loop_common.exposure`). For each such run and a binary outcome
`y` (higher is better), the inverse-probability-weighted difference

    z = (y - m) * (A / (1 - p) - (1 - A) / p)        A = 1 when shown, p = holdout

has expectation equal to the lesson's effect `tau` (shown minus held out) whatever `m` is,
as long as `m` is fixed before the run is seen; `m` is the running mean of the run's
stratum (repository and work kind), which takes the strata's differences out of `z`'s
variance.

Decisions are sequential tests that stay valid however often they are looked at: for
each null hypothesis a betting e-process multiplies its wealth by `1 + lambda * x` per
run, with `x` a bounded statistic whose mean is <= 0 under that null and `lambda` chosen
from the past only (aGRAPA: the estimated mean over the estimated second moment, capped
so wealth can never reach 0). Under the null the wealth is a nonnegative supermartingale,
so by Ville's inequality it reaches `1/a` with probability at most `a`:

- `help` (H0: tau <= 0) -> `proven`;
- `harm` (H0: tau >= 0) -> `harmful`;
- `below` (H0: tau >= +gain) and `above` (H0: tau <= -gain) both -> `no_effect`
  (the effect lies within +-gain: enough runs say it is too small to be worth its tokens).

`help` and `harm` each get half of `alpha`, so a lesson with no effect is wrongly
called proven or harmful with probability at most `alpha`, however long it is watched.

Replay evidence (`AGENT_LOOP_LESSON_REPLAY=on`: mined instances replayed with and
without the lesson) has e-values of its own, from the discordant pairs only
(`replay_e_values`: a sign test made always valid), and `decide` multiplies each into
the live one of the same direction: a product of e-processes on independent data is an
e-process, so the same thresholds keep the same error bound.

Every lesson also keeps per-stratum counts of both arms for every metric: the estimate
and its interval (Beta(1 + s, 1 + n - s) posteriors per arm and stratum, combined with the
strata's weights) are for people; the e-processes decide. State per lesson is a fixed set
of numbers, so a tick costs the same at any history size.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from agent_loop_common.records import LessonState, OutcomeMetric, RetiredLesson

__all__ = [
    "EffectBook",
    "EffectEstimate",
    "EffectPolicy",
    "Exposure",
    "Graded",
    "LessonEffect",
    "MetricStats",
    "Run",
    "SequentialTest",
    "decide",
    "estimate_effect",
    "estimates_of",
    "fold",
    "forget_departed",
    "graded_of",
    "observe",
    "remember_runs",
    "replay_e_values",
    "target_estimate",
]

_STRATA_LIMIT = 64
"""Most strata kept per lesson and metric (the rest pool into `other`)."""


@dataclass(frozen=True, slots=True)
class EffectPolicy:
    """How sure a decision must be, and what effect is worth a lesson."""

    alpha: float = 0.05
    """Chance, over a lesson's whole life, of calling a lesson with no effect proven or
    harmful (split evenly between the two)."""
    useful_gain: float = 0.10
    """The smallest effect worth showing a lesson for (absolute, on a 0..1 rate): a lesson
    whose effect is shown to lie within +-this is `no_effect`."""
    max_bet: float = 0.5
    """Share of the largest safe bet an e-process may stake on one run (< 1: wealth can
    never drop below half in one step)."""

    @property
    def threshold(self) -> float:
        """The e-value that decides proven or harmful (`2 / alpha`)."""
        return 2.0 / self.alpha


@dataclass(slots=True)
class SequentialTest:
    """One betting e-process: its wealth and what its next bet is chosen from.

    A bet on `x` (mean <= 0 under the null, `x >= x_min` surely) stakes
    `lambda = clip(mean / second moment, 0, max_bet / -x_min)`, both moments over the
    runs so far plus a pseudo-run (mean shrunk to 0, second moment 1), and adds
    `log1p(lambda * x)` to the log-wealth; `fold` does it for the four tests at once.
    """

    log_wealth: float = 0.0
    """Log of the e-value so far (0: no evidence)."""
    n: int = 0
    """Runs bet on."""
    sum_x: float = 0.0
    """Sum of the statistics seen (for the next bet)."""
    sum_x2: float = 0.0
    """Sum of their squares."""

    @property
    def e_value(self) -> float:
        """The e-value (capped so it always fits a float)."""
        return math.exp(min(self.log_wealth, 700.0))


@dataclass(slots=True)
class MetricStats:
    """Counts of one metric for one lesson: per stratum, shown and held-out runs."""

    strata: dict[str, list[int]] = field(default_factory=dict[str, list[int]])
    """Stratum (`repo|kind`) -> `[shown runs, shown successes, held-out runs, held-out
    successes]`."""

    def counts(self, stratum: str) -> list[int]:
        """The stratum's counts, created on first use (bounded by `_STRATA_LIMIT`)."""
        key = stratum if stratum in self.strata or len(self.strata) < _STRATA_LIMIT else "other"
        return self.strata.setdefault(key, [0, 0, 0, 0])


@dataclass(slots=True)
class LessonEffect:
    """Everything measured about one lesson: exposure counts, metrics, tests, state."""

    lesson_id: str
    metric: OutcomeMetric = OutcomeMetric.FIRST_TRY_TESTS
    """The metric its decision is taken on (the lesson's target)."""
    candidates: int = 0
    """Runs of any role that had the lesson in their book."""
    applicable: int = 0
    """Of those, runs where its scope matched the work."""
    shown: int = 0
    """Applicable runs that showed it."""
    held_out: int = 0
    """Applicable runs the draw held it out of."""
    complied: int = 0
    """Shown runs whose trace used what the lesson names (see `_diagnosis`)."""
    compliance_checked: int = 0
    """Shown runs the lesson had something to check for."""
    followed_when_held: int = 0
    """Held-out runs that used it anyway (the base rate compliance is compared with)."""
    held_checked: int = 0
    """Held-out runs the lesson had something to check for (0 in states written before
    it was kept: then every held-out run was checked)."""
    judged: int = 0
    """Of the checked runs (both arms), those decided by a model judgment (`_judge`)."""
    unknown: int = 0
    """Model judgments bought that gave no usable answer (counted as unknown)."""
    kind_use: dict[str, list[int]] = field(default_factory=dict[str, list[int]])
    """Work kind -> `[checked runs, runs that used it]`, both arms: where a lesson that
    is rarely used is used at all (what narrowing it keeps)."""
    tokens_shown: int = 0
    """Prompt tokens the lesson cost over every run that showed it."""
    metrics: dict[OutcomeMetric, MetricStats] = field(
        default_factory=dict[OutcomeMetric, MetricStats]
    )
    help: SequentialTest = field(default_factory=SequentialTest)
    harm: SequentialTest = field(default_factory=SequentialTest)
    below: SequentialTest = field(default_factory=SequentialTest)
    above: SequentialTest = field(default_factory=SequentialTest)
    state: LessonState = LessonState.PROVING
    decided_after: int = 0
    """Applicable runs observed when the state last changed (0: never)."""
    retired: RetiredLesson | None = None
    """Set once the lesson left the book for its effect, with the reason (kept)."""

    @property
    def held_compared(self) -> int:
        """Held-out runs the base compliance rate is over: those checked, or every
        held-out run in states written before `held_checked` was kept."""
        return self.held_checked if self.held_checked or self.judged else self.held_out


class EffectBook(BaseModel):
    """The distiller's measurement state: one `LessonEffect` per lesson of the book, and
    per departed lesson (retired, expired, or another repository's) up to a bound."""

    model_config = ConfigDict(extra="ignore")

    schema_version: str = "1.0"
    lessons: dict[str, LessonEffect] = Field(default_factory=dict[str, LessonEffect])
    """Least recently measured first (`touch`), so the oldest departed go first."""
    recent_run_ids: list[str] = Field(default_factory=list[str])
    """Runs already counted, newest last (bounded): a pass that re-reads records it
    already counted (it died before its ledger was saved) counts none twice."""
    pull_folded: dict[str, list[OutcomeMetric]] = Field(
        default_factory=dict[str, list[OutcomeMetric]]
    )
    """Builder run id -> the PR-level metrics of its pull request already settled:
    folded in (they are decided later than the record, one by one; each is folded
    once), or never to be (no CI result, an excused close) once the PR's fate is final.
    Kept while the run's grade is still read (see `_measure.fold_pull_outcomes`)."""
    judgments: dict[str, bool | None] = Field(default_factory=dict[str, bool | None])
    """Model judgments of compliance bought so far, `"<lesson id> <run id>"` -> followed
    (`None`: the answer was unusable), oldest first and bounded: never bought twice."""

    def effect(self, lesson_id: str) -> LessonEffect:
        """The lesson's state, created on first use."""
        found = self.lessons.get(lesson_id)
        if found is None:
            found = self.lessons[lesson_id] = LessonEffect(lesson_id=lesson_id)
        return found

    def touch(self, lesson_id: str) -> LessonEffect:
        """The lesson's state (created on first use), moved to the most recent end."""
        found = self.lessons.pop(lesson_id, None) or LessonEffect(lesson_id=lesson_id)
        self.lessons[lesson_id] = found
        return found


@dataclass(frozen=True, slots=True)
class Exposure:
    """One applicable lesson in one run, with the run's outcomes."""

    lesson_id: str
    stratum: str
    shown: bool
    holdout: float
    outcomes: Mapping[OutcomeMetric, bool | None]
    """The run's binary outcomes (`None`: not graded for this run, e.g. no evidence)."""


Graded = tuple[tuple[OutcomeMetric, float], ...]
"""A run's graded binary outcomes, `(metric, 1.0 or 0.0)`, ungraded ones left out
(`graded_of`): computed once per record, shared by all of its exposures."""

Run = tuple[str, bool, float, Graded]
"""One applicable exposure of a lesson, as `fold` takes it: `(stratum, shown, holdout,
graded)` (a plain tuple: a tick folds thousands)."""


def graded_of(outcomes: Mapping[OutcomeMetric, bool | None]) -> Graded:
    """The outcomes a run was graded on, as numbers (`None`: not graded, left out)."""
    return tuple((metric, 1.0 if y else 0.0) for metric, y in outcomes.items() if y is not None)


def observe(effect: LessonEffect, exposure: Exposure, policy: EffectPolicy) -> None:
    """Add one applicable run to the lesson's counts and bet its tests on it."""
    fold(
        effect,
        [(exposure.stratum, exposure.shown, exposure.holdout, graded_of(exposure.outcomes))],
        policy,
    )


def fold(
    effect: LessonEffect, runs: Iterable[Run], policy: EffectPolicy, *, late: bool = False
) -> None:
    """Add a lesson's applicable runs, in order, to its counts, and bet its tests on them.

    `late`: the runs were counted already (their records came earlier); only the
    outcomes decided since (their pull request's) are added, not the runs again.

    The same as one `observe` per run, float for float: each run updates the counts of
    every metric it was graded on (its stratum's, bounded by `_STRATA_LIMIT`) and, for the
    lesson's target metric with a holdout strictly between 0 and 1, steps the four
    e-processes with the stratum's mean so far as baseline (`SequentialTest` says how a
    bet is sized), on local variables. A tick calls it once per lesson touched, so the
    per-run cost is a few float operations, not calls and attribute lookups. `harm`
    bets on `-z`, so its sums are `help`'s negated, exactly; `test_effect_replay` pins
    the results of the per-run code this replaced.
    """
    target, max_bet, gain = effect.metric, policy.max_bet, policy.useful_gain
    h, k, b, a = effect.help, effect.harm, effect.below, effect.above
    n = h.n
    lw_h, lw_k, lw_b, lw_a = h.log_wealth, k.log_wealth, b.log_wealth, a.log_wealth
    sz, sz2, sb, sb2, sa, sa2 = h.sum_x, h.sum_x2, b.sum_x, b.sum_x2, a.sum_x, a.sum_x2
    metrics = effect.metrics
    strata_of: dict[OutcomeMetric, dict[str, list[int]]] = {}
    applicable = shown_runs = 0
    log1p = math.log1p
    for stratum, shown, p, graded in runs:
        applicable += 1
        shown_runs += shown
        for metric, y in graded:
            strata = strata_of.get(metric)
            if strata is None:
                strata = strata_of[metric] = metrics.setdefault(metric, MetricStats()).strata
            c = strata.get(stratum)
            if c is None:
                key = stratum if len(strata) < _STRATA_LIMIT else "other"
                c = strata.setdefault(key, [0, 0, 0, 0])
            if metric is target and 0 < p < 1:
                # `_z` and `_z_range`, inlined (this runs once per exposure), same floats
                m = (c[1] + c[3] + 0.5) / (c[0] + c[2] + 1)
                q = 1 - p
                z = (y - m) / q if shown else -(y - m) / p
                z_min, lo = -m / q, -(1 - m) / p
                if lo < z_min:
                    z_min = lo
                z_max, hi = (1 - m) / q, m / p
                if hi > z_max:
                    z_max = hi
                n1 = n + 1
                # help (x = z) and harm (x = -z) share the second moment, and harm's
                # unclipped stake is help's negated: at most one of them bets (a zero
                # stake leaves the wealth as it is)
                lam = (sz / n1) / ((sz2 + 1.0) / n1)
                if lam > 0.0:
                    cap = max_bet / -z_min if z_min < 0 else max_bet
                    lw_h += log1p((cap if lam > cap else lam) * z)
                elif lam < 0.0:
                    lam = -lam
                    cap = max_bet / z_max if -z_max < 0 else max_bet
                    lw_k += log1p((cap if lam > cap else lam) * -z)
                # below: x = gain - z, smallest gain - z_max
                x = gain - z
                x_min = gain - z_max
                lam = (sb / n1) / ((sb2 + 1.0) / n1)
                if lam > 0.0:
                    cap = max_bet / -x_min if x_min < 0 else max_bet
                    lw_b += log1p((cap if lam > cap else lam) * x)
                sb += x
                sb2 += x * x
                # above: x = z + gain, smallest z_min + gain
                x = z + gain
                x_min = z_min + gain
                lam = (sa / n1) / ((sa2 + 1.0) / n1)
                if lam > 0.0:
                    cap = max_bet / -x_min if x_min < 0 else max_bet
                    lw_a += log1p((cap if lam > cap else lam) * x)
                sa += x
                sa2 += x * x
                n = n1
                sz += z
                sz2 += z * z
            if shown:
                c[0] += 1
                c[1] += int(y)
            else:
                c[2] += 1
                c[3] += int(y)
    if not late:
        effect.applicable += applicable
        effect.shown += shown_runs
        effect.held_out += applicable - shown_runs
    h.n = k.n = b.n = a.n = n
    h.log_wealth, k.log_wealth, b.log_wealth, a.log_wealth = lw_h, lw_k, lw_b, lw_a
    h.sum_x, h.sum_x2, k.sum_x, k.sum_x2 = sz, sz2, -sz, sz2
    b.sum_x, b.sum_x2, a.sum_x, a.sum_x2 = sb, sb2, sa, sa2


def replay_e_values(wins: int, losses: int) -> tuple[float, float]:
    """The `(help, harm)` e-values of a lesson's paired replays: `wins` pairs resolved
    only with the lesson, `losses` only without it (the discordant pairs; a pair resolved
    on both sides or neither says nothing about the lesson and counts for nothing).

    The sign test (McNemar's, for paired binary outcomes) made always valid: with `q`
    the chance a discordant pair goes the lesson's way, `help` tests `q <= 1/2` with
    the likelihood ratio of `q'` against `1/2` averaged over `q'` uniform on `[1/2, 1]`:

        e = 2^n * 2 * integral_{1/2}^{1} q^w (1 - q)^l dq
          = w! l! / (n + 1)! * sum_{j <= w} C(n + 1, j)          (n = w + l)

    For every `q'` above one half the ratio is a supermartingale whenever `q <= 1/2`, so
    the average is too: by Ville's inequality it ever reaches `1/a` with probability at
    most `a`, however often it is looked at and whenever replays stop. `harm` is the
    mirror image (`q >= 1/2`). Six wins and no loss give 18.1 (the fixed-sample exact
    test's one-sided p is 1/64); eight and none give 56.8. Exact in integers, so a
    state replayed decides the same.
    """
    n = wins + losses
    if n == 0:
        return 1.0, 1.0

    def mixture(for_: int) -> float:
        tail = sum(math.comb(n + 1, j) for j in range(for_ + 1))
        return tail / ((n + 1) * math.comb(n, for_))

    return mixture(wins), mixture(losses)


def decide(
    effect: LessonEffect, policy: EffectPolicy, replay: tuple[int, int] = (0, 0)
) -> LessonState:
    """The state the evidence supports now (harm first: a hurting lesson goes first).

    `replay`: the lesson's discordant replay pairs `(wins, losses)`; their e-values
    (`replay_e_values`) multiply the live `help` and `harm` ones. Replays say nothing of
    `no_effect`, which only live runs decide. A retired lesson (`no_effect`, `harmful`)
    stays retired; a `proven` one is still watched (it keeps a small holdout) and
    retires if it turns harmful or useless.
    """
    if effect.state in (LessonState.NO_EFFECT, LessonState.HARMFUL):
        return effect.state
    bar = policy.threshold
    replay_help, replay_harm = replay_e_values(*replay)
    if effect.harm.e_value * replay_harm >= bar:
        return LessonState.HARMFUL
    if effect.below.e_value >= bar and effect.above.e_value >= bar:
        return LessonState.NO_EFFECT
    if effect.help.e_value * replay_help >= bar:
        return LessonState.PROVEN
    return effect.state


@dataclass(frozen=True, slots=True)
class EffectEstimate:
    """Shown minus held-out rate of one metric, pooled over strata, with its interval."""

    metric: OutcomeMetric
    effect: float
    """Posterior mean of the difference (shown - held out)."""
    low: float
    """Lower end of the 95% interval."""
    high: float
    """Upper end of the 95% interval."""
    shown: int
    """Shown runs counted (in strata where both arms were seen)."""
    held_out: int
    """Held-out runs counted (same strata)."""

    def text(self) -> str:
        """One line for people: `metric: +0.24 [+0.01, +0.47] (10 shown / 5 held out)`."""
        return (
            f"{self.metric.value}: {self.effect:+.2f} [{self.low:+.2f}, {self.high:+.2f}] "
            f"({self.shown} shown / {self.held_out} held out)"
        )


def estimates_of(effect: LessonEffect) -> list[EffectEstimate]:
    """The lesson's effect on every outcome measured so far (both arms seen in a
    stratum), in `OutcomeMetric` order: the target decides, the rest are for people
    (a lesson aimed at first-try tests may still cost merges or reverts)."""
    found = (
        estimate_effect(stats, metric)
        for metric in OutcomeMetric
        if (stats := effect.metrics.get(metric)) is not None
    )
    return [e for e in found if e is not None]


def _beta_mean_var(n: int, s: int) -> tuple[float, float]:
    a, b = 1.0 + s, 1.0 + n - s
    return a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))


def estimate_effect(stats: MetricStats, metric: OutcomeMetric) -> EffectEstimate | None:
    """The effect on `metric` with a 95% interval; `None` until both arms share a stratum.

    Each arm of each stratum has a Beta(1 + successes, 1 + failures) posterior; the
    strata's differences are weighted by their runs, and the interval is the normal
    approximation of the weighted sum. It is a fixed-sample interval, for people: the
    decisions use the e-processes, which stay valid under continuous monitoring.
    """
    usable = [c for c in stats.strata.values() if c[0] > 0 and c[2] > 0]
    if not usable:
        return None
    total = sum(c[0] + c[2] for c in usable)
    mean = var = 0.0
    for c in usable:
        w = (c[0] + c[2]) / total
        m1, v1 = _beta_mean_var(c[0], c[1])
        m0, v0 = _beta_mean_var(c[2], c[3])
        mean += w * (m1 - m0)
        var += w * w * (v1 + v0)
    half = 1.96 * math.sqrt(var)
    return EffectEstimate(
        metric,
        mean,
        mean - half,
        mean + half,
        sum(c[0] for c in usable),
        sum(c[2] for c in usable),
    )


def target_estimate(effect: LessonEffect) -> EffectEstimate | None:
    """The effect on the metric the lesson is decided on (`estimate_effect`)."""
    stats = effect.metrics.get(effect.metric)
    return estimate_effect(stats, effect.metric) if stats is not None else None


def forget_departed(book: EffectBook, live: Container[str], keep: int = 50) -> list[str]:
    """Drop the state of the least recently measured lessons that left the book, beyond
    the `keep` most recent; returns their ids.

    A lesson leaves the book when it retires (its `RetiredLesson`, with the diagnosis as
    reason, stays in the memory's retired archive), expires, or is retired by a person;
    late records may still count it for a while, and another repository's shared lesson
    never is in this book but is measured every tick, so it stays recent. Without this
    bound the state would grow with every lesson ever written, that is with history.
    """
    departed = [x for x in book.lessons if x not in live]
    gone = departed[: max(0, len(departed) - keep)]
    for lesson_id in gone:
        del book.lessons[lesson_id]
    return gone


def remember_runs(book: EffectBook, run_ids: Iterable[str], keep: int = 2_000) -> None:
    """Add counted run ids to the bounded dedupe window."""
    book.recent_run_ids = [*book.recent_run_ids, *run_ids][-keep:]
