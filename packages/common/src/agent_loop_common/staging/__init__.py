"""What agents propose: stages, the path policy, immutable plans and the staging tools.

An agent never writes to the repository. Its staging tools fill a stage in process
(`ChangeStage` for files, `DecompositionStage` for sub-issues) under a `StagingPolicy`;
a submit tool marks the stage submitted, and the pipeline turns it into an immutable
plan (`ChangePlan`, `DecompositionPlan`) that the verifier checks and a durable action
applies.

```python
stage = ChangeStage()
tools = implementation_tools(
    stage,
    StagingPolicy(),
    exists_at_base=snapshot.exists,
    is_dir_at_base=directory_lookup(snapshot.paths),
    text_at_base=snapshot.text,
)
agent = Agent(..., tools=[*read_tools, *tools])
await agent.run.aio(prompt)
if stage.submitted:
    plan = stage.to_plan()
```
"""

from agent_loop_common.staging._change_tools import (
    ExistsAtBase,
    IsDirAtBase,
    TextAtBase,
    change_tools,
    directory_lookup,
    fix_tools,
    implementation_tools,
)
from agent_loop_common.staging._diff import ChangeDiff, FileDiff, change_diff
from agent_loop_common.staging._errors import PlanError, PolicyViolation, StagingError
from agent_loop_common.staging._fields import REFUSAL_PREFIX, StagingTool
from agent_loop_common.staging._issue_tools import decomposition_tools
from agent_loop_common.staging._paths import (
    PathRelation,
    ancestors,
    glob_matches,
    normalize_path,
    path_relation,
)
from agent_loop_common.staging._plans import (
    ChangePlan,
    DecompositionPlan,
    PlannedIssue,
    Reply,
    order_issues,
)
from agent_loop_common.staging._policy import (
    CI_GLOBS,
    INSTRUCTION_GLOBS,
    REPOSITORY_CONFIG_GLOBS,
    StagingPolicy,
    instruction_files,
)
from agent_loop_common.staging._stages import ChangeStage, DecompositionStage, StageStatus

__all__ = [
    "CI_GLOBS",
    "INSTRUCTION_GLOBS",
    "REFUSAL_PREFIX",
    "REPOSITORY_CONFIG_GLOBS",
    "ChangeDiff",
    "ChangePlan",
    "ChangeStage",
    "DecompositionPlan",
    "DecompositionStage",
    "ExistsAtBase",
    "FileDiff",
    "IsDirAtBase",
    "PathRelation",
    "PlanError",
    "PlannedIssue",
    "PolicyViolation",
    "Reply",
    "StageStatus",
    "StagingError",
    "StagingPolicy",
    "StagingTool",
    "TextAtBase",
    "ancestors",
    "change_diff",
    "change_tools",
    "decomposition_tools",
    "directory_lookup",
    "fix_tools",
    "glob_matches",
    "implementation_tools",
    "instruction_files",
    "normalize_path",
    "order_issues",
    "path_relation",
]
