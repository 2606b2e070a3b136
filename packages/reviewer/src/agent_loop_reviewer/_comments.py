"""Text the reviewer writes on GitHub: commit messages, replies and pass comments (pure).

Model-written text (summaries, replies, reasons) and quoted feedback pass through
`safe_text`, so nothing in them can pose as one of the agents' invisible markers, and
are bounded well under GitHub's 65,536-character comment limit. Each pass comment ends
with its pass marker (see `_markers`).
"""

from __future__ import annotations

from agent_loop_common.claims import safe_text
from agent_loop_reviewer._markers import PassMarker, render_pass_marker

__all__ = [
    "commit_message",
    "no_changes_body",
    "quote_reply_body",
    "rejected_body",
    "stop_body",
    "stop_note",
    "summary_body",
]

_TEXT_CHARS = 20_000
_QUOTE_LINES = 4
_WHO = "agent-loop **reviewer**"


def _text(text: str, limit: int = _TEXT_CHARS) -> str:
    clean = safe_text(text).strip()
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def commit_message(*, pr: int, summary: str, run_id: str, addressed: int) -> str:
    """The fix commit's message: a subject line, the summary and a run trailer."""
    first = " ".join(summary.split())[:60] or "address review feedback"
    return (
        f"reviewer: {first} (#{pr})\n\n{summary.strip()[:_TEXT_CHARS]}\n\n"
        f"Addresses {addressed} review comment(s).\n\nAgent-Loop-Run: {run_id}\n"
    )


def stop_note(check_fixes: int) -> str:
    """One paragraph saying that fixing failing checks stopped."""
    return (
        f"⏹️ {_WHO} stopped fixing the failing checks of this pull request after "
        f"{check_fixes} attempt(s). A person's comment, review or push still starts a review."
    )


def summary_body(
    *,
    old_head: str,
    new_head: str,
    summary: str,
    run_id: str,
    replies: int,
    tries: int,
    marker: PassMarker,
    stop: str = "",
) -> str:
    """The one summary comment after a pushed fix."""
    parts = [
        f"🔧 {_WHO} pushed `{new_head[:7]}` on top of `{old_head[:7]}` (run `{run_id}`).",
        _text(summary),
        f"Replied to {replies} comment(s). The strict verifier passed the fix on try {tries}.",
    ]
    if stop:
        parts.append(stop)
    parts.append(render_pass_marker(marker))
    return "\n\n".join(parts)


def no_changes_body(
    *, head: str, reason: str, run_id: str, marker: PassMarker, stop: str = ""
) -> str:
    """The short comment of a pass that found nothing to change, naming the head reviewed."""
    parts = [
        f"✅ {_WHO} reviewed head `{head[:7]}` (run `{run_id}`): no changes needed.",
        _text(reason),
    ]
    if stop:
        parts.append(stop)
    parts.append(render_pass_marker(marker))
    return "\n\n".join(parts)


def rejected_body(
    *, head: str, tries: int, notes: str, run_id: str, marker: PassMarker, stop: str = ""
) -> str:
    """The comment of a pass whose every try failed verification (nothing pushed)."""
    parts = [
        f"⚠️ {_WHO} reviewed head `{head[:7]}` (run `{run_id}`), but no fix passed "
        f"verification in {tries} tr{'y' if tries == 1 else 'ies'}, so nothing was pushed.",
        "The verifier's last notes:",
        _text(notes, 4_000),
        "A new comment, review or push starts another pass.",
    ]
    if stop:
        parts.append(stop)
    parts.append(render_pass_marker(marker))
    return "\n\n".join(parts)


def stop_body(*, check_fixes: int, marker: PassMarker) -> str:
    """The note of a pass whose only work was to say that check fixing stopped."""
    return f"{stop_note(check_fixes)}\n\n{render_pass_marker(marker)}"


def quote_reply_body(*, author: str, url: str, quote: str, reply: str) -> str:
    """A conversation-level reply: the quoted feedback, a link to it, and the answer."""
    lines = safe_text(quote).strip().splitlines()[:_QUOTE_LINES] or ["(no text)"]
    quoted = "\n".join(f"> {line}" for line in lines)
    link = f" ([comment]({url}))" if url else ""
    return f"{quoted}\n\n@{author}{link}: {_text(reply)}"
