"""What an agent may stage: the path and content policy (pure).

The policy is the last line between a model's proposal and a commit on the repository,
so it is deliberately narrow: files inside the repository, no git metadata, no CI
workflow files (a workflow change runs with the repository's secrets), text only, and
bounded in size and count so one run cannot produce an unreviewable change.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from agent_loop_common.staging._errors import PolicyViolation
from agent_loop_common.staging._paths import glob_matches, normalise_path

__all__ = ["WORKFLOW_GLOBS", "StagingPolicy"]

WORKFLOW_GLOBS: tuple[str, ...] = (".github/workflows/**",)
"""GitHub Actions workflow files: refused unless `StagingPolicy.allow_workflows`."""


@dataclass(frozen=True, kw_only=True)
class StagingPolicy:
    """Limits applied to every staged file, deletion and sub-issue.

    Checks raise `PolicyViolation` with a message the model can act on; the staging
    tools return that message to the model instead of failing the run.
    """

    allow_workflows: bool = False
    """Allow changes under `.github/workflows/` (off: workflows run with repository secrets)."""
    protected_globs: tuple[str, ...] = ()
    """Further protected paths, e.g. `("**/*.pem", "deploy/")`; see `glob_matches`."""
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

    def protected_reason(self, path: str) -> str | None:
        """Why normalised `path` is protected, or `None` when it may be changed."""
        if not self.allow_workflows and any(glob_matches(path, g) for g in WORKFLOW_GLOBS):
            return (
                f"'{path}' is a GitHub Actions workflow file and workflow changes are not "
                "allowed. Leave CI configuration as it is and describe any needed workflow "
                "change in the pull request body instead."
            )
        for pattern in self.protected_globs:
            if glob_matches(path, pattern):
                return (
                    f"'{path}' is protected (matches '{pattern}') and cannot be changed by an "
                    "agent. Leave it as it is and describe any needed change in the pull "
                    "request body instead."
                )
        return None

    def check_path(self, raw: object) -> str:
        """Normalise `raw` and refuse protected paths; returns the normalised path."""
        path = normalise_path(raw)
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
        """Re-check a whole change (paths already normalised) before it is applied.

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
                raise PolicyViolation(f"path {raw_path!r} is not normalised (expected {path!r}).")
            if content is not None:
                total += len(self.check_content(path, content).encode("utf-8"))
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


_BINARY = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def _looks_binary(content: str) -> bool:
    """NUL or C0 control characters other than tab, newline, carriage return, form feed."""
    return _BINARY.search(content) is not None
