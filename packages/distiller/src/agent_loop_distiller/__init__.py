"""agent_loop_distiller: graded history -> lessons memory, digest and a report.

```python
from agent_loop_distiller import run_once
run_once()                          # one tick in Flyte local mode (or remote=True)
```

In code (plain async, e.g. tests against the GitHub emulator):

```python
async with open_runtime(settings, Role.DISTILLER, memory_root=dir, transport=t) as rt:
    result = await run_distiller_tick(rt)     # TickResult; result.record: RunRecord | None
```

Modules, by concern (the same names as in the other agent packages where the concern
is the same): `_select` (pure: what a batch of records asks of a tick), `_candidates`
(the read-only look for news, and the batch under the claim), `_prompts`, `_tools`,
`_attempt` (the distiller agent's one run, no verifier), `_errors`, `_pipeline` (one
tick, its memory commit last), `_report` (the report's data and HTML), `env`
(Flyte), `__main__`; and the distiller's own domain: `_grading`, `_lessons`,
`_upkeep`, `_digest`, `_state`, and the lessons' measurement: `_outcomes`, `_effect`,
`_diagnosis`, `_measure`, `_judge` (budgeted model judgments of compliance), `_act`
(narrowing and rewording on a diagnosis), `_replay` (lessons replayed with and without
on mined instances, through the eval's task called by name).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_loop_distiller._act import Acted, act_on_diagnoses, parse_rewording
from agent_loop_distiller._attempt import Distillation, distill
from agent_loop_distiller._diagnosis import (
    Diagnosis,
    cues_of,
    diagnose,
    followed,
    narrow_scope,
    replay_line,
)
from agent_loop_distiller._digest import estimate_tokens, render_digest, work_lines
from agent_loop_distiller._effect import (
    EffectBook,
    EffectEstimate,
    EffectPolicy,
    Exposure,
    LessonEffect,
    MetricStats,
    SequentialTest,
    decide,
    estimate_effect,
    estimates_of,
    fold,
    forget_departed,
    graded_of,
    observe,
    replay_e_values,
)
from agent_loop_distiller._errors import (
    DistillationFailed,
    DistillerError,
    EditRefused,
    EditsRejected,
    ModelFailed,
)
from agent_loop_distiller._grading import GradingResult, follow_up, regrade
from agent_loop_distiller._judge import (
    Judged,
    ModelAsk,
    judge_compliance,
    parse_judgment,
)
from agent_loop_distiller._lessons import (
    Edit,
    Evidence,
    LessonEditor,
    LessonLimits,
    evidence_of,
    lesson_id,
    prescriptive_problem,
)
from agent_loop_distiller._measure import Measured, measure_effects, replay_tally, stratum_of
from agent_loop_distiller._outcomes import PullOutcomes, RunOutcomes, outcomes_of, pr_outcomes
from agent_loop_distiller._pipeline import (
    CLAIM_KEY,
    DistillerOptions,
    TickResult,
    run_distiller_tick,
)
from agent_loop_distiller._prompts import DISTILLER_MARKER, JUDGE_MARKER, REWORD_MARKER
from agent_loop_distiller._replay import (
    REPLAY_TASK,
    ReplayCall,
    Replayed,
    ReplayInstance,
    plan_replays,
    read_replay_instances,
    replay_candidates,
    run_replays,
    wants_replay,
    with_replays,
)
from agent_loop_distiller._report import (
    FILE_CHARS,
    TAB_NAMES,
    MemoryFile,
    ReportData,
    render_document,
    render_lessons,
    render_memory,
    render_metrics,
    render_runs,
    render_summary,
    render_tabs,
)
from agent_loop_distiller._select import (
    TickKind,
    failure_streak,
    learnable,
    plan_peek,
    retry_at,
)
from agent_loop_distiller._tools import lesson_tools
from agent_loop_distiller._upkeep import expire_stale, rank_lessons, refresh_from_usage

if TYPE_CHECKING:
    from agent_loop_common.runtime import TickSummary
    from agent_loop_common.settings import Settings

__all__ = [
    "CLAIM_KEY",
    "DISTILLER_MARKER",
    "FILE_CHARS",
    "JUDGE_MARKER",
    "REPLAY_TASK",
    "REWORD_MARKER",
    "TAB_NAMES",
    "Acted",
    "Diagnosis",
    "Distillation",
    "DistillationFailed",
    "DistillerError",
    "DistillerOptions",
    "Edit",
    "EditRefused",
    "EditsRejected",
    "EffectBook",
    "EffectEstimate",
    "EffectPolicy",
    "Evidence",
    "Exposure",
    "GradingResult",
    "Judged",
    "LessonEditor",
    "LessonEffect",
    "LessonLimits",
    "Measured",
    "MemoryFile",
    "MetricStats",
    "ModelAsk",
    "ModelFailed",
    "PullOutcomes",
    "ReplayCall",
    "ReplayInstance",
    "Replayed",
    "ReportData",
    "RunOutcomes",
    "SequentialTest",
    "TickKind",
    "TickResult",
    "act_on_diagnoses",
    "cues_of",
    "decide",
    "diagnose",
    "distill",
    "estimate_effect",
    "estimate_tokens",
    "estimates_of",
    "evidence_of",
    "expire_stale",
    "failure_streak",
    "fold",
    "follow_up",
    "followed",
    "forget_departed",
    "graded_of",
    "judge_compliance",
    "learnable",
    "lesson_id",
    "lesson_tools",
    "measure_effects",
    "narrow_scope",
    "observe",
    "outcomes_of",
    "parse_judgment",
    "parse_rewording",
    "plan_peek",
    "plan_replays",
    "pr_outcomes",
    "prescriptive_problem",
    "rank_lessons",
    "read_replay_instances",
    "refresh_from_usage",
    "regrade",
    "render_digest",
    "render_document",
    "render_lessons",
    "render_memory",
    "render_metrics",
    "render_runs",
    "render_summary",
    "render_tabs",
    "replay_candidates",
    "replay_e_values",
    "replay_line",
    "replay_tally",
    "retry_at",
    "run_distiller_tick",
    "run_once",
    "run_replays",
    "stratum_of",
    "wants_replay",
    "with_replays",
    "work_lines",
]


def run_once(
    *,
    target: int | None = None,
    remote: bool = False,
    settings: Settings | None = None,
    retry_now: bool = False,
) -> TickSummary:
    """Fire one `distiller_tick`: in Flyte local mode, or on the deployed cluster.

    Args:
        target: Must be `None`: the distiller works on the repository as a whole.
        remote: Run the deployed task on the cluster configured for the `flyte` CLI.
        settings: The configuration; `load_settings()` when omitted.
        retry_now: Do not wait out the back-off after failed ticks.
    """
    from agent_loop_common.runtime import run_tick
    from agent_loop_common.settings import load_settings
    from agent_loop_distiller.env import distiller_tick

    if target is not None:
        raise ValueError("the distiller takes no target: it works on the repository as a whole")
    return run_tick(settings or load_settings(), distiller_tick, remote=remote, retry_now=retry_now)
