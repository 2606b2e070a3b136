"""Human-readable comment bodies around the markers.

A claim is one comment per run: posted when the run wins the target, edited in place by
heartbeats (no new notification for watchers) and edited once more on release, when it
keeps the claim marker and gains the release marker, so the state machine reads the
release at the claim's position in the thread. Backoff comments are separate, because
they must outlive the run and explain to a human why the agents stopped trying.
"""

from __future__ import annotations

from agent_loop_common.claims._marker import (
    BackoffMarker,
    DibsMarker,
    format_time,
    render_backoff,
    render_dibs,
    safe_text,
)

__all__ = ["backoff_body", "claim_body", "release_body", "release_note_body"]

_NOTE_LIMIT = 600


def _note(text: str) -> str:
    flat = " ".join(safe_text(text).split())
    return flat if len(flat) <= _NOTE_LIMIT else flat[: _NOTE_LIMIT - 1] + "…"


def _who(marker: DibsMarker) -> str:
    return f"agent-loop **{marker.role}** (run `{marker.run}`, deployment `{marker.agent}`)"


def claim_body(claim: DibsMarker) -> str:
    """The claim comment: who is working on the target and until when."""
    return (
        f"🔒 {_who(claim)} is working on this. The claim expires at "
        f"{format_time(claim.until)} unless the run renews it.\n\n{render_dibs(claim)}"
    )


def release_body(claim: DibsMarker, release: DibsMarker, note: str, *, ok: bool = True) -> str:
    """The claim comment after release: both markers, and what came of the run.

    Only a run that succeeded is marked with a tick; any other end says it stopped.
    """
    mark, verb = ("✅", "released this") if ok else ("⏹️", "stopped and released this")
    return (
        f"{mark} {_who(claim)} {verb} at {format_time(release.until)}: {_note(note)}\n\n"
        f"{render_dibs(claim)}\n{render_dibs(release)}"
    )


def release_note_body(claim: DibsMarker, release: DibsMarker, *, operator: str, ref: str) -> str:
    """The claim comment after an operator released the claim by hand (`agent-loop claims
    release`): both markers (the release in the holder's run's name, so the thread reads
    the target as free) and who released it."""
    what = {
        "deleted": "its claim ref was deleted",
        "marked released": "its claim ref was marked released",
        "moved": "its claim ref had already passed to another run",
        "none": "it had no claim ref left",
    }.get(ref, ref)
    return (
        f"⏹️ {_who(claim)}: claim released by the operator {_note(operator)} at "
        f"{format_time(release.until)} ({what}).\n\n"
        f"{render_dibs(claim)}\n{render_dibs(release)}"
    )


def backoff_body(marker: BackoffMarker, *, role: str, reason: str) -> str:
    """The backoff comment: the failure, the rest period, and how a human resets it."""
    return (
        f"⏸️ agent-loop **{role}** attempt {marker.attempts} failed (run `{marker.run}`): "
        f"{_note(reason)}\n\nNo new attempt before {format_time(marker.until)}. A comment from "
        f"a person or an edit of this thread resets the count.\n\n{render_backoff(marker)}"
    )
