"""agent_loop_eval: the repository's own benchmark, SWE-bench's method on its own history.

`agent-loop eval mine` turns merged pull requests that closed an issue into task
instances (`Instance`: the issue's text, the commit the fix was merged onto, the fix's
tests hidden as `test_patch`, `FAIL_TO_PASS` and `PASS_TO_PASS`), validated in the
sandbox like the builder's own runs; `agent-loop eval run` replays the builder's pipeline
on each and scores it with the hidden tests; `agent-loop eval score` scores changes made
elsewhere (SWE-bench's predictions, or the instances' own fixes with `--gold`) the same
way. Files are SWE-bench's format both ways.

```python
instances = read_instances(Path("instances.jsonl"))   # ours, or a SWE-bench file
changes = apply_patch(base_files, instance.test_patch) # path -> text (None: deleted)
outcomes = outcomes_of(instance.FAIL_TO_PASS, result.counts.outcomes)
result = await evaluate(instance, settings, lessons=LessonChoice.parse("on"))  # one instance
scored = await score_prediction(instance, settings, read_predictions(Path("p.jsonl"))[0])
comparison = compare_results(read_results(Path("a")), read_results(Path("b")))
```

Modules, by concern: `_instance` (the model and its JSON lines), `_patches` (git-format
diffs of file maps, applied in pure Python), `_testids` (JUnit names and pytest node
ids), `_mine` (`Miner`: merged pull requests to instances), `_mined` (skip reasons and
the sidecar of skipped pull requests), `_issues` (the linked issues' trust and text),
`_classify` (FAIL_TO_PASS and PASS_TO_PASS from runs before and after), `_evaluate`
(one instance: its base, the builder's replay or a prediction's patch, the score),
`_predictions` (SWE-bench's predictions made elsewhere, paired with instances),
`_baselines` (one baseline per base commit and command for a run's instances),
`_score` (the hidden tests in the sandbox), `_fanout` (K instance tasks at a time),
`_results` (results.json, predictions.jsonl), `_report` (the HTML report), `_stats`
(Wilson, exact McNemar, Newcombe's paired interval), `_compare` (two runs paired),
`env` (Flyte).
"""

from __future__ import annotations

from agent_loop_eval._baselines import shared_baselines
from agent_loop_eval._classify import Classified, classify
from agent_loop_eval._compare import Comparison, RunFigures, compare_results, comparison_text
from agent_loop_eval._evaluate import evaluate, instance_settings, score_prediction
from agent_loop_eval._fanout import Inputs, InstanceTask, fan_out, watch_results
from agent_loop_eval._instance import (
    Instance,
    InstanceFileError,
    instance_id,
    instance_line,
    iter_instances,
    read_instances,
    write_instances,
)
from agent_loop_eval._mine import Mined, MineLimits, Miner
from agent_loop_eval._mined import (
    SkippedPull,
    SkipReason,
    append_skipped,
    known_pulls,
    read_skipped,
    skipped_path,
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
from agent_loop_eval._predictions import (
    Prediction,
    PredictionFileError,
    gold_predictions,
    missing_result,
    pair_predictions,
    read_predictions,
)
from agent_loop_eval._report import report_html
from agent_loop_eval._results import (
    GoldCheck,
    InstanceResult,
    RunResults,
    RunSummary,
    TestStatus,
    partial_line,
    read_results,
    summarize_results,
    write_results,
)
from agent_loop_eval._score import Score, score_change
from agent_loop_eval._stats import PairedTable, mcnemar_exact, paired_difference, wilson
from agent_loop_eval._testids import node_id, node_outcomes, outcomes_of

__all__ = [
    "BinaryChange",
    "Classified",
    "Comparison",
    "FilePatch",
    "GoldCheck",
    "Hunk",
    "Inputs",
    "Instance",
    "InstanceFileError",
    "InstanceResult",
    "InstanceTask",
    "MineLimits",
    "Mined",
    "Miner",
    "PairedTable",
    "PatchError",
    "Prediction",
    "PredictionFileError",
    "RunFigures",
    "RunResults",
    "RunSummary",
    "Score",
    "SkipReason",
    "SkippedPull",
    "TestStatus",
    "append_skipped",
    "apply_patch",
    "classify",
    "compare_results",
    "comparison_text",
    "diff_files",
    "evaluate",
    "fan_out",
    "gold_predictions",
    "instance_id",
    "instance_line",
    "instance_settings",
    "is_test_path",
    "iter_instances",
    "known_pulls",
    "mcnemar_exact",
    "missing_result",
    "node_id",
    "node_outcomes",
    "outcomes_of",
    "pair_predictions",
    "paired_difference",
    "parse_patch",
    "partial_line",
    "patch_paths",
    "patched_files",
    "read_instances",
    "read_predictions",
    "read_results",
    "read_skipped",
    "report_html",
    "score_change",
    "score_prediction",
    "shared_baselines",
    "skipped_path",
    "split_test_paths",
    "summarize_results",
    "watch_results",
    "wilson",
    "write_instances",
    "write_results",
]
