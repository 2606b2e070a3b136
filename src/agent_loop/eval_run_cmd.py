"""`agent-loop eval run` and `agent-loop eval compare`: replay the builder, then compare runs.

```text
agent-loop eval run INSTANCES.jsonl [--model MODEL] [--lessons on|off|ID,...] [--parallel K]
                    [--limit N] [--instances ID,...] [--out DIR] [--force] [--remote [--config FILE]]
agent-loop eval compare A B [--json]       two runs paired on their common instances
```

`eval run` reads the instances (ours, from `eval mine`, or a SWE-bench file made
elsewhere), runs the eval's run task (`agent_loop_eval.env.eval_run`: one Flyte task per
instance, K at a time) in Flyte's local mode, or with `--remote` on the cluster, prints a
line per instance as it finishes, and writes `results.json`, `predictions.jsonl`
(SWE-bench's predictions format) and `report.html` into `--out` (default
`<AGENT_LOOP_HOME>/eval/runs/<time>`). Each instance makes one GitHub request, a read:
its base commit's tarball. Exit codes: 0 the run is done (whatever it resolved), 1 an
instance ended in an error (its result says which; the files are still written), 2 bad
usage or configuration (no instance, an unknown id, no sandbox to score in, an --out
holding an earlier run without --force), 130 interrupted (Ctrl-C: the instances that
finished are kept, marked partial: `"complete": false` in results.json).

`eval compare` reads two runs (their folders or `results.json` files) and prints the
paired table (resolved by both, neither, only A, only B), each run's resolved rate, the
difference with its 95% interval (Newcombe's paired method) and the exact McNemar
p-value, and tokens and cost side by side; a partial run is compared with a warning.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # imported when the command runs: `agent-loop --help` stays fast
    from agent_loop_common.settings import Settings
    from agent_loop_eval import Instance, InstanceResult, RunResults

__all__ = [
    "add_compare",
    "add_run",
    "add_shared_options",
    "chosen_instances",
    "compare",
    "config_fits",
    "errors_line",
    "home_env",
    "interrupted",
    "lesson_ids",
    "out_problem",
    "positive",
    "preflight",
    "print_paths",
    "progress_line",
    "resolved_line",
    "results_of",
    "run",
    "run_folder",
    "unreadable",
    "verdict",
    "written",
]

EXIT_FAILED = 1
EXIT_USAGE = 2


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def add_run(actions: Any, name: str) -> None:
    """Add `eval run` to the eval group's subcommands."""
    sub = cast(
        argparse.ArgumentParser,
        actions.add_parser(
            name,
            help="replay the builder on task instances and score it with their hidden tests",
            description=(
                "Replay the builder's pipeline on each instance (the repository at its base "
                "commit, the issue's text, the visible tests only; nothing written to "
                "GitHub), then score the change with the instance's hidden tests in the "
                "sandbox. Writes results.json, predictions.jsonl (SWE-bench's format) and "
                "report.html. See docs/eval.md."
            ),
        ),
    )
    sub.add_argument("instances", type=Path, metavar="INSTANCES.jsonl", help="the instances")
    sub.add_argument(
        "--model",
        metavar="MODEL",
        default="",
        help="litellm model string for the builder and its verifier (default AGENT_LOOP_MODEL)",
    )
    sub.add_argument(
        "--lessons",
        default="on",
        metavar="on|off|ID,...",
        help="the lessons in memory shown to the builder: all that apply (on, the default), "
        "none (off), or only these ids",
    )
    add_shared_options(sub)


def add_shared_options(sub: argparse.ArgumentParser) -> None:
    """The options `eval run` and `eval score` share (which instances, how many at a time,
    where the files go, where they run), added in one place so that both say them alike."""
    sub.add_argument(
        "--parallel", type=positive, default=1, metavar="K", help="instances at a time (1)"
    )
    sub.add_argument("--limit", type=positive, metavar="N", help="the first N instances only")
    sub.add_argument(
        "--instances",
        dest="only",
        metavar="ID,...",
        help="only these instance ids (comma separated)",
    )
    sub.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="where the run's files go (default AGENT_LOOP_HOME/eval/runs/<time>)",
    )
    sub.add_argument(
        "--force",
        action="store_true",
        help="write over the files of a run already in --out (refused without it)",
    )
    sub.add_argument(
        "--home",
        type=Path,
        metavar="DIR",
        help="local state folder (default: AGENT_LOOP_HOME or .agent-loop)",
    )
    sub.add_argument(
        "--remote",
        action="store_true",
        help="run the deployed eval task on the Flyte cluster (agent-loop deploy eval)",
    )
    sub.add_argument("--config", type=Path, metavar="FILE", help="Flyte config of --remote")


def add_compare(actions: Any, name: str) -> None:
    """Add `eval compare` to the eval group's subcommands."""
    sub = cast(
        argparse.ArgumentParser,
        actions.add_parser(
            name,
            help="compare two runs paired on their common instances",
            description=(
                "Pair two runs on the instances both ran: resolved by both, neither, only "
                "A, only B; each run's resolved rate, the difference with its 95% interval "
                "(Newcombe's paired method) and the exact McNemar test; tokens and cost."
            ),
        ),
    )
    sub.add_argument("a", type=Path, metavar="A", help="a run's folder or its results.json")
    sub.add_argument("b", type=Path, metavar="B", help="the other run")
    sub.add_argument("--json", action="store_true", help="print the comparison as JSON")


@contextmanager
def home_env(home: Path | None) -> Generator[None]:
    """`AGENT_LOOP_HOME` for the command: the tasks read their settings from the environment."""
    if home is None:
        yield
        return
    saved = os.environ.get("AGENT_LOOP_HOME")
    os.environ["AGENT_LOOP_HOME"] = str(home)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("AGENT_LOOP_HOME", None)
        else:
            os.environ["AGENT_LOOP_HOME"] = saved


def unreadable(exc: OSError, path: Path, hint: str = "") -> str:
    """`PATH: no such file[; hint]` (or a folder, or why it cannot be read), in one line:
    the errno's repr (`[Errno 2] No such file or directory: 'x'`) says it twice."""
    where = Path(exc.filename) if exc.filename else path
    if isinstance(exc, FileNotFoundError):
        text = f"{where}: no such file"
    elif isinstance(exc, IsADirectoryError):
        text = f"{where}: a folder, not a file"
    else:
        text = f"{where}: cannot be read ({exc.strerror or exc})"
    return text + (f"; {hint}" if hint else "")


def chosen_instances(args: argparse.Namespace, *, command: str = "run") -> list[Instance] | None:
    """The instances `args` choose (`INSTANCES.jsonl`, `--instances`, `--limit`), or
    `None` after saying why there are none (as `agent-loop eval <command>`)."""
    from agent_loop_eval import InstanceFileError, read_instances

    path = cast(Path, args.instances)
    try:
        instances = read_instances(path)
    except InstanceFileError as exc:
        print(f"agent-loop eval {command}: {exc}", file=sys.stderr)
        return None
    except OSError as exc:
        hint = "`agent-loop eval mine` writes a repository's instances (docs/eval.md)"
        print(f"agent-loop eval {command}: {unreadable(exc, path, hint)}", file=sys.stderr)
        return None
    only = cast(str | None, args.only)
    if not instances:
        print(
            f"agent-loop eval {command}: {path} holds no instance: nothing to {command} "
            "(one JSON object per line, as `agent-loop eval mine` writes them).",
            file=sys.stderr,
        )
        return None
    ids = [i.instance_id for i in instances]
    twice = sorted({x for x in ids if ids.count(x) > 1})
    if twice:  # scored twice, counted twice in the rate, paired once by `eval compare`
        print(
            f"agent-loop eval {command}: {path} has instance_id {', '.join(twice[:3])} more "
            "than once; each instance goes in once (keep one line of each).",
            file=sys.stderr,
        )
        return None
    if only is not None:
        wanted = [part.strip() for part in only.split(",") if part.strip()]
        if not wanted:
            print(
                f"agent-loop eval {command}: --instances {only!r} names no instance id "
                f"(comma separated, as the instance_id of {path}; leave it out for all).",
                file=sys.stderr,
            )
            return None
        known = {i.instance_id for i in instances}
        unknown = [w for w in wanted if w not in known]
        if unknown:
            ids = [i.instance_id for i in instances]
            shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
            print(
                f"agent-loop eval {command}: --instances: not in {path}: {', '.join(unknown)} "
                f"(its instance ids: {shown})",
                file=sys.stderr,
            )
            return None
        instances = [i for i in instances if i.instance_id in set(wanted)]
    limit = cast(int | None, args.limit)
    if limit is not None:
        instances = instances[:limit]
    return instances


def preflight(settings: Settings, model: str, *, remote: bool, command: str = "run") -> None:
    """Refuse a run that could not start: a remote one without a Flyte config naming a
    cluster (`FlyteConfigError`: it never runs locally instead), a local one that could
    score nothing (`ConfigError`), or, for `eval run`, call no model."""
    from agent_loop_common.model_keys import model_problems
    from agent_loop_common.records import Role
    from agent_loop_common.runtime import (
        installed_model,
        preflight_model,
        preflight_sandbox,
        remote_flyte_config,
    )
    from agent_loop_common.settings import ConfigError

    if remote:
        remote_flyte_config(settings.flyte_config)
        return
    if settings.sandbox == "off":
        raise ConfigError(
            [
                f"AGENT_LOOP_SANDBOX=off: `eval {command}` scores every change by running the "
                "instance's hidden tests in the sandbox; choose a sandbox (see docs/sandbox.md)"
            ]
        )
    import asyncio

    asyncio.run(preflight_sandbox(settings, Role.BUILDER))
    if command != "run":
        return
    if model and installed_model() is None:
        # `--model` is the builder's and its verifier's model: a problem with it is named
        # as the option the person typed, not as the AGENT_LOOP_MODEL they did not set.
        problems = model_problems(model, variable="--model")
        if problems:
            raise ConfigError(problems)
        return
    preflight_model(settings)


def lesson_ids(
    settings: Settings, instances: Sequence[Instance], wanted: Sequence[str]
) -> tuple[list[str], list[str]]:
    """The lessons `--lessons ID,...` names, as their full ids in the local memory of the
    instances' repositories (`L-1a2b` names `acme/calc#L-1a2b`, as `lessons show` takes
    it), and the names that match none: a typo or a short id would otherwise select no
    lesson at all, silently."""
    import asyncio

    from agent_loop_common.memory import read_context
    from agent_loop_common.runtime import local_memory

    known: list[str] = []
    for repo in sorted({i.repo for i in instances}):
        location = local_memory(settings.for_repo(repo))
        known += [x.id for x in asyncio.run(read_context(location)).lessons.lessons]
    found: list[str] = []
    unknown: list[str] = []
    for name in wanted:
        matches = [k for k in known if k == name or k.endswith(f"#{name}")]
        found += matches
        if not matches:
            unknown.append(name)
    return list(dict.fromkeys(found)), unknown


def run(args: argparse.Namespace) -> int:
    """`agent-loop eval run`; returns the exit code."""
    from agent_loop_builder import LessonChoice
    from agent_loop_common.runtime import model_label, run_task
    from agent_loop_common.settings import load_settings
    from agent_loop_eval import report_html, watch_results
    from agent_loop_eval.env import eval_run

    instances = chosen_instances(args)
    if instances is None:
        return EXIT_USAGE
    try:
        choice = LessonChoice.parse(cast(str, args.lessons))
    except ValueError as exc:
        print(f"agent-loop eval run: --lessons: {exc}", file=sys.stderr)
        return EXIT_USAGE
    lessons = str(choice)
    model = cast(str, args.model).strip()
    remote = bool(args.remote)
    config = cast(Path | None, args.config)
    if not config_fits(args, command="run"):
        return EXIT_USAGE
    parallel = cast(int, args.parallel)
    with home_env(cast(Path | None, args.home)):
        settings = load_settings(**({"flyte_config": config} if config else {}))
        if choice.mode == "only" and not remote:
            ids, unknown = lesson_ids(settings, instances, choice.ids)
            if unknown:
                print(
                    f"agent-loop eval run: --lessons: not a lesson in memory: "
                    f"{', '.join(unknown)} (`agent-loop lessons list` shows the ids; on and "
                    "off choose all or none)",
                    file=sys.stderr,
                )
                return EXIT_USAGE
            lessons = str(LessonChoice("only", tuple(ids)))
        out = run_folder(args, settings, command="run")
        if out is None:
            return EXIT_USAGE
        preflight(settings, model, remote=remote)
        where = "on the Flyte cluster" if remote else f"{parallel} at a time"
        print(
            f"agent-loop eval run: {len(instances)} instance(s), model "
            f"{model or model_label(settings)}, lessons {lessons}, {where} -> {out}",
            flush=True,
        )
        inputs: dict[str, Any] = {
            "instances": instances,
            "lessons": lessons,
            "model": model,
            "parallel": parallel,
        }
        finished: dict[str, InstanceResult] = {}

        def watch(result: InstanceResult, done: int, total: int) -> None:
            finished[result.instance_id] = result
            _progress(result, done, total)

        try:
            if remote:
                results = results_of(run_task(settings, eval_run, remote=True, **inputs))
                for done, result in enumerate(results, start=1):
                    _progress(result, done, len(results))
            else:
                with watch_results(watch):
                    results = results_of(run_task(settings, eval_run, **inputs))
        except KeyboardInterrupt:
            return interrupted("run", out, instances, finished, model=model, lessons=lessons)
    label = model or next((r.model for r in results if r.model), settings.model)
    html = report_html(
        results, title=f"agent-loop eval run {out.name}", model=label, lessons=lessons
    )
    paths = written(out, results, label, html, command="run")
    if paths is None:
        return EXIT_FAILED
    _print_summary(results, paths)
    return EXIT_FAILED if any(r.outcome == "error" for r in results) else 0


def out_problem(out: Path, *, folder: bool = True) -> str | None:
    """Why the command's files could not be written at `out` (a folder for a run's files,
    else the one file `eval mine` appends to), found before the work (found after it,
    at the end, every result would be lost); `None`: they can be."""
    what = (
        "a folder (the run writes results.json, predictions.jsonl and report.html into it)"
        if folder
        else "the instances file (JSON lines; the skipped ones go next to it)"
    )
    if not folder and out.is_dir():
        return f"--out {out} is a folder; --out names {what}"
    here = out if folder else out.parent
    while not here.exists() and here.parent != here:
        here = here.parent
    if here.exists() and not here.is_dir():
        return f"--out {out}: {here} is a file; --out names {what}"
    if here.exists() and not os.access(here, os.W_OK | os.X_OK):
        return f"--out {out}: {here} is not writable here; choose another place"
    return None


RUN_FILES = ("results.json", "predictions.jsonl", "report.html")
"""The files a run writes into its folder (`agent_loop_eval.write_results`)."""


def config_fits(args: argparse.Namespace, *, command: str) -> bool:
    """`--config` is the cluster's of `--remote`: alone, it is refused (said in one line)."""
    if args.config is not None and not args.remote:
        print(
            f"agent-loop eval {command}: --config names the cluster of --remote.",
            file=sys.stderr,
        )
        return False
    return True


def run_folder(args: argparse.Namespace, settings: Settings, *, command: str) -> Path | None:
    """The folder `--out` names (default `<home>/eval/runs/<time>`), or `None` after saying
    in one line why the run's files could not go there: found before the work, as is a
    folder already holding a run's files, which would be written over (unless `--force`:
    the earlier run's results, perhaps an hour of model spend, are lost)."""
    out = cast(Path | None, args.out) or (
        settings.home / "eval" / "runs" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    )
    problem = out_problem(out)
    held = [name for name in RUN_FILES if (out / name).exists()] if out.is_dir() else []
    if problem is None and held and not args.force:
        problem = (
            f"--out {out} already holds a run ({', '.join(held)}); choose another folder, "
            "or add --force to write over it"
        )
    if problem:
        print(f"agent-loop eval {command}: {problem}", file=sys.stderr)
        return None
    return out


def written(
    out: Path,
    results: Sequence[InstanceResult],
    model: str,
    html: str,
    *,
    command: str,
    unfinished: Sequence[str] | None = None,
) -> dict[str, Path] | None:
    """`write_results`, or `None` after saying in one line why the files could not be
    written (the disk filled up, the folder went away during the run)."""
    from agent_loop_eval import write_results

    try:
        return write_results(out, results, model=model, report=html, unfinished=unfinished)
    except OSError as exc:
        print(
            f"agent-loop eval {command}: the run's files could not be written into {out} "
            f"({exc.strerror or exc}); the results are lost, run it again with another --out",
            file=sys.stderr,
        )
        return None


def interrupted(
    command: str,
    out: Path,
    instances: Sequence[Instance],
    finished: Mapping[str, InstanceResult],
    *,
    model: str,
    lessons: str,
) -> int:
    """After a Ctrl-C: keep the instances that finished (an hour of model spend, maybe)
    in the run's files, marked partial wherever they are read (`"complete": false` in
    results.json, the report's first line, `eval compare`), and say so; exit 130 as the
    rest of the CLI does. None finished: nothing is written."""
    from agent_loop_eval import partial_line, report_html

    name = f"agent-loop eval {command}"
    results = [finished[i.instance_id] for i in instances if i.instance_id in finished]
    if not results:
        print(
            f"{name}: interrupted before any instance finished; nothing written to {out} "
            "(run it again, with --limit or --instances for fewer)",
            file=sys.stderr,
        )
        return 130
    rest = [i.instance_id for i in instances if i.instance_id not in finished]
    label = model or next((r.model for r in results if r.model), "") or "unnamed"
    html = report_html(
        results, title=f"{name} {out.name}", model=label, lessons=lessons, unfinished=rest
    )
    paths = written(out, results, label, html, command=command, unfinished=rest)
    if paths is None:
        return 130
    print()
    print(partial_line(len(results), len(instances)))
    print(resolved_line(results))
    print_paths(paths)
    again = (
        f"--instances {','.join(rest)}"
        if len(rest) <= 10
        else "--instances with the unfinished ones (results.json lists them)"
    )
    print(
        f"{name}: interrupted; the {len(results)} finished instance(s) of {len(instances)} "
        f'are kept in {out}, marked partial ("complete": false in results.json; eval '
        f"compare warns of it); to run the rest: {again}, into another --out",
        file=sys.stderr,
    )
    return 130


def results_of(output: Any) -> list[InstanceResult]:
    """The results a run task returned (as Flyte hands them back)."""
    from agent_loop_eval import InstanceResult

    return [InstanceResult.model_validate(item) for item in cast("Sequence[Any]", output)]


def verdict(result: InstanceResult) -> str:
    """`resolved`, or `not resolved: <why> [<failing tests>]`, fit for a terminal."""
    from agent_loop._table import clip
    from agent_loop.status import terminal_safe

    if result.resolved:
        return "resolved"
    why = result.error or result.reason or "not resolved"
    text = "not resolved: " + clip(terminal_safe(why), 100)
    if result.failing_tests:
        shown = ", ".join(terminal_safe(t) for t in result.failing_tests[:3])
        more = len(result.failing_tests) - 3
        text += f" [{shown}{f' and {more} more' if more > 0 else ''}]"
    return text


def progress_line(result: InstanceResult, done: int, total: int, text: str, figures: str) -> None:
    """Print one instance's line: `[done/total] id  text  (figures)`."""
    from agent_loop.status import terminal_safe

    width = len(str(total))
    print(
        f"[{done:>{width}}/{total}] {terminal_safe(result.instance_id)}  {text}  ({figures})",
        flush=True,
    )


def _progress(result: InstanceResult, done: int, total: int) -> None:
    figures = (
        f"{result.outcome}, {result.tries} tr{'y' if result.tries == 1 else 'ies'}, "
        f"{result.tokens_in + result.tokens_out:,} tokens, ${result.cost_usd:.4f}, "
        f"{result.seconds:.1f} s"
    )
    progress_line(result, done, total, verdict(result), figures)


def resolved_line(results: Sequence[InstanceResult]) -> str:
    """`resolved R of N (rate, 95% CI low to high); errors E[; tampered T ...]`."""
    from agent_loop_eval import summarize_results

    s = summarize_results(results)
    return (
        f"resolved {s.resolved} of {s.instances} ({s.rate:.1%}, 95% CI {s.low:.1%} to "
        f"{s.high:.1%}); errors {s.errors}"
        + (f"; tampered {s.tampered} (never resolved)" if s.tampered else "")
    )


def print_paths(paths: dict[str, Path]) -> None:
    """The files a run wrote, one per line."""
    for name, path in paths.items():
        print(f"{name + ':':<12} {path}")


def _print_summary(results: Sequence[InstanceResult], paths: dict[str, Path]) -> None:
    from agent_loop_eval import summarize_results

    s = summarize_results(results)
    per = "-" if s.cost_per_resolved is None else f"${s.cost_per_resolved:.4f}"
    print()
    print(resolved_line(results))
    print(
        f"tokens {s.tokens_in:,} in, {s.tokens_out:,} out; cost ${s.cost_usd:.4f}, "
        f"{per} per resolved instance"
    )
    errors_line(results)
    print_paths(paths)


def errors_line(results: Sequence[InstanceResult]) -> None:
    """The instances that ended in `error` and, once, the first one's whole error: an
    instance's line clips it (`GitHubUnavailable: GET <a long URL>...`), and what to do
    about it is at its end (GitHub unreachable, retry later)."""
    from agent_loop._table import clip
    from agent_loop.status import terminal_safe

    failed = [r for r in results if r.outcome == "error"]
    if not failed:
        return
    ids = ", ".join(terminal_safe(r.instance_id) for r in failed[:5])
    more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
    first = clip(terminal_safe(failed[0].error or failed[0].reason), 400)
    print(f"error in {ids}{more}; the first: {first}")


def compare(args: argparse.Namespace) -> int:
    """`agent-loop eval compare`; returns the exit code."""
    from agent_loop_eval import compare_results, comparison_text, read_results

    loaded: list[RunResults] = []
    for path in (cast(Path, args.a), cast(Path, args.b)):
        try:
            loaded.append(read_results(path))
        except OSError as exc:
            hint = "give a run's folder (`eval run --out DIR`) or its results.json"
            print(f"agent-loop eval compare: {unreadable(exc, path, hint)}", file=sys.stderr)
            return EXIT_USAGE
        except ValueError as exc:
            print(f"agent-loop eval compare: {path}: {exc}", file=sys.stderr)
            return EXIT_USAGE
    a, b = loaded
    comparison = compare_results(a.results, b.results).model_copy(
        update={"partial_a": a.note, "partial_b": b.note}
    )
    if comparison.paired == 0:
        print(
            f"agent-loop eval compare: {args.a} and {args.b} ran no instance in common "
            f"({len(comparison.unpaired_a)} and {len(comparison.unpaired_b)} instance(s)): "
            "nothing to pair; run both on the same instances file.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.json:
        for side, path, run in (("A", args.a, a), ("B", args.b, b)):
            if not run.complete:  # the JSON carries it too (partial_a, partial_b)
                print(
                    f"agent-loop eval compare: warning: {side} ({path}) is a partial run "
                    f"({run.note}): only the instances it finished are paired",
                    file=sys.stderr,
                )
        print(comparison.model_dump_json())
    else:
        print(comparison_text(comparison, a_name=str(args.a), b_name=str(args.b)))
    return 0
