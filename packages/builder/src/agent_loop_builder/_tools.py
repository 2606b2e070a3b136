"""The builder agent's tools: the issue, the repository at the base commit, its stages.

The repository tools (`list_files`, `read_file`, `search_code`) and the staging tools
come from `common`, shared with the reviewer; only `read_issue` is the builder's own.
With tests configured the agent also gets common's `run_tests`. The verifier gets the
read-only part, never a staging tool, reading the tree as the submitted change would
leave it, so every line that would be committed can be read.
"""

from __future__ import annotations

from agent_loop_common.checks import Checks, run_tests_tool
from agent_loop_common.repo import ReadLog, ReadTool, RepoSnapshot, StagedFiles, repo_tools
from agent_loop_common.staging import (
    ChangeStage,
    DecompositionStage,
    StagingPolicy,
    StagingTool,
    decomposition_tools,
    directory_lookup,
    implementation_tools,
)

__all__ = ["builder_tools", "issue_tool", "verifier_tools"]


def issue_tool(text: str) -> ReadTool:
    """`read_issue()`: the issue and its trusted comments, rendered by the pipeline."""

    async def read_issue() -> str:
        """Show the issue being worked on again: its title, body and comments from trusted people."""
        return text

    return read_issue


def builder_tools(
    issue_text: str,
    snapshot: RepoSnapshot,
    change: ChangeStage,
    spec: DecompositionStage,
    policy: StagingPolicy,
    checks: Checks | None = None,
    *,
    may_decompose: bool = True,
) -> list[ReadTool | StagingTool]:
    """Every tool of the builder agent: read the issue and the code, stage, run the
    tests (when `checks` can run them), submit.

    Args:
        checks: The run's tests (`run_tests` is offered when they can run).
        may_decompose: Offer the decomposition tools (`stage_issue`,
            `submit_decomposition`); off for an issue already split as deep as
            `AGENT_LOOP_MAX_DECOMPOSITION_DEPTH` allows.
    """
    tests = [run_tests_tool(checks, change)] if checks is not None and checks.enabled else []
    return [
        issue_tool(issue_text),
        *repo_tools(snapshot, stage=change),
        *implementation_tools(
            change,
            policy,
            exists_at_base=snapshot.exists,
            is_dir_at_base=directory_lookup(snapshot.paths),
            text_at_base=snapshot.text,
            include_skip=not may_decompose,
        ),
        *tests,
        *(decomposition_tools(spec, policy) if may_decompose else []),
    ]


def verifier_tools(
    issue_text: str,
    snapshot: RepoSnapshot,
    proposal: StagedFiles | None = None,
    log: ReadLog | None = None,
) -> list[ReadTool]:
    """The verifier's read-only tools: the issue, and the base commit with `proposal`'s
    files over it (their lines read are noted in `log`)."""
    return [
        issue_tool(issue_text),
        *repo_tools(snapshot, stage=proposal, staged_by="the proposal", log=log),
    ]
