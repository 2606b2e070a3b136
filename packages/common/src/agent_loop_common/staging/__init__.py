"""What agents propose: stages, the path policy, immutable plans and the staging tools.

An agent never writes to the repository. Its staging tools fill a stage in process
(`ChangeStage` for files, `DecompositionStage` for sub-issues) under a `StagingPolicy`;
a submit tool marks the stage submitted, and the pipeline turns it into an immutable
plan (`ChangePlan`, `DecompositionPlan`) that the verifier checks and a durable action
applies.

```python
stage = ChangeStage()
agent = Agent(..., tools=[*read_tools, *implementation_tools(stage, StagingPolicy())])
await agent.run.aio(prompt)
if stage.submitted:
    plan = stage.to_plan()
```
"""

from agent_loop_common.staging._change_tools import (
    ExistsAtBase,
    change_tools,
    fix_tools,
    implementation_tools,
)
from agent_loop_common.staging._errors import PlanError, PolicyViolation, StagingError
from agent_loop_common.staging._fields import REFUSAL_PREFIX, StagingTool
from agent_loop_common.staging._issue_tools import decomposition_tools
from agent_loop_common.staging._paths import glob_matches, normalise_path
from agent_loop_common.staging._plans import (
    ChangePlan,
    DecompositionPlan,
    PlannedIssue,
    Reply,
    order_issues,
)
from agent_loop_common.staging._policy import WORKFLOW_GLOBS, StagingPolicy
from agent_loop_common.staging._stages import ChangeStage, DecompositionStage, StageStatus

__all__ = [
    "REFUSAL_PREFIX",
    "WORKFLOW_GLOBS",
    "ChangePlan",
    "ChangeStage",
    "DecompositionPlan",
    "DecompositionStage",
    "ExistsAtBase",
    "PlanError",
    "PlannedIssue",
    "PolicyViolation",
    "Reply",
    "StageStatus",
    "StagingError",
    "StagingPolicy",
    "StagingTool",
    "change_tools",
    "decomposition_tools",
    "fix_tools",
    "glob_matches",
    "implementation_tools",
    "normalise_path",
    "order_issues",
]
