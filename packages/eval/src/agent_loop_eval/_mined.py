"""What mining decided about each merged pull request: an instance, or a skip and why.

The instances go to the JSON lines file (`Instance`); every skipped pull request goes to
a sidecar next to it (`<file stem>.skipped.jsonl`), one `SkippedPull` per line. Together
they are what a later run already knows: it mines only merges that are in neither, so a
second run adds only new merges and never validates a known pull request again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, field_serializer, field_validator

from agent_loop_eval._instance import InstanceFileError, iter_instances
from agent_loop_eval._problems import read_text, validation_line

__all__ = [
    "SkipReason",
    "SkippedPull",
    "append_skipped",
    "known_pulls",
    "read_skipped",
    "skipped_path",
]


class SkipReason(StrEnum):
    """Why a merged pull request is not an instance (cheapest checks first)."""

    NO_LINKED_ISSUE = "no_linked_issue"
    """It closes no issue of the repository (no closing keyword in its body, no link),
    or it was merged into another branch than the default one."""
    NO_TEST_CHANGE = "no_test_change"
    """It changes no test file: there is no hidden test to take from it."""
    NO_CODE_CHANGE = "no_code_change"
    """It changes only test files: there is no fix to ask for."""
    TOO_LARGE = "too_large"
    """It changes more files or lines than mining takes (`MineLimits`)."""
    UNTRUSTED_ISSUE = "untrusted_issue"
    """A linked issue is not from a trusted source, or its text was last changed by
    someone below the trust rule (the rule live work uses)."""
    EDITED_AFTER_FIX = "edited_after_fix"
    """A linked issue's text was changed after the pull request was opened (its fix was
    known then, so the change may hint at it) and the text before cannot be told: a
    revision deleted from its history, a history not kept from its creation, a rename
    whose old title GitHub does not name."""
    BINARY_CHANGE = "binary_change"
    """It changes a file that is not UTF-8 text: a unified diff cannot carry it."""
    SETUP_FAILED = "setup_failed"
    """The tests cannot judge it at the base: no test command, the sandbox is off, the
    setup failed, the command did not start, or it names no test outcomes (no JUnit)."""
    NOTHING_FAILS_BEFORE = "nothing_fails_before"
    """No test of its test change fails at the base and passes with the fix."""
    FLAKY = "flaky"
    """Some tests fail before and pass after, but each changed its outcome between two
    runs of the same tree: none is kept."""


class SkippedPull(BaseModel):
    """One merged pull request that is not an instance, and why (one sidecar line)."""

    model_config = ConfigDict(frozen=True)

    pull_number: int
    """The pull request's number."""
    reason: SkipReason
    """Why it was skipped."""
    detail: str = ""
    """What was found, for people (which issue, which file, how many tests)."""
    merged_at: datetime
    """When it was merged (UTC)."""
    title: str = ""
    """The pull request's title, for the summary."""

    @field_validator("merged_at", mode="after")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @field_serializer("merged_at")
    def _github_time(self, value: datetime) -> str:
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def skipped_path(instances: Path) -> Path:
    """The sidecar of an instances file: `x/instances.jsonl` -> `x/instances.skipped.jsonl`."""
    return instances.with_name(f"{instances.stem}.skipped.jsonl")


def read_skipped(path: Path) -> list[SkippedPull]:
    """The sidecar's skipped pull requests (none when the file does not exist).

    Raises:
        InstanceFileError: A line is not a skipped pull request.
    """
    if not path.exists():
        return []
    found: list[SkippedPull] = []
    try:
        text = read_text(path, "the sidecar is JSON lines, one skipped pull request a line")
    except ValueError as exc:
        raise InstanceFileError(str(exc)) from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            found.append(SkippedPull.model_validate(json.loads(line)))
        except ValidationError as exc:
            raise InstanceFileError(
                f"{path}:{number}: not a skipped pull request: {validation_line(exc)}"
            ) from None
        except ValueError as exc:
            raise InstanceFileError(f"{path}:{number}: not a skipped pull request: {exc}") from None
    return found


def append_skipped(path: Path, skipped: Iterable[SkippedPull]) -> None:
    """Add skipped pull requests to the sidecar (created with its folder when missing)."""
    lines = [json.dumps(s.model_dump(mode="json"), ensure_ascii=False) + "\n" for s in skipped]
    if not lines:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(lines))


def known_pulls(instances: Path) -> set[int]:
    """Pull requests an earlier run already decided about: the instances in `instances`
    and the skipped ones in its sidecar."""
    known = {s.pull_number for s in read_skipped(skipped_path(instances))}
    if instances.exists():
        known.update(i.pull_number for i in iter_instances(instances))
    return known
