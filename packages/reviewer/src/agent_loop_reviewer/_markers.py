"""The reviewer's pass marker: what each concluded pass leaves in its PR comment.

Every pass that reaches a conclusion (a pushed fix, "no changes", a rejected fix, the note
that check fixing stopped) ends with exactly one comment by the agents' identity carrying

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
from collections.abc import Iterable
from dataclasses import dataclass

from agent_loop_common.claims import CommentLike, is_run_id

__all__ = ["PassHistory", "PassMarker", "parse_pass_markers", "pass_history", "render_pass_marker"]

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
