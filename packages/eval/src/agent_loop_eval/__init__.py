"""agent_loop_eval: the repository's own benchmark, SWE-bench's method on its own history.

`agent-loop eval mine` turns merged pull requests that closed an issue into task
instances (`Instance`: the issue's text, the commit the fix was merged onto, the fix's
tests hidden as `test_patch`, `FAIL_TO_PASS` and `PASS_TO_PASS`), validated in the
sandbox like the builder's own runs; `agent-loop eval run` replays the builder's pipeline
on each and scores it with the hidden tests. Files are SWE-bench's format both ways.

```python
instances = read_instances(Path("instances.jsonl"))   # ours, or a SWE-bench file
changes = apply_patch(base_files, instance.test_patch) # path -> text (None: deleted)
outcomes = outcomes_of(instance.FAIL_TO_PASS, result.counts.outcomes)
```

Modules, by concern: `_instance` (the model and its JSON lines), `_patches` (git-format
diffs of file maps, applied in pure Python), `_testids` (JUnit names and pytest node
ids), `env` (Flyte).
"""

from __future__ import annotations

from agent_loop_eval._instance import (
    Instance,
    InstanceFileError,
    instance_id,
    instance_line,
    iter_instances,
    read_instances,
    write_instances,
)
from agent_loop_eval._patches import (
    BinaryChange,
    FilePatch,
    Hunk,
    PatchError,
    apply_patch,
    diff_files,
    is_test_path,
    parse_patch,
    patch_paths,
    patched_files,
    split_test_paths,
)
from agent_loop_eval._testids import node_id, node_outcomes, outcomes_of

__all__ = [
    "BinaryChange",
    "FilePatch",
    "Hunk",
    "Instance",
    "InstanceFileError",
    "PatchError",
    "apply_patch",
    "diff_files",
    "instance_id",
    "instance_line",
    "is_test_path",
    "iter_instances",
    "node_id",
    "node_outcomes",
    "outcomes_of",
    "parse_patch",
    "patch_paths",
    "patched_files",
    "read_instances",
    "split_test_paths",
    "write_instances",
]
