"""Randomized, logged exposure of lessons: which lessons a builder or reviewer run shows.

```python
draw = draw_lessons(book.lessons, run_id=run_id, role=Role.BUILDER, kind=kind, rate=0.2)
view = context.without(draw.hidden_ids)          # held out or not applicable: gone
block, shown = render(view)                       # the prompt, within its budget
scope.exposures = draw.record(shown)              # for the record and the distiller
```

Pure: the draw is a hash of (run id, lesson id), so a replay reproduces it.
"""

from agent_loop_common.exposure._draw import (
    PROVEN_HOLDOUT_SHARE,
    LessonDraw,
    draw_lessons,
    holdout_of,
    uniform_draw,
    work_kind_of,
)

__all__ = [
    "PROVEN_HOLDOUT_SHARE",
    "LessonDraw",
    "draw_lessons",
    "holdout_of",
    "uniform_draw",
    "work_kind_of",
]
