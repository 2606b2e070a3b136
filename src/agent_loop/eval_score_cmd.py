"""`agent-loop eval score`: score changes made elsewhere as `eval run` scores its own.

```text
agent-loop eval score INSTANCES.jsonl PREDICTIONS.jsonl [--parallel K] [--limit N]
                      [--instances ID,...] [--out DIR] [--force] [--remote [--config FILE]]
agent-loop eval score INSTANCES.jsonl --gold [...]     check the instances themselves
```

Any agent's output in SWE-bench's predictions format (`instance_id`,
`model_name_or_path`, `model_patch`) is scored on the user's repository by the eval's
score task (`agent_loop_eval.env.eval_score`: one Flyte task per instance, K at a time,
the same scoring as `eval run`'s), and written as `eval run` writes its run
(`results.json`, `predictions.jsonl`, `report.html`), so `eval compare` pairs it with any
other run. `--gold` scores each instance's own reference fix and the empty patch:
SWE-bench's sanity check, which names every broken instance.

Exit codes: 0 done (whatever it resolved); 1 an instance ended in an error, or with
`--gold` some instance is broken; 2 bad usage or configuration (no instance, an unknown
id, a predictions file that is not one or names instances the instances file does not
have, no sandbox to score in).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from agent_loop.eval_run_cmd import (
    EXIT_FAILED,
    EXIT_USAGE,
    add_shared_options,
    chosen_instances,
    config_fits,
    errors_line,
    home_env,
    interrupted,
    preflight,
    print_paths,
    progress_line,
    resolved_line,
    results_of,
    run_folder,
    unreadable,
    verdict,
    written,
)

if TYPE_CHECKING:  # imported when the command runs: `agent-loop --help` stays fast
    from agent_loop_eval import Instance, InstanceResult, Prediction

__all__ = ["add_score", "score"]

_NAME = "agent-loop eval score"


def add_score(actions: Any, name: str) -> None:
    """Add `eval score` to the eval group's subcommands."""
    sub = cast(
        argparse.ArgumentParser,
        actions.add_parser(
            name,
            help="score predictions made elsewhere (SWE-bench's format) with the hidden tests",
            description=(
                "Score each prediction's patch as `eval run` scores the builder's change: "
                "applied at the instance's base commit, its test patch laid over it, its "
                "FAIL_TO_PASS and PASS_TO_PASS tests run in the sandbox. Writes "
                "results.json, predictions.jsonl and report.html, for `eval compare`. "
                "--gold checks the instances themselves. See docs/eval.md."
            ),
        ),
    )
    sub.add_argument("instances", type=Path, metavar="INSTANCES.jsonl", help="the instances")
    sub.add_argument(
        "predictions",
        type=Path,
        nargs="?",
        metavar="PREDICTIONS.jsonl",
        help="SWE-bench predictions: instance_id, model_name_or_path, model_patch",
    )
    sub.add_argument(
        "--gold",
        action="store_true",
        help="score each instance's own fix (patch) and the empty patch instead: every "
        "valid instance resolves with the first and not with the second",
    )
    add_shared_options(sub)


def _predictions(args: argparse.Namespace, instances: list[Instance]) -> list[Prediction] | None:
    """The predictions to score (the gold patches with `--gold`), those of the chosen
    instances only; `None` after saying why there are none to trust."""
    from agent_loop_eval import (
        PredictionFileError,
        gold_predictions,
        pair_predictions,
        read_instances,
        read_predictions,
    )

    if args.gold:
        return gold_predictions(instances)
    path = cast(Path, args.predictions)
    try:
        predictions = read_predictions(path)
        everything = read_instances(cast(Path, args.instances))
    except PredictionFileError as exc:
        print(f"{_NAME}: {exc}", file=sys.stderr)
        return None
    except OSError as exc:
        print(f"{_NAME}: {unreadable(exc, path)}", file=sys.stderr)
        return None
    if not predictions:
        print(
            f"{_NAME}: {path} holds no prediction: nothing to score (one JSON object per "
            "line: instance_id, model_name_or_path, model_patch).",
            file=sys.stderr,
        )
        return None
    _, _, strangers = pair_predictions(everything, predictions)
    if strangers:
        shown = ", ".join(strangers[:5]) + (" ..." if len(strangers) > 5 else "")
        print(
            f"{_NAME}: {path} has predictions for {len(strangers)} instance(s) that "
            f"{args.instances} does not have: {shown} (the wrong instances file?)",
            file=sys.stderr,
        )
        return None
    chosen = {i.instance_id for i in instances}
    return [p for p in predictions if p.instance_id in chosen]


def score(args: argparse.Namespace) -> int:
    """`agent-loop eval score`; returns the exit code."""
    from agent_loop_common.runtime import run_task
    from agent_loop_common.settings import load_settings
    from agent_loop_eval import missing_result, pair_predictions, report_html, watch_results
    from agent_loop_eval.env import eval_score

    gold = bool(args.gold)
    if gold == (args.predictions is not None):
        print(
            f"{_NAME}: give a predictions file, or --gold to check the instances with their "
            "own fixes (not both).",
            file=sys.stderr,
        )
        return EXIT_USAGE
    remote = bool(args.remote)
    config = cast(Path | None, args.config)
    if not config_fits(args, command="score"):
        return EXIT_USAGE
    instances = chosen_instances(args, command="score")
    if instances is None:
        return EXIT_USAGE
    predictions = _predictions(args, instances)
    if predictions is None:
        return EXIT_USAGE
    parallel = cast(int, args.parallel)
    with home_env(cast(Path | None, args.home)):
        settings = load_settings(**({"flyte_config": config} if config else {}))
        out = run_folder(args, settings, command="score")
        if out is None:
            return EXIT_USAGE
        preflight(settings, "", remote=remote, command="score")
        label = _label(predictions)
        _, missing, _ = pair_predictions(instances, predictions)
        what = (
            "their gold patches and the empty patch"
            if gold
            else f"{len(predictions)} prediction(s) of {label} from {args.predictions}"
        )
        where = "on the Flyte cluster" if remote else f"{parallel} at a time"
        print(f"{_NAME}: {len(instances)} instance(s), {what}, {where} -> {out}", flush=True)
        note = "" if gold else _partial_source(cast(Path, args.predictions))
        if note:
            print(
                f"  note: {args.predictions} is a partial run's ({note}): the instances it "
                "did not finish have no prediction in it",
                flush=True,
            )
        for instance in missing:
            print(f"  {instance.instance_id}: no prediction (missing, not resolved)", flush=True)
        inputs: dict[str, Any] = {
            "instances": instances,
            "predictions": predictions,
            "parallel": parallel,
            "check_gold": gold,
        }
        finished: dict[str, InstanceResult] = {}

        def watch(result: InstanceResult, done: int, total: int) -> None:
            finished[result.instance_id] = result
            _progress(result, done, total, gold=gold)

        try:
            if remote:
                results = results_of(run_task(settings, eval_score, remote=True, **inputs))
                scored = [r for r in results if r.outcome != "missing"]
                for done, result in enumerate(scored, start=1):
                    _progress(result, done, len(scored), gold=gold)
            else:
                with watch_results(watch):
                    results = results_of(run_task(settings, eval_score, **inputs))
        except KeyboardInterrupt:
            if finished:  # an instance without a prediction is as final as a scored one
                finished |= {i.instance_id: missing_result(i) for i in missing}
            return interrupted("score", out, instances, finished, model=label, lessons="")
    html = report_html(results, title=f"{_NAME} {out.name}", model=label, lessons="")
    paths = written(out, results, label, html, command="score")
    if paths is None:
        return EXIT_FAILED
    broken = _print_summary(results, paths, gold=gold)
    failed = broken or any(r.outcome == "error" for r in results)
    return EXIT_FAILED if failed else 0


def _partial_source(path: Path) -> str:
    """`interrupted after N of M instances; not a complete run` when `path` is the
    predictions.jsonl of an interrupted run (its results.json beside it says so), else ""."""
    from agent_loop_eval import read_results

    if not (path.parent / "results.json").is_file():
        return ""
    try:
        return read_results(path.parent).note
    except (OSError, ValueError):  # not a run's folder after all: nothing to say of it
        return ""


def _label(predictions: Sequence[Prediction]) -> str:
    """Who made the predictions: their `model_name_or_path`s, most common first."""
    names: dict[str, int] = {}
    for p in predictions:
        if p.model_name_or_path:
            names[p.model_name_or_path] = names.get(p.model_name_or_path, 0) + 1
    return ", ".join(sorted(names, key=lambda n: -names[n])) or "unnamed"


def _progress(result: InstanceResult, done: int, total: int, *, gold: bool = False) -> None:
    from agent_loop._table import clip
    from agent_loop.status import terminal_safe

    check = result.gold_check
    if check is None and gold and result.outcome == "error":
        text = "NOT CHECKED: " + clip(terminal_safe(result.error), 200)
    elif check is None:
        text = verdict(result)
    elif check.valid:
        f2p = len(check.empty_failing)
        text = (
            f"valid: the gold patch resolves it, the empty patch fails {f2p} of {f2p} FAIL_TO_PASS"
        )
    else:
        text = "BROKEN: " + clip(terminal_safe("; ".join(check.problems)), 200)
    progress_line(result, done, total, text, f"{result.outcome}, {result.seconds:.1f} s")


def _print_summary(
    results: Sequence[InstanceResult], paths: dict[str, Path], *, gold: bool
) -> bool:
    """The run's figures; whether some instance is broken (`--gold`)."""
    print()
    print(resolved_line(results))
    unscored = {
        "patch does not apply": sum(r.outcome == "unapplied" for r in results),
        "empty patch": sum(r.outcome == "empty" for r in results),
        "no prediction": sum(r.outcome == "missing" for r in results),
    }
    if any(unscored.values()):
        print("not scored: " + ", ".join(f"{k} {v}" for k, v in unscored.items()))
    checked = [r for r in results if r.gold_check is not None]
    broken = [r.instance_id for r in checked if r.gold_check and not r.gold_check.valid]
    unchecked = [r.instance_id for r in results if gold and r.gold_check is None]
    if checked or unchecked:
        print(
            f"gold check: {len(checked) - len(broken)} valid, {len(broken)} broken"
            + (f" ({', '.join(broken)})" if broken else "")
            + (
                f"; {len(unchecked)} not checked, GitHub unavailable "
                f"({', '.join(unchecked)}): run it again"
                if unchecked
                else ""
            )
        )
    errors_line(results)
    print_paths(paths)
    return bool(broken)
