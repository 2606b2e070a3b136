"""agent_loop_distiller: graded history -> lessons memory, digest and a report.

```python
from agent_loop_distiller import run_once
run_once()                          # one pass in Flyte local mode (or remote=True)
```

In code (plain async, e.g. tests against the GitHub emulator):

```python
async with open_runtime(settings, Role.DISTILLER, memory_root=dir, transport=t) as rt:
    result = await run_distiller_pass(rt)     # PassResult; run_distiller_tick -> RunRecord | None
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_loop_distiller.digest import estimate_tokens, render_digest, work_lines
from agent_loop_distiller.distill import Distillation, distill
from agent_loop_distiller.errors import (
    DistillationFailed,
    DistillerError,
    EditRefused,
    EditsRejected,
    ModelFailed,
)
from agent_loop_distiller.grading import GradingResult, follow_up, regrade
from agent_loop_distiller.lessons import Edit, Evidence, LessonEditor, LessonLimits
from agent_loop_distiller.news import Backoff, PassKind
from agent_loop_distiller.pipeline import (
    CLAIM_KEY,
    DistillerOptions,
    PassResult,
    run_distiller_pass,
    run_distiller_tick,
)
from agent_loop_distiller.prompts import DISTILLER_MARKER
from agent_loop_distiller.tools import lesson_tools
from agent_loop_distiller.upkeep import expire_stale, rank_lessons, refresh_from_usage

if TYPE_CHECKING:
    from agent_loop_common.settings import Settings

__all__ = [
    "CLAIM_KEY",
    "DISTILLER_MARKER",
    "Backoff",
    "Distillation",
    "DistillationFailed",
    "DistillerError",
    "DistillerOptions",
    "Edit",
    "EditRefused",
    "EditsRejected",
    "Evidence",
    "GradingResult",
    "LessonEditor",
    "LessonLimits",
    "ModelFailed",
    "PassKind",
    "PassResult",
    "distill",
    "estimate_tokens",
    "expire_stale",
    "follow_up",
    "lesson_tools",
    "rank_lessons",
    "refresh_from_usage",
    "regrade",
    "render_digest",
    "run_distiller_pass",
    "run_distiller_tick",
    "run_once",
    "work_lines",
]


def run_once(*, remote: bool = False, settings: Settings | None = None) -> dict[str, str]:
    """Fire one `distiller_tick`: in Flyte local mode, or on the deployed cluster.

    Args:
        remote: Run the deployed task on the cluster configured for the `flyte` CLI.
        settings: The configuration; `load_settings()` when omitted.

    Returns:
        The task's summary (`{}` for an idle tick).
    """
    from agent_loop_common.runtime import run_task
    from agent_loop_common.settings import load_settings
    from agent_loop_distiller.env import distiller_tick

    result: dict[str, str] = run_task(settings or load_settings(), distiller_tick, remote=remote)
    return result
