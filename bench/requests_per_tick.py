"""GitHub requests per agent tick: an issue becoming a pull request, a spec issue becoming
sub-issues, a reviewer fix with one reply, and idle ticks of both agents.

Runs the real builder and reviewer pipelines (in process, a strict scripted model, the
sandbox off) against the GitHub emulator and prints a Markdown table: API requests sent,
writes among them, 304 answers, and the primary rate limit the tick used. The request
budget of issue 17 is tested on the same scenarios (`tests/test_request_budget.py`
imports them from here). Run with `uv run --frozen python bench/requests_per_tick.py`
(`--routes` also prints each tick's requests by route).

Counted are requests to the REST API. A tarball download answers 302 and the client
follows to a codeload URL: that second request is a download, not an API request (it
does not count against the rate limit on GitHub either), so it is left out of
`requests` and shown by `--routes`.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from agent_loop_builder import run_builder_tick
from agent_loop_common.github import RequestStats, route_writes
from agent_loop_common.logs import configure_logging
from agent_loop_common.records import Outcome, Role, RunRecord
from agent_loop_common.runtime import Runtime, use_model
from agent_loop_common.settings import Settings
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_reviewer import REVIEWER_MARKER, run_reviewer_tick
from agent_loop_testing import (
    GitHubEmulator,
    ModelSlot,
    ScriptedModel,
    call,
    emulator_client,
    emulator_runtime,
    emulator_settings,
    turn,
)

CORE = "def make_widget(name):\n    return {'name': name}\n"
CORE_FIXED = "def make_widget(name, colour='blue'):\n    return {'name': name, 'colour': colour}\n"
TEST = "from widgets.core import make_widget\n\n\ndef test_colour():\n    assert make_widget('a')['colour'] == 'blue'\n"
VERIFIED = '{"verified": true, "notes": "Checked."}'

BUILDER_ISSUE_TO_PR = "builder: issue -> PR"
BUILDER_SPEC = "builder: spec -> 3 sub-issues"
REVIEWER_FIX = "reviewer: fix with one reply"
BUILDER_IDLE = "builder: later idle tick"
REVIEWER_IDLE = "reviewer: later idle tick"


@dataclass(frozen=True)
class Cost:
    """What one tick cost on GitHub."""

    requests: int
    """Every request sent (304s, pages and token exchanges included)."""
    writes: int
    """Operations that create or change something (`route_writes`): a request that is not
    a GET or a GraphQL query is one, a GraphQL document of N mutations is N."""
    not_modified: int
    """Conditional reads answered 304."""
    rate_limit_used: int
    """The bot's primary rate limit the tick consumed (the emulator's count)."""
    routes: dict[str, dict[int, int]]
    """The tick's requests by route and status."""


@dataclass
class Bench:
    """One emulated repository, the settings acting as its bot, and memory in `root`."""

    emulator: GitHubEmulator
    settings: Settings
    root: Path
    slot: ModelSlot

    async def tick(self, role: Role, target: int | None = None) -> tuple[RunRecord | None, Cost]:
        """Run one tick of `role` as a schedule starts it; its record and its cost."""
        emu = self.emulator
        before = emu.rate_limit_remaining(emu.bot)
        stats = RequestStats()
        async with emulator_runtime(self.settings, emu, role, memory_root=self.root / "mem") as rt:
            stats = rt.github.stats
            record = await _pipeline(role)(rt, target)
        used = before - emu.rate_limit_remaining(emu.bot)
        routes = stats.by_route()
        api = {route: counts for route, counts in routes.items() if not _download(route)}
        return record, Cost(
            requests=sum(n for counts in api.values() for n in counts.values()),
            writes=sum(
                route_writes(route) * n for route, counts in api.items() for n in counts.values()
            ),
            not_modified=sum(counts.get(304, 0) for counts in api.values()),
            rate_limit_used=used,
            routes=routes,
        )


def _download(route: str) -> bool:
    """A tarball download that the API redirected to (codeload, or the emulator's)."""
    return route.startswith(("GET //", "GET /_codeload/"))


def _expect(record: RunRecord | None, outcome: Outcome) -> RunRecord:
    if record is None or record.outcome is not outcome:
        raise RuntimeError(f"expected a run ending {outcome.value}, got {record!r}")
    return record


def _pipeline(role: Role) -> Callable[[Runtime, int | None], Awaitable[RunRecord | None]]:
    return run_builder_tick if role is Role.BUILDER else run_reviewer_tick


def seeded(root: Path, slot: ModelSlot) -> Bench:
    """A small Python repository with one maintainer, acting as the bot; its runs are
    answered by the model put in `slot` (installed with `use_model`)."""
    emu = GitHubEmulator()
    emu.seed_files(
        {
            "README.md": "# widgets\n\nA tiny widget library.\n",
            "src/widgets/__init__.py": '"""Widgets."""\n',
            "src/widgets/core.py": CORE,
            "tests/test_core.py": "from widgets.core import make_widget\n",
        }
    )
    emu.add_user("alice", permission="write")
    return Bench(emu, emulator_settings(emu, root / "home", max_tries=2), root, slot)


def builder_model() -> ScriptedModel:
    """The builder reads, stages a change and its test, submits; the verifier agrees."""
    return ScriptedModel(
        [
            turn(tool_calls=[call("read_file", path="src/widgets/core.py")]),
            turn(tool_calls=[call("stage_file", path="src/widgets/core.py", content=CORE_FIXED)]),
            turn(tool_calls=[call("stage_file", path="tests/test_core.py", content=TEST)]),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title="Add a colour to widgets",
                        body="Adds a `colour` argument defaulting to blue.",
                        summary="make_widget takes a colour.",
                    )
                ]
            ),
            turn("Done."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED)]},
    )


def spec_model() -> ScriptedModel:
    """The builder splits a spec into three sub-issues, one depending on another."""
    items = [
        ("model", "Widget model", "A dataclass for widgets. Accept: tests.", []),
        ("api", "Widget API", "Get and put over the model. Accept: tests.", ["model"]),
        ("docs", "Document widgets", "Explain widgets in the README.", []),
    ]
    return ScriptedModel(
        [
            turn(tool_calls=[call("read_issue")]),
            *(
                turn(
                    tool_calls=[
                        call("stage_issue", key=key, title=title, body=body, depends_on=deps)
                    ]
                )
                for key, title, body, deps in items
            ),
            turn(tool_calls=[call("submit_decomposition", summary="Model first, then the API.")]),
            turn("Split."),
        ],
        routes={VERIFIER_MARKER: [turn('{"verified": true, "notes": "Covers the spec."}')]},
    )


def reviewer_clean() -> ScriptedModel:
    """The reviewer's first pass over a new PR finds nothing to change."""
    return ScriptedModel(
        routes={
            REVIEWER_MARKER: [
                turn(tool_calls=[call("no_changes", reason="Looks right to me.")]),
                turn("Done."),
            ]
        }
    )


def reviewer_fix(comment_id: int) -> ScriptedModel:
    """The reviewer fixes what one review comment asks and replies to it."""
    return ScriptedModel(
        routes={
            REVIEWER_MARKER: [
                turn(tool_calls=[call("read_file", path="src/widgets/core.py")]),
                turn(
                    tool_calls=[call("stage_file", path="src/widgets/core.py", content=CORE_FIXED)]
                ),
                turn(
                    tool_calls=[
                        call(
                            "submit_fix",
                            summary="make_widget takes a colour.",
                            replies=[{"comment_id": comment_id, "reply": "Done: it does now."}],
                        )
                    ]
                ),
                turn("Done."),
            ],
            VERIFIER_MARKER: [turn(VERIFIED)],
        }
    )


async def builder_issue_to_pr(bench: Bench) -> Cost:
    """One builder tick that claims an issue, opens its PR and releases the claim."""
    bench.emulator.add_issue("Add a colour to widgets", "Widgets need a colour.", author="alice")
    bench.slot.put(builder_model())
    record, cost = await bench.tick(Role.BUILDER)
    _expect(record, Outcome.OPENED_PR)
    return cost


async def builder_spec_to_sub_issues(bench: Bench) -> Cost:
    """One builder tick that splits a spec issue into three sub-issues and closes it."""
    spec = "Spec: widgets get storage.\n\n- A widget model.\n- An API over it.\n- Docs.\n"
    bench.emulator.add_issue("Widget storage", spec, author="alice")
    bench.slot.put(spec_model())
    record, cost = await bench.tick(Role.BUILDER)
    if len(_expect(record, Outcome.OPENED_ISSUES).links.issue_urls) != 3:
        raise RuntimeError(f"expected three sub-issues, got {record!r}")
    return cost


async def reviewer_fix_with_reply(bench: Bench) -> Cost:
    """A reviewer tick fixing an agent PR after one review comment, with one reply.

    The PR is opened and passed clean by an earlier reviewer tick (not counted), as in
    the loop: the counted tick is the one that answers new feedback.
    """
    emu = bench.emulator
    emu.push(
        "agent-loop/issue-9-widget",
        {"src/widgets/core.py": CORE + "\n"},
        author=emu.bot,
        message="Widget",
    )
    async with emulator_client(emu) as gh:
        pull = await gh.create_pull(
            title="Widget", body="Implements #9.", head="agent-loop/issue-9-widget", base="main"
        )
    bench.slot.put(reviewer_clean())
    record, _ = await bench.tick(Role.REVIEWER)
    _expect(record, Outcome.REVIEWED_CLEAN)
    emu.add_review(
        pull.number, author="alice", comments=[("src/widgets/core.py", 1, "Add a colour.")]
    )
    async with emulator_client(emu) as gh:
        (comment,) = await gh.list_review_comments(pull.number)
    bench.slot.put(reviewer_fix(comment.id))
    record, cost = await bench.tick(Role.REVIEWER)
    _expect(record, Outcome.PUSHED_FIX)
    return cost


async def idle_ticks(bench: Bench, role: Role, ticks: int = 3) -> list[Cost]:
    """`ticks` ticks of `role` in a row with nothing to do; the cost of each."""
    costs: list[Cost] = []
    for _ in range(ticks):
        record, cost = await bench.tick(role)
        if record is not None:
            raise RuntimeError(f"expected an idle tick, got {record!r}")
        costs.append(cost)
    return costs


async def measure(root: Path) -> dict[str, Cost]:
    """Every phase of the table, the builder's and the reviewer's on fresh repositories."""
    out: dict[str, Cost] = {}
    with use_model(slot := ModelSlot()):
        bench = seeded(root / "builder", slot)
        out[BUILDER_ISSUE_TO_PR] = await builder_issue_to_pr(bench)
        first, *later = await idle_ticks(bench, Role.BUILDER)
        out["builder: first idle tick"], out[BUILDER_IDLE] = first, later[-1]
        out[BUILDER_SPEC] = await builder_spec_to_sub_issues(seeded(root / "spec", slot))
        bench = seeded(root / "reviewer", slot)
        out[REVIEWER_FIX] = await reviewer_fix_with_reply(bench)
        first, *later = await idle_ticks(bench, Role.REVIEWER)
        out["reviewer: first idle tick"], out[REVIEWER_IDLE] = first, later[-1]
    return out


BEFORE: dict[str, tuple[int, int, int, int]] = {
    BUILDER_ISSUE_TO_PR: (22, 9, 2, 20),
    "builder: first idle tick": (3, 0, 1, 2),
    BUILDER_IDLE: (3, 0, 3, 0),
    BUILDER_SPEC: (21, 10, 0, 21),
    REVIEWER_FIX: (26, 10, 2, 24),
    "reviewer: first idle tick": (7, 0, 1, 6),
    REVIEWER_IDLE: (7, 0, 7, 0),
}
"""(requests, writes, 304s, rate limit used) of each phase measured by this script at
commit 3a19eff, before issue 23's request budget (issue 17 had brought the issue -> PR
tick from 32 requests to 22 and the reviewer fix from 39 to 26). The spec's row was
measured later with this script's scenario run on that commit's code."""


def table(costs: dict[str, Cost]) -> str:
    """A Markdown table, each cell `before -> now` where a figure was measured before."""

    def cell(label: str, i: int, now: int) -> str:
        before = BEFORE.get(label)
        return f"{before[i]} -> {now}" if before is not None and before[i] != now else str(now)

    lines = [
        "| tick | requests | writes | 304s | rate limit used |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, c in costs.items():
        figures = (c.requests, c.writes, c.not_modified, c.rate_limit_used)
        lines.append(
            f"| {label} | " + " | ".join(cell(label, i, n) for i, n in enumerate(figures)) + " |"
        )
    return "\n".join(lines)


def main() -> None:
    configure_logging("console", "WARNING")
    with tempfile.TemporaryDirectory() as tmp:
        costs = asyncio.run(measure(Path(tmp)))
    print(table(costs))
    if "--routes" in sys.argv:
        for label, cost in costs.items():
            print(f"\n{label}:")
            for route, counts in cost.routes.items():
                print(f"  {route}: {counts}")


if __name__ == "__main__":
    main()
