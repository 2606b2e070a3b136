"""What an agent may stage: the path and content policy (pure).

The policy is the last line between a model's proposal and a commit on the repository,
so it is deliberately narrow: files inside the repository, no git metadata, no CI
configuration (CI runs with the repository's secrets) and no repository configuration
that decides who reviews what (`.github/`, `CODEOWNERS`), text only, and bounded in size
and count so one run cannot produce an unreviewable change.

Protected paths are trees, not strings: a path is refused when it is, lies under, or
contains a protected path (`path_relation`), so staging a file at `.github` (which
would replace the whole directory) or deleting `.github/workflows` is refused like
editing `.github/workflows/ci.yml`. A path that is a directory on the base branch is
refused by the staging tools, which can look at the base (`is_dir_at_base`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_loop_common.staging._errors import PolicyViolation
from agent_loop_common.staging._paths import (
    PathRelation,
    glob_matches,
    normalize_path,
    path_relation,
)

if TYPE_CHECKING:
    from agent_loop_common.settings import Settings

__all__ = [
    "CI_GLOBS",
    "INSTRUCTION_GLOBS",
    "REPOSITORY_CONFIG_GLOBS",
    "StagingPolicy",
    "instruction_files",
]

CI_GLOBS: tuple[str, ...] = (
    ".github/workflows/",
    ".github/actions/",
    ".gitlab-ci.yml",
    ".circleci/",
    "Jenkinsfile",
    "azure-pipelines.yml",
    "azure-pipelines.yaml",
    ".azure-pipelines/",
    ".buildkite/",
    ".travis.yml",
    "bitbucket-pipelines.yml",
)
"""CI pipeline definitions: refused unless `StagingPolicy.allow_workflows`.

GitHub Actions workflows and the repository's own actions (which workflows run, with
the same secrets), and the pipeline files of GitLab CI, CircleCI, Jenkins, Azure
Pipelines, Buildkite, Travis CI and Bitbucket Pipelines.
"""

REPOSITORY_CONFIG_GLOBS: tuple[str, ...] = (".github/", ".gitlab/", "CODEOWNERS", "docs/CODEOWNERS")
"""Repository configuration that is always protected, whatever `allow_workflows` says.

Everything else under `.github/` and `.gitlab/` (`CODEOWNERS`, `dependabot.yml`,
templates, settings read by apps) and the other places GitHub reads `CODEOWNERS` from:
they decide who must review a change and what automation runs, so a change to them is
a change to the loop's own safeguards.
"""

INSTRUCTION_GLOBS: tuple[str, ...] = (
    "AGENTS.md",
    "**/AGENTS.md",
    "CLAUDE.md",
    ".github/copilot-instructions.md",
)
"""The agents' own instructions in a repository: `AGENTS.md` (root and nested),
`CLAUDE.md`, `.github/copilot-instructions.md`. They are shown to the agents and the
verifier and can name the test and setup commands, so a change to them is a change to
the agents' instructions: always called out to the verifier and at the top of the pull
request, refused outright with `StagingPolicy.protect_instructions`. (The last one is
under `.github/`, protected anyway.)"""


def instruction_files(paths: Iterable[str]) -> list[str]:
    """The normalized `paths` that are instruction files (`INSTRUCTION_GLOBS`), sorted."""
    return sorted({p for p in paths if any(glob_matches(p, g) for g in INSTRUCTION_GLOBS)})


_CI_REASON = (
    "CI configuration, which runs with the repository's secrets, and workflow changes "
    "are not allowed"
)
_CONFIG_REASON = (
    "protected repository configuration (it decides reviews, automation and CI), which "
    "agents never change"
)
_INSTRUCTIONS_REASON = (
    "one of the agents' own instructions, protected by AGENT_LOOP_PROTECT_INSTRUCTION_FILES"
)
_LEAVE_IT = " Leave it as it is and describe any needed change in the pull request body instead."


def _refusal(path: str, relation: PathRelation, pattern: str, what: str) -> str:
    if relation == "matches":
        where = f"'{path}' is {what} (it matches '{pattern}')."
    elif relation == "inside":
        where = (
            f"'{path}' lies under a path that is {what} (it matches '{pattern}'): creating "
            "it would replace that file with a directory."
        )
    else:
        where = (
            f"'{path}' contains paths that are {what} ('{pattern}'): a file at '{path}', or "
            "its deletion, would replace or remove all of them."
        )
    return where + _LEAVE_IT


@dataclass(frozen=True, kw_only=True)
class StagingPolicy:
    """Limits applied to every staged file, deletion and sub-issue.

    Checks raise `PolicyViolation` with a message the model can act on; the staging
    tools return that message to the model instead of failing the run.
    """

    allow_workflows: bool = False
    """Allow changes to CI pipeline definitions (`CI_GLOBS`: `.github/workflows/`, `.github/actions/`, other CI systems' files). Off: CI runs with the repository's secrets. The rest of `.github/` stays protected either way (`REPOSITORY_CONFIG_GLOBS`)."""
    protected_globs: tuple[str, ...] = ()
    """Further protected paths, e.g. `("**/*.pem", "deploy/")`; see `glob_matches`. They are protected as trees (see `path_relation`) and win over `allow_workflows`."""
    protect_instructions: bool = False
    """Refuse changes to the agents' own instruction files (`INSTRUCTION_GLOBS`). Off: such a change is allowed but called out to the verifier and at the top of the pull request."""
    allow_binary: bool = False
    """Allow content with NUL or other control characters (off: text files only)."""
    max_file_bytes: int = 256_000
    """Largest UTF-8 size of one staged file."""
    max_files: int = 40
    """Most paths one change may touch (writes and deletions together)."""
    max_total_bytes: int = 2_000_000
    """Largest UTF-8 size of all staged file contents together."""
    max_issues: int = 12
    """Most sub-issues one decomposition may stage."""
    max_title_chars: int = 200
    """Longest PR or issue title."""
    max_body_chars: int = 60_000
    """Longest PR body, issue body or reply (GitHub refuses bodies over 65,536)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> StagingPolicy:
        """What agents may stage, from the `AGENT_LOOP_*STAGED*` and path settings."""
        return cls(
            allow_workflows=settings.allow_workflow_changes,
            protected_globs=settings.protected_paths,
            protect_instructions=settings.protect_instruction_files,
            max_file_bytes=settings.max_staged_file_bytes,
            max_files=settings.max_staged_files,
            max_total_bytes=settings.max_staged_total_bytes,
            max_issues=settings.max_staged_issues,
        )

    def protected_reason(self, path: str) -> str | None:
        """Why normalized `path` is protected, or `None` when it may be changed.

        A path is protected when it is, lies under, or contains a protected path: the
        configured `protected_globs` first, then the instruction files (with
        `protect_instructions`), then `CI_GLOBS` (unless `allow_workflows`),
        then `REPOSITORY_CONFIG_GLOBS`. With `allow_workflows`, a path inside a CI
        pipeline definition may change even though it is also under `.github/`.
        """
        for pattern in self.protected_globs:
            relation = path_relation(path, pattern)
            if relation is not None:
                return _refusal(
                    path, relation, pattern, "protected and cannot be changed by an agent"
                )
        for pattern in INSTRUCTION_GLOBS if self.protect_instructions else ():
            relation = path_relation(path, pattern)
            if relation is not None:
                return _refusal(path, relation, pattern, _INSTRUCTIONS_REASON)
        if self.allow_workflows:
            if any(glob_matches(path, pattern) for pattern in CI_GLOBS):
                return None
        else:
            for pattern in CI_GLOBS:
                relation = path_relation(path, pattern)
                if relation is not None:
                    return _refusal(path, relation, pattern, _CI_REASON)
        for pattern in REPOSITORY_CONFIG_GLOBS:
            relation = path_relation(path, pattern)
            if relation is not None:
                return _refusal(path, relation, pattern, _CONFIG_REASON)
        return None

    def check_path(self, raw: object) -> str:
        """Normalize `raw` and refuse protected paths; returns the normalized path."""
        path = normalize_path(raw)
        reason = self.protected_reason(path)
        if reason is not None:
            raise PolicyViolation(reason)
        return path

    def check_content(self, path: str, content: object) -> str:
        """Refuse content that is not text or is too large; returns it unchanged."""
        if not isinstance(content, str):
            raise PolicyViolation(
                f"content for '{path}' must be a string holding the complete file text, "
                f"got {type(content).__name__}."
            )
        try:
            size = len(content.encode("utf-8"))
        except UnicodeEncodeError:
            raise PolicyViolation(
                f"content for '{path}' is not valid UTF-8 text (it has unpaired surrogates)."
            ) from None
        if size > self.max_file_bytes:
            raise PolicyViolation(
                f"'{path}' would be {size} bytes; the limit is {self.max_file_bytes} bytes per "
                "file. Split the code into smaller modules or change only what the task needs."
            )
        if not self.allow_binary and _looks_binary(content):
            raise PolicyViolation(
                f"content for '{path}' contains NUL or other control characters: only text "
                "files can be staged."
            )
        return content

    def check_write(
        self, raw_path: object, content: object, staged: Mapping[str, str | None]
    ) -> str:
        """Check staging `content` at `raw_path` on top of `staged`; returns the path."""
        path = self.check_path(raw_path)
        text = self.check_content(path, content)
        self._check_count(path, staged)
        _check_tree(path, staged)
        others = sum(
            len(v.encode("utf-8")) for p, v in staged.items() if v is not None and p != path
        )
        total = others + len(text.encode("utf-8"))
        if total > self.max_total_bytes:
            raise PolicyViolation(
                f"staging '{path}' would bring the change to {total} bytes; the limit is "
                f"{self.max_total_bytes}. Keep the change focused on the task."
            )
        return path

    def check_delete(self, raw_path: object, staged: Mapping[str, str | None]) -> str:
        """Check staging the deletion of `raw_path` on top of `staged`; returns the path."""
        path = self.check_path(raw_path)
        self._check_count(path, staged)
        return path

    def check_files(self, files: Mapping[str, str | None]) -> None:
        """Re-check a whole change (paths already normalized) before it is applied.

        The tools check each call as it happens; the pipeline calls this again right
        before writing, so a plan built or carried over any other way gets the same rules.
        """
        if len(files) > self.max_files:
            raise PolicyViolation(
                f"the change touches {len(files)} paths; the limit is {self.max_files}."
            )
        total = 0
        for raw_path, content in files.items():
            path = self.check_path(raw_path)
            if path != raw_path:
                raise PolicyViolation(f"path {raw_path!r} is not normalized (expected {path!r}).")
            if content is not None:
                total += len(self.check_content(path, content).encode("utf-8"))
                _check_tree(path, files)
        if total > self.max_total_bytes:
            raise PolicyViolation(
                f"the change is {total} bytes; the limit is {self.max_total_bytes}."
            )

    def _check_count(self, path: str, staged: Mapping[str, str | None]) -> None:
        if path not in staged and len(staged) >= self.max_files:
            raise PolicyViolation(
                f"the change already touches {len(staged)} paths, the limit. Keep the change "
                "focused on the task: unstage_file what is not needed, or submit as it is."
            )


def _check_tree(path: str, staged: Mapping[str, str | None]) -> None:
    """Refuse writing a file at `path` where the change also makes it a directory.

    A staged deletion does not conflict: deleting the file `a` and creating `a/b.py` is a
    valid change (a directory at the base is refused by the staging tools instead).
    """
    inside = path + "/"
    for other, content in staged.items():
        if content is not None and other.startswith(inside):
            raise PolicyViolation(
                f"'{path}' is a directory in this change ('{other}' is staged inside it): "
                "a path cannot be both a file and a directory. Stage files inside it one "
                "by one, or unstage_file the files inside it first."
            )
        if content is not None and path.startswith(other + "/"):
            raise PolicyViolation(
                f"'{other}' is staged as a file, so '{path}' cannot be created inside it. "
                f"Choose another path, or unstage_file '{other}' first."
            )


_BINARY = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def _looks_binary(content: str) -> bool:
    """NUL or C0 control characters other than tab, newline, carriage return, form feed."""
    return _BINARY.search(content) is not None
