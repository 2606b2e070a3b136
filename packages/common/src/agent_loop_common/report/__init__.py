"""The Flyte report of one recorded run (builder and reviewer ticks), as escaped HTML.

```python
await flyte.report.log.aio(run_report_html(record, heading="Builder tick", idle="..."))
```

Titles, errors, notes and trace arguments come from GitHub and models, so every value
is HTML-escaped before it reaches the report. `progress_html` lists a run's progress
events as the lines `agent-loop run` printed live (the distiller's report shows them too). The distiller renders its own, larger
report (metrics, memory, lessons) from the same escaping rules.
"""

from agent_loop_common.report._run import TRACE_ROWS, progress_html, run_report_html

__all__ = ["TRACE_ROWS", "progress_html", "run_report_html"]
