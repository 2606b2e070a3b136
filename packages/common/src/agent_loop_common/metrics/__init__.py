"""Metrics over run records and grades: pure functions with stated denominators.

Counts live in additive `Tally` / `GradeTally` models (so daily rollups sum exactly);
`summarize` turns them into `Metrics`, whose every rate is in [0, 1] or `None` when its
denominator is 0.
"""

from agent_loop_common.metrics._rollup import DailyRollup, fold_records, total_tally
from agent_loop_common.metrics._summary import Metrics, compute_metrics, summarize
from agent_loop_common.metrics._tally import (
    IDLE_OUTCOMES,
    SUCCESS_OUTCOMES,
    UNCOUNTED_OUTCOMES,
    VERIFIED_ROLES,
    GradeTally,
    Tally,
    tally_grades,
    tally_records,
)

__all__ = [
    "IDLE_OUTCOMES",
    "SUCCESS_OUTCOMES",
    "UNCOUNTED_OUTCOMES",
    "VERIFIED_ROLES",
    "DailyRollup",
    "GradeTally",
    "Metrics",
    "Tally",
    "compute_metrics",
    "fold_records",
    "summarize",
    "tally_grades",
    "tally_records",
    "total_tally",
]
