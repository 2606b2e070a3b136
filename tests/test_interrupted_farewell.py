"""What `agent-loop run` says after a stop, for each kind of target (issue 31).

Before: a distiller stopped in its model call said its claim's "comment [was] marked
released", but a repository-level claim has no comment: only its ref exists.
"""

from __future__ import annotations

import signal

from agent_loop.interrupted import farewell
from agent_loop_common.records import Outcome, Role
from agent_loop_common.runtime import Interrupt, TickSummary


def _stopped(role: Role, target: str) -> TickSummary:
    return TickSummary(
        role=role,
        outcome=Outcome.INTERRUPTED,
        run_id="20261204T232601Z-f83d9f75",
        target=target,
        repo="acme/widgets",
    )


def test_an_issue_claim_says_its_ref_and_comment_were_released() -> None:
    said = farewell(_stopped(Role.BUILDER, "issue#5"), Interrupt(signal.SIGINT))
    assert said.startswith("agent-loop: SIGINT: claim on acme/widgets issue #5 released")
    assert "its comment marked released" in said


def test_a_repository_claim_names_the_agent_and_no_comment() -> None:
    said = farewell(_stopped(Role.DISTILLER, "repo"), Interrupt(signal.SIGTERM))
    assert said.startswith("agent-loop: SIGTERM: the distiller's claim on acme/widgets released")
    assert "comment" not in said
    assert "claim ref deleted" in said
    assert "recorded as interrupted (run 20261204T232601Z-f83d9f75" in said
