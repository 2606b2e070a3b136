"""The repository at one pinned commit, and the read-only tools agents explore it with.

```python
snapshot = RepoSnapshot(github, base_sha, "main", label="base branch main")
offline = RepoSnapshot.from_archive(tarball, base_sha, "1a2b3c4")   # no GitHub at all
tools = repo_tools(snapshot, stage=stage)     # list_files, read_file, search_code
rules = await repository_instructions(base, touched_paths)   # AGENTS.md & co., fenced
```

The builder reads the base commit it builds on; the reviewer reads the pull request's
head commit it reviews. Both, and their verifiers, get the same tools, so a path is
normalized and an output bounded the same way for every agent.
"""

from agent_loop_common.repo._citations import broken_citations, stale_lessons
from agent_loop_common.repo._instructions import (
    INSTRUCTION_FILES,
    RepoInstructions,
    repository_instructions,
)
from agent_loop_common.repo._snapshot import OfflineSnapshot, RepoSnapshot
from agent_loop_common.repo._tools import ReadLog, ReadTool, StagedFiles, ToolLimits, repo_tools

__all__ = [
    "INSTRUCTION_FILES",
    "OfflineSnapshot",
    "ReadLog",
    "ReadTool",
    "RepoInstructions",
    "RepoSnapshot",
    "StagedFiles",
    "ToolLimits",
    "broken_citations",
    "repo_tools",
    "repository_instructions",
    "stale_lessons",
]
