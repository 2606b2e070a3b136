"""A repository's history as a script: issues filed, pull requests opened and merged.

The eval mines instances from merged pull requests, so its tests (and a vendored real
project) need a repository whose history is a sequence of issues and pull requests with
their file changes, merged in order, as people would have made it on GitHub. Each step
goes through the emulator's own operations (a push on a branch, a pull request opened
with GitHub's rules, merged on the server with a merge or squash commit), so the merge
commits, their parents, the pull requests' files and the issues they close are what
GitHub would report.

```python
history = emulator.seed_history([
    HistoryIssue("add", "add() subtracts", "It should add."),
    HistoryPull("fix-add", "Fix add()", {"calc.py": FIXED, "tests/test_calc.py": TEST},
                closes=("add",)),
    HistoryPull("docs", "Typo", {"README.md": "..."}),            # no issue, no test
    HistoryPull("late", "Slow one", {...}, merge=False),          # opened, not merged...
    HistoryPush("direct", "Release 1.0", {"CHANGES": "..."}),      # straight to main
    HistoryIssue("other", "Another bug"),
    HistoryEdit("other", body="Another bug, and how it was fixed"),  # a later edit
    HistoryMerge("late"),                                          # ...merged later on
])
history.numbers["fix-add"], history.merges["fix-add"]             # PR number, merge sha
```
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_loop_testing._emulator import GitHubEmulator

__all__ = [
    "History",
    "HistoryEdit",
    "HistoryIssue",
    "HistoryMerge",
    "HistoryPull",
    "HistoryPush",
    "HistoryStep",
    "seed_history",
]


@dataclass(frozen=True)
class HistoryIssue:
    """An issue filed by `author` (the owner by default)."""

    key: str
    """How later steps name it (`closes=("add",)`)."""
    title: str
    body: str = ""
    author: str | None = None
    labels: tuple[str, ...] = ()
    wait: timedelta = timedelta(0)
    """Time that passes before this step (the clock moves one second per write anyway)."""


@dataclass(frozen=True)
class HistoryPull:
    """A pull request: its branch gets one commit per change in `commits` (or the one
    `files` change), then it is opened against the default branch and merged."""

    key: str
    title: str
    files: Mapping[str, str | bytes | None] = field(default_factory=dict[str, "str | bytes | None"])
    """The change of its one commit: path -> new content, `None` deletes the file."""
    body: str = ""
    closes: tuple[str, ...] = ()
    """Keys of issues its body closes: a `Fixes #N` line is added for each."""
    links: tuple[str, ...] = ()
    """Keys of issues linked to it by hand (no closing keyword in the body)."""
    commits: tuple[Mapping[str, str | bytes | None], ...] = ()
    """Several commits on the branch instead of the one of `files`."""
    author: str | None = None
    merged_by: str | None = None
    method: str = "merge"
    """`merge` (a merge commit, two parents), `squash` (one commit, one parent) or
    `rebase` (each commit replayed on the base branch, the last one its merge commit)."""
    merge: bool = True
    """False: opened only; a later `HistoryMerge` merges it (other merges land between)."""
    wait: timedelta = timedelta(0)


@dataclass(frozen=True)
class HistoryPush:
    """A commit pushed straight to the default branch (no pull request): work that lands
    between the pull requests, as maintainers' direct commits do."""

    key: str
    message: str
    files: Mapping[str, str | bytes | None] = field(default_factory=dict[str, "str | bytes | None"])
    author: str | None = None
    wait: timedelta = timedelta(0)


@dataclass(frozen=True)
class HistoryMerge:
    """Merge a pull request opened by an earlier `HistoryPull(merge=False)`."""

    key: str
    merged_by: str | None = None
    method: str = "merge"
    wait: timedelta = timedelta(0)


@dataclass(frozen=True)
class HistoryEdit:
    """A person edits an earlier step's issue or pull request: a new `title` (a `renamed`
    event) or `body` (a revision in its edit history), as `by` (the owner by default)."""

    key: str
    title: str | None = None
    body: str | None = None
    by: str | None = None
    wait: timedelta = timedelta(0)


HistoryStep = HistoryIssue | HistoryPull | HistoryPush | HistoryMerge | HistoryEdit


@dataclass
class History:
    """What seeding made: numbers and merge commits by step key."""

    numbers: dict[str, int] = field(default_factory=dict[str, int])
    """Issue or pull request number of each step's key."""
    merges: dict[str, str] = field(default_factory=dict[str, str])
    """Merge commit of each merged pull request's key (and the commit of each push)."""


def seed_history(emulator: GitHubEmulator, steps: Sequence[HistoryStep]) -> History:
    """Play `steps` on `emulator` in order (see the module docstring).

    Raises:
        KeyError: a step names a key no earlier step made.
        ValueError: two steps share a key.
    """
    made = History()
    for step in steps:
        if step.wait:
            emulator.advance_clock(step.wait)
        if isinstance(step, HistoryEdit):
            emulator.edit_issue(
                made.numbers[step.key],
                title=step.title,
                body=step.body,
                by=step.by or emulator.owner,
            )
            continue
        if isinstance(step, HistoryMerge):
            number = made.numbers[step.key]
            made.merges[step.key] = emulator.merge_pull(
                number, by=step.merged_by, method=step.method
            )
            continue
        if step.key in made.numbers:
            raise ValueError(f"two steps are named {step.key!r}")
        if isinstance(step, HistoryPush):
            made.numbers[step.key] = 0
            made.merges[step.key] = emulator.push(
                emulator.default_branch,
                step.files,
                author=step.author or emulator.owner,
                message=step.message,
            )
            continue
        if isinstance(step, HistoryIssue):
            made.numbers[step.key] = emulator.add_issue(
                step.title, step.body, author=step.author, labels=step.labels
            )
            continue
        author = step.author or emulator.owner
        branch = f"history/{step.key}"
        for change in step.commits or (step.files,):
            emulator.push(branch, change, author=author, message=step.title)
        lines = [step.body] if step.body else []
        lines += [f"Fixes #{made.numbers[key]}" for key in step.closes]
        number = emulator.open_pull(
            branch, title=step.title, body="\n\n".join(lines), author=author
        )
        made.numbers[step.key] = number
        for key in step.links:
            emulator.link_issue(number, made.numbers[key])
        if step.merge:
            made.merges[step.key] = emulator.merge_pull(
                number, by=step.merged_by, method=step.method
            )
    return made
