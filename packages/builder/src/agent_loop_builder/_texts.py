"""What the builder writes on GitHub: branch names, PR bodies, sub-issues, comments (pure).

Everything a model wrote passes through `agent_loop_common.texts.public_text` before the
agents' identity posts it: the claim protocol trusts markers *because* that identity
wrote them, so a marker inside model output must be made inert, a closing keyword
(`fixes #7`, `fixes other/repo#7`, an issue URL) aimed at another issue must not close it
when the pull request merges, and an `@mention` must not notify anyone. The pipeline's
own `Fixes #N` and markers are added after sanitizing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent_loop_common.staging import ChangePlan, PlannedIssue
from agent_loop_common.texts import public_text
from agent_loop_common.verify import instructions_change_note

__all__ = [
    "SubIssueMarker",
    "branch_name",
    "commit_message",
    "decomposition_comment",
    "parse_sub_issue_marker",
    "pr_body",
    "rejection_comment",
    "skip_comment",
    "slugify",
    "sub_issue_body",
]

_SLUG_DROP = re.compile(r"[^a-z0-9]+")
_MARKER = re.compile(
    r"<!-- agent-loop:sub-issue v1 spec=(\d+) key=([A-Za-z0-9][A-Za-z0-9_.-]{0,63}) "
    r"run=([A-Za-z0-9._-]{1,128})(?: depth=([1-9]\d{0,2}))? -->"
)
_NOTES_CHARS = 6_000
_SECTION_CHARS = 20_000


def slugify(title: str, max_chars: int = 40) -> str:
    """A branch-safe slug of a title: lowercase letters, digits and single dashes."""
    slug = _SLUG_DROP.sub("-", title.casefold()).strip("-")
    return slug[:max_chars].rstrip("-")


def branch_name(prefix: str, number: int, title: str) -> str:
    """The pinned branch of an issue: `<prefix>issue-<N>-<slug>` (no slug if none is left)."""
    slug = slugify(title)
    return f"{prefix}issue-{number}" + (f"-{slug}" if slug else "")


def identity(run_id: str, deployment: str) -> str:
    """The run's identity line, at the end of everything the builder posts."""
    return f"agent-loop builder · run `{run_id}` · deployment `{deployment}`"


def commit_message(issue: int, plan: ChangePlan, run_id: str) -> str:
    """One commit for the whole change; the PR body, not the commit, closes the issue."""
    summary = public_text(plan.summary, limit=2_000)
    return f"{public_text(plan.title, limit=200)}\n\n{summary}\n\nRefs #{issue}\nAgent-Loop-Run: {run_id}\n"


def pr_body(
    *,
    issue: int,
    plan: ChangePlan,
    notes: str,
    run_id: str,
    deployment: str,
    base_sha: str,
    tests: str = "",
) -> str:
    """Summary, `Fixes #N`, what changed and why, the tests' evidence, the verifier's
    notes, the run's identity (`tests`: the pipeline's own `## Tests` section, already
    safe to post). A change to the agents' own instruction files is called out first,
    above everything the model wrote."""
    files = "\n".join(
        f"- `{path}`" + (" (deleted)" if content is None else "")
        for path, content in sorted(plan.files.items())
    )
    why = public_text(plan.body, allow_closing=issue) or "(no further description)"
    note = instructions_change_note(list(plan.files))
    return "\n".join(
        [
            *([f"> [!WARNING]\n> {note}", ""] if note else []),
            public_text(plan.summary, allow_closing=issue, limit=4_000),
            "",
            f"Fixes #{issue}",
            "",
            "## What changed and why",
            why,
            "",
            "### Files",
            files,
            "",
            *([tests, ""] if tests else []),
            "## Verifier notes",
            public_text(notes, allow_closing=issue, limit=_NOTES_CHARS) or "(none)",
            "",
            "---",
            f"Opened by {identity(run_id, deployment)} · base `{base_sha[:12]}`",
        ]
    )


@dataclass(frozen=True, slots=True)
class SubIssueMarker:
    """The machine-readable marker in a sub-issue's body."""

    spec: int
    key: str
    run: str
    depth: int = 1
    """How many decompositions deep the sub-issue is (a spec's sub-issue: 1)."""

    def render(self) -> str:
        return (
            f"<!-- agent-loop:sub-issue v1 spec={self.spec} key={self.key} run={self.run} "
            f"depth={self.depth} -->"
        )


def parse_sub_issue_marker(body: str) -> SubIssueMarker | None:
    """The sub-issue marker in `body`, if there is one (a marker without depth is 1 deep).

    Only trust it when the agents' identity wrote the issue: anyone can copy a marker.
    """
    match = _MARKER.search(body)
    if match is None:
        return None
    return SubIssueMarker(
        spec=int(match.group(1)),
        key=match.group(2),
        run=match.group(3),
        depth=int(match.group(4) or 1),
    )


def sub_issue_body(
    item: PlannedIssue,
    *,
    spec: int,
    depends_on: Sequence[int],
    run_id: str,
    deployment: str,
    depth: int = 1,
) -> str:
    """A sub-issue: the model's work item, then its place in the spec and its upstreams."""
    lines = [public_text(item.body, limit=50_000), "", "---", f"Part of #{spec}."]
    if depends_on:
        lines.append("depends on " + ", ".join(f"#{n}" for n in depends_on))
    lines += [
        f"Filed by {identity(run_id, deployment)}.",
        SubIssueMarker(spec=spec, key=item.key, run=run_id, depth=depth).render(),
    ]
    return "\n".join(lines)


def decomposition_comment(
    *, filed: Sequence[tuple[PlannedIssue, int]], summary: str, run_id: str, deployment: str
) -> str:
    """The spec issue's closing comment: the sub-issues in filing order with their upstreams."""
    numbers = {item.key: number for item, number in filed}
    rows = [
        f"- #{number} {public_text(item.title, limit=200)}"
        + (
            " (depends on " + ", ".join(f"#{numbers[k]}" for k in item.depends_on) + ")"
            if item.depends_on
            else ""
        )
        for item, number in filed
    ]
    return "\n".join(
        [
            f"Split into {len(filed)} sub-issue(s), filed in dependency order:",
            "",
            *rows,
            "",
            public_text(summary, limit=4_000),
            "",
            "Independent sub-issues can be picked up at once; the others wait for their "
            "upstreams to close. Closing this spec issue.",
            "",
            f"— {identity(run_id, deployment)}",
        ]
    )


def rejection_comment(*, tries: int, notes: str, run_id: str, deployment: str) -> str:
    """The feedback comment after the last verifier rejection."""
    return "\n".join(
        [
            f"I could not produce a change for this issue that passed verification in {tries} "
            "tries, so nothing was pushed. The verifier's last notes:",
            "",
            "> " + public_text(notes, limit=_NOTES_CHARS).replace("\n", "\n> "),
            "",
            "Clarifying the issue (a comment or an edit) lets the builder try again sooner.",
            "",
            f"— {identity(run_id, deployment)}",
        ]
    )


def skip_comment(*, reason: str, run_id: str, deployment: str) -> str:
    """The comment when the builder declines an issue (`skip_issue`)."""
    return "\n".join(
        [
            "The builder is leaving this issue alone for now:",
            "",
            "> " + public_text(reason, limit=_NOTES_CHARS).replace("\n", "\n> "),
            "",
            "A comment or an edit of the issue lets it try again.",
            "",
            f"— {identity(run_id, deployment)}",
        ]
    )
