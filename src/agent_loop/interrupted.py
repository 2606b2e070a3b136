"""What `agent-loop run` tells the operator after Ctrl-C (or SIGTERM) stopped a tick.

The tick itself stops at its next safe point, releases its claim and records the run
(`agent_loop_common.runtime.stop_on_signals`, `run_scoped`); the CLI then prints the
summary as usual, one line saying what was left behind, and exits 128 + the signal's
number (130 for SIGINT, 143 for SIGTERM), as a shell expects of an interrupted command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_loop_common.runtime import Interrupt, TickSummary

__all__ = ["farewell"]


def farewell(summary: TickSummary, interrupt: Interrupt) -> str:
    """One line (or a few, for a tick of several runs) on what the stop left behind."""
    runs = summary.runs or [summary]
    lines = [_one(run, interrupt) for run in runs]
    if len(lines) == 1:
        return lines[0]
    return f"agent-loop: {interrupt.name}: " + "; ".join(
        line.removeprefix(f"agent-loop: {interrupt.name}: ") for line in lines
    )


def _one(run: TickSummary, interrupt: Interrupt) -> str:
    head = f"agent-loop: {interrupt.name}:"
    where = f"{run.repo} " if run.repo else ""
    if run.interrupted and run.run_id:
        recorded = (
            f"the run is recorded as interrupted (run {run.run_id}, agent-loop status). "
            "Run it again at once."
        )
        if run.target_number is None:  # a repository-level claim: a ref, no comment
            return (
                f"{head} the {run.role.value}'s claim on {run.repo or 'the repository'} "
                f"released (claim ref deleted); nothing was written; {recorded}"
            )
        return (
            f"{head} claim on {where}{run.target_label} released (claim ref deleted, its "
            f"comment marked released); nothing was pushed or opened; {recorded}"
        )
    if run.interrupted:
        return f"{head} stopped before claiming anything: nothing to release, no run record."
    if run.idle or run.paused:
        return f"{head} the tick had nothing in progress: nothing was claimed or left."
    made = f" ({', '.join(run.links)})" if run.links else ""
    return (
        f"{head} the run was past its last safe point (writing its result) and finished "
        f"first: {run.outcome} on {where}{run.target_label}{made}; its claim was released "
        "and the run recorded."
    )
