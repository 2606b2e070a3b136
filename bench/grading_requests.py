"""GitHub requests the distiller's grading spends on the PR-level outcome vector.

Runs the real grading step (`follow_up` with the maintainers' `Trust`, as a tick under
its claim calls it) against the GitHub emulator, one fresh runtime per step as ticks
start (so the ETag cache comes from memory), and prints a Markdown table: requests,
304 answers among them, and the routes. Steps: an agent PR first graded while open; the
same PR found merged (threads, first CI, merge commit, revert listing); another closed
unmerged after comments by two people and a label; a later tick with nothing changed
while the merge awaits its revert check; the tick after a revert landed. Then the time
the measurement spends on the PR-level feed (`fold_pull_outcomes`) per tick, for
grading windows of 1,000 and 5,000 decided PRs with 20 lessons each: the tick that
folds them all, and a later tick that finds nothing new (what every tick pays).

Run with `uv run --frozen python bench/grading_requests.py`.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent_loop_common.memory import write_grades
from agent_loop_common.records import (
    Attempt,
    Grade,
    GradeState,
    LessonExposure,
    Links,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
)
from agent_loop_common.runtime import Runtime
from agent_loop_common.trust import Trust
from agent_loop_distiller import EffectBook, EffectPolicy, follow_up
from agent_loop_distiller._measure import fold_pull_outcomes
from agent_loop_testing import GitHubEmulator, emulator_runtime, emulator_settings

Step = Callable[[Runtime], Awaitable[None]]


def _record(run_id: str, issue: int, pr: int, repo: str) -> RunRecord:
    finished = datetime.now(UTC) - timedelta(minutes=3)
    return RunRecord(
        run_id=run_id,
        role=Role.BUILDER,
        target=Target(kind=TargetKind.ISSUE, number=issue, title=f"Issue {issue}"),
        outcome=Outcome.OPENED_PR,
        started_at=finished - timedelta(minutes=1),
        finished_at=finished,
        attempts=[Attempt(number=1, verified=True)],
        repo=repo,
        links=Links(pr_url=f"https://github.com/{repo}/pull/{pr}"),
        exposures=[LessonExposure(lesson_id="L-1", applicable=True, shown=True, holdout=0.2)],
    )


async def main() -> None:
    emu = GitHubEmulator(start=datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1))
    emu.seed_files({"README.md": "# widgets\n"})
    emu.add_user("maria", permission="maintain")
    emu.add_user("sam", permission="read")
    heads = [
        emu.push(f"agent-loop/issue-{n}", {f"f{n}.py": "X = 1\n"}, author=emu.bot, message="fix")
        for n in (1, 2)
    ]
    prs = [emu.open_pull(f"agent-loop/issue-{n}", title=f"Fix {n}", author=emu.bot) for n in (1, 2)]
    emu.set_check_run(heads[0], "ci", conclusion="success")
    emu.add_review(prs[0], author="maria", comments=[("f1.py", 1, "Rename X.")])
    with tempfile.TemporaryDirectory() as tmp:
        settings = emulator_settings(emu, Path(tmp) / "home", record_retention_days=2)
        rows: list[tuple[str, int, int, str]] = []
        records = [
            _record(f"b-{n}", n, pr, emu.full_name) for n, pr in zip((1, 2), prs, strict=True)
        ]

        async def grade(label: str, new: list[RunRecord]) -> None:
            async with emulator_runtime(
                settings, emu, Role.DISTILLER, memory_root=Path(tmp) / "memory"
            ) as rt:
                trust = Trust(rt.github, minimum="write", agent_login=emu.bot)
                before = Counter(rt.github.stats.by_route())
                total, free = rt.github.stats.total, rt.github.stats.not_modified
                result = await follow_up(
                    rt.github, rt.memory, new, datetime.now(UTC) + timedelta(days=4),
                    retention_days=2, force=True, trust=trust, repo=emu.full_name,
                )  # fmt: skip
                await write_grades(rt.memory, result.changed)
                routes = {
                    r: sum(codes.values())
                    for r, codes in rt.github.stats.by_route().items()
                    if r not in before or before[r] != codes
                }
                shown = ", ".join(
                    f"{r.replace('/repos/{owner}/{repo}', '')} x{n}"
                    for r, n in sorted(routes.items())
                )
                rows.append(
                    (
                        label,
                        rt.github.stats.total - total,
                        rt.github.stats.not_modified - free,
                        shown,
                    )
                )

        await grade("2 agent PRs first graded (open)", records)
        merge = emu.merge_pull(prs[0], by="maria")
        emu.add_comment(prs[1], "Superseded by #9.", author="maria")
        emu.add_comment(prs[1], "duplicate!", author="sam")
        emu.label_issue(prs[1], "wontfix", actor="maria")
        emu.close_pull(prs[1], by="maria")
        await grade("one merged, one closed unmerged (2 commenters, 1 labeller)", [])
        await grade("nothing changed, the merge awaits its revert check", [])
        emu.advance_clock(timedelta(days=2))
        emu.push("main", {"f1.py": None}, author="maria",
                 message=f"Revert\n\nThis reverts commit {merge}.")  # fmt: skip
        await grade("a revert landed on the default branch", [])
        await grade("nothing changed, every outcome decided", [])
    print("| grading step | requests | of which 304 | routes |")
    print("|---|---|---|---|")
    for label, total, free, shown in rows:
        print(f"| {label} | {total} | {free} | {shown} |")


def _window(n: int, lessons: int) -> list[Grade]:
    exposures = [
        LessonExposure(lesson_id=f"L-{i}", applicable=True, shown=i % 5 != 0,
                       held_out=i % 5 == 0, holdout=0.2)
        for i in range(lessons)
    ]  # fmt: skip
    now = datetime.now(UTC)
    return [
        Grade(
            target=Target(kind=TargetKind.PR, number=k), state=GradeState.MERGED,
            graded_at=now, run_id=f"b-{k}", repo="acme/widgets", exposures=exposures,
            unresolved_threads=k % 3, first_ci="passed" if k % 2 else "failed",
            reverted=k % 7 == 0,
        )
        for k in range(1, n + 1)
    ]  # fmt: skip


def fold_times() -> None:
    print()
    print("| decided PRs in the window | lessons each | first fold (ms) | later tick (ms) |")
    print("|---|---|---|---|")
    for n in (1_000, 5_000):
        grades = _window(n, 20)
        effects = EffectBook()
        start = time.perf_counter()
        fold_pull_outcomes(effects, {}, grades, EffectPolicy())
        first = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        fold_pull_outcomes(effects, {}, grades, EffectPolicy())
        later = (time.perf_counter() - start) * 1000
        print(f"| {n:,} | 20 | {first:.1f} | {later:.1f} |")


if __name__ == "__main__":
    asyncio.run(main())
    fold_times()
