"""One task instance, in SWE-bench's field names, and the JSON lines files that hold them.

An instance is a merged pull request that fixed an issue, frozen at the commit it was
merged onto: the issue's text is the task, the pull request's change to test files is
the hidden test (`test_patch`), the rest of its change is the reference fix (`patch`).
`FAIL_TO_PASS` and `PASS_TO_PASS` name the tests that decide whether a produced change
resolves it.

The field names are SWE-bench's (`instance_id`, `repo`, `base_commit`, `patch`,
`test_patch`, `problem_statement`, `hints_text`, `created_at`, `version`,
`FAIL_TO_PASS`, `PASS_TO_PASS`), so a file written here is a SWE-bench dataset file and a
SWE-bench file made elsewhere reads here: the test lists may be JSON-encoded strings
(how the published datasets store them), unknown fields (`environment_setup_commit`)
are ignored, and our own fields (`issue_numbers`, `pull_number`, `test_command`,
`setup_command`) have defaults that mean "as the builder would do it".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from agent_loop_eval._problems import read_text, validation_line

__all__ = [
    "Instance",
    "InstanceFileError",
    "instance_id",
    "instance_line",
    "iter_instances",
    "read_instances",
    "write_instances",
]

_ID = re.compile(r"^(?P<owner>[^/\s]+)__(?P<name>[^/\s]+)-(?P<number>\d+)$")


def instance_id(repo: str, pull_number: int) -> str:
    """SWE-bench's id of the instance mined from pull request `pull_number` of `repo`
    (`owner/name`): `owner__name-N`."""
    owner, _, name = repo.partition("/")
    if not owner or not name or "/" in name:
        raise ValueError(f"expected a repository as owner/name, got {repo!r}")
    return f"{owner}__{name}-{pull_number}"


class InstanceFileError(ValueError):
    """A line of an instances file is not an instance (the message names file and line)."""


class Instance(BaseModel):
    """One task: an issue of `repo` at `base_commit`, and the tests that judge a fix.

    Everything but `problem_statement` (and `hints_text`, empty here) is hidden from the
    agent under evaluation: it works on the repository at `base_commit` with the problem
    statement as its issue, and nothing from after the base (the fix, its tests, later
    commits) reaches it before scoring.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    instance_id: str
    """`owner__name-N`, N the pull request's number (`instance_id(repo, N)`)."""
    repo: str
    """The repository, `owner/name`."""
    base_commit: str
    """The commit the pull request was merged onto (its merge commit's first parent): the
    tree the agent starts from and the test patch is laid over."""
    problem_statement: str
    """The linked issue's title and body as they were when the fix's pull request was
    opened (a later edit could hint at the fix; an issue whose text was last edited by
    someone untrusted is not mined)."""
    patch: str = ""
    """The reference fix: the pull request's change to every file that is not a test
    file, as a git-format unified diff against `base_commit`. Never shown to the agent."""
    test_patch: str = ""
    """The pull request's change to test files, as a git-format unified diff against
    `base_commit`: laid over the produced change before scoring. Never shown to the agent."""
    FAIL_TO_PASS: list[str] = Field(default_factory=list[str])
    """Tests (pytest node ids, `tests/test_x.py::TestC::test_y[p]`) that fail at the base
    with the test patch and pass with the fix: a resolving change makes all of them pass."""
    PASS_TO_PASS: list[str] = Field(default_factory=list[str])
    """Tests that pass both before and after the fix (bounded): a resolving change keeps
    all of them passing."""
    created_at: datetime | None = None
    """When the pull request was created (UTC). An instance older than a model's training
    cut-off may be remembered by it: select fresh ones by date. Mining always sets it;
    `None` only for a file made elsewhere without it."""
    hints_text: str = ""
    """SWE-bench's comments before the fix; always empty here (comments are not mined)."""
    version: str = ""
    """SWE-bench's environment version; empty here (each instance sets itself up)."""
    issue_numbers: list[int] = Field(default_factory=list[int])
    """The issues the pull request closes, in the order the problem statement shows them."""
    pull_number: int = 0
    """The pull request's number (from `instance_id` when a file made elsewhere has none)."""
    test_command: str = ""
    """The test command the instance was validated with; empty: the one the builder would
    use at `base_commit` (`AGENT_LOOP_TEST_COMMAND`, else detected)."""
    setup_command: str = ""
    """The setup command it was validated with; empty: the builder's default setup (the
    zero-config Python environment, or `AGENTS.md`'s)."""

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _decode_test_list(cls, value: Any) -> Any:
        """SWE-bench's published datasets store the lists as JSON text."""
        if isinstance(value, str):
            try:
                return json.loads(value) if value.strip() else []
            except json.JSONDecodeError as exc:
                raise ValueError(f"not a JSON list of test ids: {exc}") from None
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        """A version written as a number by whoever made the file (`3.0`) is its text."""
        return str(value) if isinstance(value, int | float) else value

    @field_validator("created_at", mode="after")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        """A timestamp without a zone is UTC (GitHub's and SWE-bench's always are)."""
        if value is None or value.tzinfo is None:
            return None if value is None else value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    @field_serializer("created_at")
    def _github_time(self, value: datetime | None) -> str | None:
        """GitHub's and SWE-bench's form: `2024-05-01T12:00:00Z`."""
        return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%SZ")

    @model_validator(mode="after")
    def _pull_from_id(self) -> Instance:
        match = _ID.match(self.instance_id)
        if self.pull_number == 0 and match is not None:
            object.__setattr__(self, "pull_number", int(match.group("number")))
        return self


def instance_line(instance: Instance) -> str:
    """The instance as one JSON line (no newline), fields in declaration order."""
    return json.dumps(instance.model_dump(mode="json"), ensure_ascii=False)


def iter_instances(path: Path) -> Iterator[Instance]:
    """The instances of `path`: JSON lines (`.jsonl`, ours or SWE-bench's), or one JSON
    list (how some SWE-bench subsets are shared). Blank lines are skipped.

    Raises:
        InstanceFileError: A line (or the list) is not an instance.
        OSError: The file cannot be read.
    """
    try:
        text = read_text(path, "an instances file is JSON lines, one instance a line")
    except ValueError as exc:
        raise InstanceFileError(str(exc)) from None
    if text.lstrip().startswith("["):
        try:
            items: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InstanceFileError(f"{path}: not a JSON list: {exc}") from None
        if not isinstance(items, list):
            raise InstanceFileError(f"{path}: not a JSON list of instances")
        for index, item in enumerate(cast("list[Any]", items)):
            yield _parse(item, f"{path}: item {index + 1}")
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InstanceFileError(f"{path}:{number}: not JSON: {exc}") from None
        yield _parse(item, f"{path}:{number}")


def _parse(item: Any, where: str) -> Instance:
    try:
        return Instance.model_validate(item)
    except ValidationError as exc:
        raise InstanceFileError(f"{where}: not an instance: {validation_line(exc)}") from None
    except ValueError as exc:
        raise InstanceFileError(f"{where}: not an instance: {exc}") from None


def read_instances(path: Path) -> list[Instance]:
    """Every instance of `path` (see `iter_instances`)."""
    return list(iter_instances(path))


def write_instances(path: Path, instances: Iterable[Instance], *, append: bool = False) -> int:
    """Write (or with `append`, add) `instances` to `path` as JSON lines; the count written.

    The folder is created when missing. Appending is how mining grows a file: a line is
    written whole or not at all by one `write` of the text.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [instance_line(i) + "\n" for i in instances]
    with path.open("a" if append else "w", encoding="utf-8") as handle:
        handle.write("".join(lines))
    return len(lines)
