"""Text the reviewer writes on GitHub: commit messages, replies, pass comments (pure).

Model-written text (summaries, replies, reasons, the commit message) and quoted feedback
pass through `agent_loop_common.texts.public_text`: nothing in them can pose as one of
the agents' invisible markers, close an issue on merge or notify anyone, and all of it is
bounded well under GitHub's 65,536-character comment limit.

Every pass that reaches a conclusion (a pushed fix, "no changes", a rejected fix, the note
that check fixing stopped) ends with exactly one comment by the agents' identity carrying
its pass marker:

```
<!-- agent-loop:review v1 head=<sha> run=<run-id> checks=<0|1> stop=<0|1> -->
```

`checks=1` marks a pass that worked on failing checks; counting them gives the check-fix
attempts per PR. `stop=1` marks the note that check fixing stopped. The count lives on
the PR rather than in memory so every run sees it in the comments it reads anyway (no
extra request, no memory key), it survives a lost memory store, and a person can see it.
Only markers written by the agents' identity count; malformed ones are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agent_loop_common.claims import CommentLike, is_run_id
from agent_loop_common.texts import public_text
from agent_loop_common.verify import instructions_change_note

__all__ = [
    "PassHistory",
    "PassMarker",
    "commit_message",
    "no_changes_body",
    "parse_pass_markers",
    "pass_history",
    "quote_reply_body",
    "rejected_body",
    "render_pass_marker",
    "stop_body",
    "stop_note",
    "summary_body",
]

_TEXT_CHARS = 20_000
_QUOTE_LINES = 4
_WHO = "agent-loop **reviewer**"
_MARKER = re.compile(r"<!--\s*agent-loop:review\s+v1\s+(.*?)-->", re.DOTALL)
_SHA = re.compile(r"\A[0-9a-f]{7,64}\Z")
_FLAG = ("0", "1")
_KEYS = ("head", "run", "checks", "stop")


@dataclass(frozen=True, slots=True)
class PassMarker:
    """One concluded reviewer pass on a PR."""

    head: str
    """The head commit the pass reviewed."""
    run: str
    """The run id of the pass."""
    checks: bool
    """Whether the pass worked on failing checks (one check-fix attempt)."""
    stop: bool
    """Whether this comment says that check fixing stopped."""


def render_pass_marker(marker: PassMarker) -> str:
    """The marker as an invisible HTML comment.

    Raises:
        ValueError: the head is not a hex sha or the run id is malformed.
    """
    if not _SHA.match(marker.head) or not is_run_id(marker.run):
        raise ValueError(f"cannot render a pass marker for {marker!r}")
    return (
        f"<!-- agent-loop:review v1 head={marker.head} run={marker.run} "
        f"checks={int(marker.checks)} stop={int(marker.stop)} -->"
    )


def parse_pass_markers(text: str) -> list[PassMarker]:
    """The valid pass markers in `text`, in order (anything malformed is skipped)."""
    found: list[PassMarker] = []
    for match in _MARKER.finditer(text):
        fields: dict[str, str] = {}
        for token in match.group(1).split():
            key, sep, value = token.partition("=")
            if not sep or key not in _KEYS or key in fields:
                fields = {}
                break
            fields[key] = value
        if set(fields) != set(_KEYS):
            continue
        if not _SHA.match(fields["head"]) or not is_run_id(fields["run"]):
            continue
        if fields["checks"] not in _FLAG or fields["stop"] not in _FLAG:
            continue
        found.append(
            PassMarker(
                head=fields["head"],
                run=fields["run"],
                checks=fields["checks"] == "1",
                stop=fields["stop"] == "1",
            )
        )
    return found


@dataclass(frozen=True, slots=True)
class PassHistory:
    """What the reviewer's own markers on one PR add up to."""

    passes: int = 0
    """Concluded passes."""
    check_fixes: int = 0
    """Passes that worked on failing checks."""
    stopped: bool = False
    """Whether the note that check fixing stopped was posted."""


def pass_history(comments: Iterable[CommentLike], *, agent_login: str) -> PassHistory:
    """Add up the pass markers in the comments written by `agent_login`."""
    agent = agent_login.casefold()
    passes = check_fixes = 0
    stopped = False
    for comment in comments:
        if comment.user.login.casefold() != agent:
            continue
        for marker in parse_pass_markers(comment.body):
            passes += 1
            check_fixes += int(marker.checks)
            stopped = stopped or marker.stop
    return PassHistory(passes=passes, check_fixes=check_fixes, stopped=stopped)


def _text(text: str, limit: int = _TEXT_CHARS) -> str:
    return public_text(text, limit=limit)


def commit_message(*, pr: int, summary: str, run_id: str, addressed: int) -> str:
    """The fix commit's message: a subject line, the summary and a run trailer.

    The summary is the model's: sanitized like every public text, since GitHub acts on
    closing keywords in commit messages when they reach the default branch.
    """
    clean = _text(summary)
    first = " ".join(clean.split())[:60] or "address review feedback"
    return (
        f"reviewer: {first} (#{pr})\n\n{clean}\n\n"
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
    tests: str = "",
    changed: Sequence[str] = (),
) -> str:
    """The one summary comment after a pushed fix (`tests`: the pipeline's own `## Tests`
    section with the evidence the fix was pushed on, already safe to post; `changed`:
    the paths the fix touched, so a change to the agents' own instructions is called
    out first)."""
    note = instructions_change_note(list(changed))
    parts = [
        f"🔧 {_WHO} pushed `{new_head[:7]}` on top of `{old_head[:7]}` (run `{run_id}`).",
        *([f"> [!WARNING]\n> {note}"] if note else []),
        _text(summary),
        f"Replied to {replies} comment(s). The strict verifier passed the fix on try {tries}.",
    ]
    if tests:
        parts.append(tests)
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
        "The last try's notes (the tests' verdict or the verifier's):",
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
    lines = public_text(quote).splitlines()[:_QUOTE_LINES] or ["(no text)"]
    quoted = "\n".join(f"> {line}" for line in lines)
    link = f" ([comment]({url}))" if url else ""
    return f"{quoted}\n\n@{author}{link}: {_text(reply)}"
