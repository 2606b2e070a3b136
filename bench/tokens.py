"""Model tokens per pull request, with masking and prompt caching off and on.

Each task is the loop as cron runs it: `agent-loop run builder` (then `reviewer`), each
tick in its own process, against the GitHub emulator served on loopback, with an
Anthropic model (`anthropic/claude-sonnet-4-5`) reached through litellm at a local
Messages API (`serve_messages_model`). A `ScriptedModel` answers, so every
configuration sends exactly the same conversation; a `SimulatedPromptCache` (Anthropic's
rules: prefixes up to a `cache_control` breakpoint, five minutes, nothing under 1,024
tokens) decides what each request reads from and writes to the cache, and the run
records hold what it reported. Tokens are counted as one per four characters of each
content block's JSON (`agent_loop_testing._prompt_cache`), a constant factor off a real
tokenizer that the ratios do not depend on.

The tasks:

- `demo`: the demo's project and its scripted conversations (`agent_loop.demo_scripts*`):
  the builder implements `Inventory.total_value()` (6 turns), then the reviewer fixes the
  PR after the owner's review comment (6 turns);
- `httpx`: a real project, httpx's own source as installed from `uv.lock` (22 modules,
  7,942 lines), and a realistic issue: name the request's method in
  `Response.raise_for_status()`'s message. The builder explores as an agent does
  (listing, searching, reading whole modules page by page: 19 turns and more), stages
  the change and a test, and the verifier reads two pages; then the reviewer answers the
  owner's review comment (10 turns and more). Twice: staging `httpx/_models.py` whole
  with `stage_file` (1,277 lines of output for a two-line change: all there was before
  `edit_file`), and with `edit_file`, one exact replacement per place.

The configurations: `today` (no masking, no cache markers: what every run sent before),
`masked` (`AGENT_LOOP_KEEP_TURNS` at its default: results older than the last K turns
pile up to `MASK_AT_CHARS` and are then masked at once), `cached`
(`AGENT_LOOP_PROMPT_CACHE`), both, both with the old results masked one turn at a time
(to show why they are masked in blocks), and both at larger K.

Billed-equivalent tokens price everything in input tokens, as Anthropic bills:
uncached input x 1, cache writes x 1.25, cache reads x 0.1, output x the model's output
to input price ratio (5 for Claude Sonnet 4.5, from litellm's price map).

Run with `uv run --frozen python bench/tokens.py [--task TEXT] [--config TEXT]`; it
prints Markdown tables (`--help` says more).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent_loop.demo_project import FEATURE, FILES, REVIEW_COMMENT
from agent_loop.demo_scripts_builder import builder_episodes
from agent_loop.demo_scripts_followup import reviewer_episodes
from agent_loop_common.llm import ALLOW_MODEL_REQUESTS_ENV, load_litellm
from agent_loop_common.records import RunRecord, Usage
from agent_loop_common.runtime import local_memory
from agent_loop_common.settings import load_settings
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    GitHubEmulator,
    MessagesServer,
    ScriptedCall,
    ScriptedModel,
    SimulatedPromptCache,
    Turn,
    call,
    emulator_client,
    serve_messages_model,
    shown_lines,
    stored_record,
    turn,
)

MODEL = "anthropic/claude-sonnet-4-5"
CLI = str(Path(sys.executable).with_name("agent-loop"))
WRITE, READ = 1.25, 0.1
"""Anthropic's cache prices as multiples of the input price (five-minute writes)."""


# ---------------------------------------------------------------- the configurations


@dataclass(frozen=True)
class Config:
    name: str
    keep_turns: int = 0
    cache: bool = False
    mask_at: int | None = None
    """Characters of older results masked at once; `None`: `MASK_AT_CHARS` (what ships)."""


KEEP = 2
"""`AGENT_LOOP_KEEP_TURNS`'s default."""

CONFIGS = [
    Config("today"),
    Config(f"masked (K={KEEP})", keep_turns=KEEP),
    Config("cached", cache=True),
    Config(f"masked (K={KEEP}) + cached", keep_turns=KEEP, cache=True),
    Config(
        f"masked one turn at a time (K={KEEP}) + cached", keep_turns=KEEP, cache=True, mask_at=0
    ),
    Config("masked (K=4) + cached", keep_turns=4, cache=True),
    Config("masked (K=8) + cached", keep_turns=8, cache=True),
]


# ---------------------------------------------------------------- the tasks


@dataclass
class Task:
    name: str
    files: dict[str, str]
    issue: tuple[str, str]
    builder: Callable[[], ScriptedModel]
    reviewer: Callable[[int], ScriptedModel]
    """The reviewer's model, given the owner's review comment id."""
    comment: tuple[str, int, str]
    """The owner's inline review comment on the PR: (path, line, body)."""


def _demo_builder() -> ScriptedModel:
    episode = next(e for e in builder_episodes() if e.name == "builder: feature")
    return episode.model


def _demo_reviewer(comment_id: int) -> ScriptedModel:
    return reviewer_episodes(comment_id)[0].model


def _httpx_files() -> dict[str, str]:
    import httpx

    root = Path(httpx.__file__).parent
    files = {
        f"httpx/{p.relative_to(root)}": p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*.py"))
    }
    files["README.md"] = (
        "# HTTPX\n\nA next-generation HTTP client for Python (the project's source as "
        f"installed, version {httpx.__version__}).\n"
    )
    files["pyproject.toml"] = '[project]\nname = "httpx"\nversion = "0.28.1"\n'
    return files


_OLD_MESSAGE = "for url '{0.url}'"
_NEW_MESSAGE = "for {method} '{0.url}'"
_REVIEWED_MESSAGE = "for {method} url '{0.url}'"
_FORMAT = "message = message.format(self, error_type=error_type)"
_FORMAT_METHOD = "message = message.format(self, error_type=error_type, method=request.method)"


_TEST = """\
import httpx
import pytest


def _response(status: int, method: str = "GET") -> httpx.Response:
    request = httpx.Request(method, "https://example.org/items/1")
    return httpx.Response(status, request=request)


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_the_message_names_the_method(method: str) -> None:
    with pytest.raises(httpx.HTTPStatusError) as raised:
        _response(404, method).raise_for_status()
    assert f"for {method} " in str(raised.value)


def test_a_redirect_names_the_method_too() -> None:
    request = httpx.Request("PUT", "https://example.org/a")
    response = httpx.Response(301, headers={"location": "/b"}, request=request)
    with pytest.raises(httpx.HTTPStatusError) as raised:
        response.raise_for_status()
    assert "for PUT " in str(raised.value)


def test_success_returns_the_response() -> None:
    response = _response(200)
    assert response.raise_for_status() is response
"""

_HTTPX_ISSUE = (
    "raise_for_status(): name the request method in the error message",
    "When a request fails, `Response.raise_for_status()` raises `HTTPStatusError` with a "
    "message like\n\n    Client error '404 Not Found' for url 'https://example.org/items/1'\n\n"
    "In our logs we see failures from GET, POST and DELETE calls to the same URL and "
    "cannot tell them apart without the request object. Please put the method in the "
    "message, e.g. `Client error '404 Not Found' for DELETE 'https://...'`, for the "
    "redirect message as well, and add tests. The exception's attributes stay as they "
    "are.",
)


def _change_models(files: dict[str, str], old: str, new: str, *, edits: bool) -> list[Turn]:
    """The turns that stage the change to `httpx/_models.py`: the whole file (stage_file,
    the only way before `edit_file`) or exact edits, one per place (edit_file)."""
    path = "httpx/_models.py"
    if not edits:
        content = files[path].replace(old, new).replace(_FORMAT, _FORMAT_METHOD)
        return [
            turn(tool_calls=[call("stage_file", path=path, content=content).expecting("Staged")])
        ]
    gap = '\\n"\n                "'
    places = [(f"{old}{gap}Redirect location", f"{new}{gap}Redirect location")]
    places.append((f"{old}{gap}For more", f"{new}{gap}For more"))
    if _FORMAT in files[path]:
        places.append((_FORMAT, _FORMAT_METHOD))
    return [
        turn(tool_calls=[call("edit_file", path=path, old_text=a, new_text=b).expecting("Edited")])
        for a, b in places
    ]


def _httpx_builder(edits: bool) -> ScriptedModel:
    files = _httpx_files()
    read = functools.partial(call, "read_file")
    agent: list[Turn] = [
        turn(tool_calls=[call("read_issue")]),
        turn(tool_calls=[call("list_files", directory="httpx")]),
        turn(tool_calls=[call("search_code", pattern="raise_for_status")]),
        turn(tool_calls=[read(path="httpx/_models.py")]),
        turn(tool_calls=[read(path="httpx/_models.py", start_line=601)]),
        turn(tool_calls=[read(path="httpx/_models.py", start_line=1201)]),
        turn(tool_calls=[read(path="httpx/_exceptions.py")]),
        turn(tool_calls=[call("search_code", pattern="HTTPStatusError")]),
        turn(tool_calls=[read(path="httpx/_client.py")]),
        turn(tool_calls=[read(path="httpx/_client.py", start_line=601)]),
        turn(tool_calls=[read(path="httpx/_status_codes.py")]),
        turn(tool_calls=[read(path="httpx/__init__.py")]),
        turn(tool_calls=[call("search_code", pattern="Client error")]),
        turn(tool_calls=[read(path="httpx/_api.py")]),
        turn(tool_calls=[read(path="httpx/_models.py", start_line=790, max_lines=45)]),
        *_change_models(files, _OLD_MESSAGE, _NEW_MESSAGE, edits=edits),
        turn(tool_calls=[call("stage_file", path="tests/test_raise_for_status.py", content=_TEST)]),
        turn(
            tool_calls=[
                call(
                    "submit_implementation",
                    title="raise_for_status(): name the request method",
                    body="The message now reads `... for DELETE 'https://...'`; tests cover "
                    "three methods, a redirect and a success.",
                    summary="The method in raise_for_status()'s message, with tests.",
                ).expecting("Submitted 2 path(s)")
            ]
        ),
        turn("Submitted the change for verification."),
    ]
    verifier = [
        turn(tool_calls=[read(path="httpx/_models.py", start_line=780, max_lines=60)]),
        turn(tool_calls=[read(path="httpx/_exceptions.py", start_line=1, max_lines=120)]),
        turn('Checked the message and the tests.\n\n{"verified": true, "notes": "ok"}'),
    ]
    return ScriptedModel(agent, routes={VERIFIER_MARKER: verifier}, name="httpx builder")


def _reviewed_base(files: dict[str, str]) -> dict[str, str]:
    """The pull request's head, which the reviewer changes: the builder's change applied."""
    path = "httpx/_models.py"
    changed = files[path].replace(_OLD_MESSAGE, _NEW_MESSAGE).replace(_FORMAT, _FORMAT_METHOD)
    return {**files, path: changed}


def _fix_test(edits: bool) -> ScriptedCall:
    path, old, new = "tests/test_raise_for_status.py", 'f"for {method} "', 'f"for {method} url "'
    if edits:
        return call("edit_file", path=path, old_text=old, new_text=new).expecting("Edited")
    return call("stage_file", path=path, content=_TEST.replace(old, new))


def _httpx_reviewer(comment_id: int, edits: bool) -> ScriptedModel:
    files = _reviewed_base(_httpx_files())
    read = functools.partial(call, "read_file")
    agent: list[Turn] = [
        turn(tool_calls=[call("get_diff")]),
        turn(tool_calls=[call("list_feedback").expecting(str(comment_id))]),
        turn(tool_calls=[read(path="httpx/_models.py")]),
        turn(tool_calls=[read(path="httpx/_models.py", start_line=601)]),
        turn(tool_calls=[read(path="tests/test_raise_for_status.py")]),
        turn(tool_calls=[call("search_code", pattern="for url")]),
        *_change_models(files, _NEW_MESSAGE, _REVIEWED_MESSAGE, edits=edits),
        turn(tool_calls=[_fix_test(edits)]),
        turn(
            tool_calls=[
                call(
                    "submit_fix",
                    summary="Keeps the word 'url' after the method, as the review asked.",
                    replies=[{"comment_id": comment_id, "reply": "Done: `for GET url '...'`."}],
                ).expecting("Submitted a fix")
            ]
        ),
        turn("Submitted the fix for the review comment."),
    ]
    verifier = [turn('{"verified": true, "notes": "The reply and the change agree."}')]
    return ScriptedModel(agent, routes={VERIFIER_MARKER: verifier}, name="httpx reviewer")


_HTTPX_COMMENT = (
    "httpx/_models.py",
    810,
    "Please keep the word `url` after the method (`for GET url '...'`): our alerting greps for it.",
)

TASKS = [
    Task(
        "demo",
        FILES,
        (FEATURE.title, FEATURE.body),
        _demo_builder,
        _demo_reviewer,
        ("tests/test_inventory.py", 1, REVIEW_COMMENT),
    ),
    Task(
        "httpx, whole files (stage_file)",
        {},  # the installed source, read at run time
        _HTTPX_ISSUE,
        functools.partial(_httpx_builder, False),
        functools.partial(_httpx_reviewer, edits=False),
        _HTTPX_COMMENT,
    ),
    Task(
        "httpx, edits (edit_file)",
        {},
        _HTTPX_ISSUE,
        functools.partial(_httpx_builder, True),
        functools.partial(_httpx_reviewer, edits=True),
        _HTTPX_COMMENT,
    ),
]


# ---------------------------------------------------------------- running


@dataclass
class Figures:
    usage: Usage
    calls: int = 0

    @property
    def uncached(self) -> int:
        u = self.usage
        return u.tokens_in - u.tokens_cache_read - u.tokens_cache_write

    def billed(self, ratio: float) -> float:
        u = self.usage
        return (
            self.uncached
            + WRITE * u.tokens_cache_write
            + READ * u.tokens_cache_read
            + ratio * u.tokens_out
        )


@dataclass
class Result:
    builder: Figures
    reviewer: Figures
    extra: dict[str, str] = field(default_factory=dict[str, str])


def _env(
    home: Path, github_url: str, server: MessagesServer, emulator: GitHubEmulator, config: Config
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
    env.update(
        {
            "GITHUB_API_URL": github_url,
            "GITHUB_TOKEN": emulator.bot_token,
            "AGENT_LOOP_REPO": emulator.full_name,
            "AGENT_LOOP_HOME": str(home),
            "AGENT_LOOP_MODEL": MODEL,
            "AGENT_LOOP_API_BASE": server.api_base,
            "AGENT_LOOP_SANDBOX": "off",
            "AGENT_LOOP_KEEP_TURNS": str(config.keep_turns),
            "AGENT_LOOP_PROMPT_CACHE": "on" if config.cache else "off",
            "AGENT_LOOP_LOG_LEVEL": "WARNING",
            "ANTHROPIC_API_KEY": "sk-ant-bench-not-a-key",
            ALLOW_MODEL_REQUESTS_ENV: "1",
        }
    )
    if config.mask_at is not None:
        env["BENCH_MASK_AT"] = str(config.mask_at)
    return env


_CHILD = """\
import os, sys
import agent_loop_common.llm._masking as masking
mask_at, shipped = int(os.environ.pop("BENCH_MASK_AT")), masking.mask_observations
masking.mask_observations = lambda messages, *, keep_turns, **_: shipped(
    messages, keep_turns=keep_turns, mask_at_chars=mask_at
)
from agent_loop.cli import main
sys.exit(main(sys.argv[1:]))
"""
"""A tick whose masking piles up `BENCH_MASK_AT` characters of older results instead of
`MASK_AT_CHARS` before masking them: the same CLI, its masking function given another
threshold (the only change)."""


def _tick(env: dict[str, str], role: str) -> dict[str, object]:
    argv = [CLI, "run", role, "--json"]
    if "BENCH_MASK_AT" in env:
        argv = [sys.executable, "-c", _CHILD, "run", role, "--json"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{role} tick failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _record(emulator: GitHubEmulator, home: Path, run_id: str) -> RunRecord:
    settings = load_settings(repo=emulator.full_name, home=home, github_token=emulator.bot_token)
    return stored_record(local_memory(settings), run_id)


def _comment(emulator: GitHubEmulator, where: tuple[str, int, str]) -> int:
    """The owner's inline review comment on the one open PR; its id. It sits on the
    task's line if the PR's diff shows it, else on the first line the diff adds to that
    file (where a reviewer would put it)."""
    pull = next(p for p in emulator.pulls() if p.state == "open")
    path, wanted, body = where

    async def line() -> int:
        async with emulator_client(emulator, token=emulator.owner_token) as owner:
            files = {f.filename: f for f in await owner.list_pull_files(pull.number)}
        shown = shown_lines(files[path].patch or "")
        if any(n == wanted for n, _ in shown):
            return wanted
        return next(n for n, added in shown if added)

    emulator.add_review(
        pull.number, author=emulator.owner, comments=[(path, asyncio.run(line()), body)]
    )

    async def newest() -> int:
        async with emulator_client(emulator, token=emulator.owner_token) as owner:
            return (await owner.list_review_comments(pull.number))[-1].id

    return asyncio.run(newest())


def run(task: Task, config: Config, tmp: Path) -> Result:
    emulator = GitHubEmulator()
    emulator.seed_files(task.files or _httpx_files())
    emulator.add_issue(*task.issue)
    home = tmp / f"{task.name}-{config.name.replace(' ', '-')}"
    builder = task.builder()
    with (
        emulator.serve() as github_url,
        serve_messages_model(builder, cache=SimulatedPromptCache()) as server,
    ):
        env = _env(home, github_url, server, emulator, config)
        built = _tick(env, "builder")
        builder.assert_finished()
        if built["outcome"] != "opened_pr":
            raise SystemExit(f"{task.name}: expected a PR, got {built}")
        first = _record(emulator, home, str(built["run_id"]))
        reviewer = task.reviewer(_comment(emulator, task.comment))
        server.model = reviewer
        reviewed = _tick(env, "reviewer")
        reviewer.assert_finished()
        if reviewed["outcome"] != "pushed_fix":
            raise SystemExit(f"{task.name}: expected a pushed fix, got {reviewed}")
        second = _record(emulator, home, str(reviewed["run_id"]))
    return Result(
        Figures(first.usage, first.usage.llm_calls), Figures(second.usage, second.usage.llm_calls)
    )


def _ratio() -> float:
    info = load_litellm().get_model_info(MODEL)
    return float(info["output_cost_per_token"]) / float(info["input_cost_per_token"])


def _pct(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole else "-"


@dataclass(frozen=True)
class PerPR:
    """A pull request's figures: its builder run and its reviewer run together."""

    tokens_in: int
    read: int
    write: int
    out: int
    billed: float

    @classmethod
    def of(cls, result: Result, ratio: float) -> PerPR:
        runs = (result.builder, result.reviewer)
        return cls(
            tokens_in=sum(r.usage.tokens_in for r in runs),
            read=sum(r.usage.tokens_cache_read for r in runs),
            write=sum(r.usage.tokens_cache_write for r in runs),
            out=sum(r.usage.tokens_out for r in runs),
            billed=sum(r.billed(ratio) for r in runs),
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Model tokens per pull request (builder + reviewer through the CLI "
        "against the emulator and a caching Messages API stub), with masking and prompt "
        "caching off and on; prints Markdown tables.",
        epilog=f"Tasks: {', '.join(t.name for t in TASKS)}. Configurations: "
        f"{', '.join(c.name for c in CONFIGS)}. All of them: about 16 minutes on 2 cores.",
    )
    parser.add_argument(
        "--task",
        action="append",
        metavar="TEXT",
        help="only the tasks whose name contains TEXT (repeatable; default: all)",
    )
    parser.add_argument(
        "--config",
        action="append",
        metavar="TEXT",
        help="only the configurations whose name contains TEXT, besides `today` "
        "(repeatable; default: all)",
    )
    args = parser.parse_args()
    tasks = [t for t in TASKS if not args.task or any(w in t.name for w in args.task)]
    configs = [
        c
        for c in CONFIGS
        if c.name == "today" or not args.config or any(w in c.name for w in args.config)
    ]
    if not tasks:
        parser.error(f"no task matches {args.task}")
    ratio = _ratio()
    results: dict[tuple[str, str], Result] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for task in tasks:
            for config in configs:
                results[(task.name, config.name)] = run(task, config, Path(tmp))
                print(f"  ran {task.name} / {config.name}", file=sys.stderr)
    print(
        f"Billed-equivalent: uncached input + {WRITE} x cache writes + {READ} x cache reads "
        f"+ {ratio:g} x output (Claude Sonnet 4.5's output/input price).\n"
    )
    for task in tasks:
        today = results[(task.name, "today")]
        base = PerPR.of(today, ratio)
        print(
            f"### {task.name}: builder ({today.builder.calls} model calls) + reviewer "
            f"({today.reviewer.calls}), per PR\n"
        )
        print(
            "| configuration | input tokens | vs today | read from cache | written to cache "
            "| output | billed-equivalent | vs today | builder input | reviewer input |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for config in configs:
            r = results[(task.name, config.name)]
            pr = PerPR.of(r, ratio)
            print(
                f"| {config.name} | {pr.tokens_in:,} | {_pct(pr.tokens_in, base.tokens_in)} "
                f"| {_pct(pr.read, pr.tokens_in)} | {_pct(pr.write, pr.tokens_in)} | {pr.out:,} "
                f"| {pr.billed:,.0f} | {_pct(pr.billed, base.billed)} "
                f"| {r.builder.usage.tokens_in:,} | {r.reviewer.usage.tokens_in:,} |"
            )
        print()
    whole, edits = TASKS[1].name, TASKS[2].name
    if any((name, c.name) not in results for name in (whole, edits) for c in CONFIGS[:4]):
        return  # the summary needs both httpx tasks' first four configurations
    today = PerPR.of(results[(whole, "today")], ratio)
    masked = PerPR.of(results[(edits, CONFIGS[1].name)], ratio)
    both = PerPR.of(results[(edits, CONFIGS[3].name)], ratio)
    print("### The longest task (httpx), against today's tools and prompts\n")
    print("| figure | today | now | target |")
    print("|---|---:|---:|---|")
    print(
        f"| input tokens per PR, masked | {today.tokens_in:,} | {masked.tokens_in:,} "
        f"({_pct(masked.tokens_in, today.tokens_in)}) | at most half |"
    )
    print(
        f"| input read from the cache, masked and cached | - | {_pct(both.read, both.tokens_in)} "
        "| at least 70% |"
    )
    print(
        f"| billed-equivalent tokens per PR, masked and cached | {today.billed:,.0f} "
        f"| {both.billed:,.0f} ({_pct(both.billed, today.billed)}) | at most a quarter |"
    )


if __name__ == "__main__":
    main()
