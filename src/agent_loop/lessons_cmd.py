"""`agent-loop lessons`: read and edit the lessons the agents are shown, from local memory.

```text
agent-loop lessons list [--all] [--json]        the book (and, with --all, what left it)
agent-loop lessons show ID [--json]             one lesson: effect per outcome, diagnosis, replays, citations, provenance, history
agent-loop lessons retire ID [--reason TEXT]    take it out of the book, kept as the operator's
agent-loop lessons pin ID | unpin ID            the distiller may not change or expire it
```

Every command takes `--home` and, with several repositories in `AGENT_LOOP_REPOS`,
`--repo OWNER/NAME`. An id may be given without its repository (`L-1a2b3c4d`). An edit
changes the book at once for the next runs and is also kept in memory, so the distiller
(the book's only writer) applies it again at its next tick. Exit codes: 0, 1 when the
lesson is not found, 2 for bad usage. No command needs GitHub credentials.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # imported when the command runs: `agent-loop --help` stays fast
    from agent_loop_common.memory import MemoryLocation
    from agent_loop_common.records import Lesson, RetiredLesson

__all__ = ["add_parser", "main"]

EXIT_NOT_FOUND = 1
EXIT_USAGE = 2


def add_parser(commands: Any) -> None:
    """Add `lessons list|show|retire|pin|unpin` to the CLI's subcommands."""
    lessons = cast(
        argparse.ArgumentParser,
        commands.add_parser(
            "lessons",
            help="list, show, retire or pin the lessons the agents are shown",
            description="The distiller's lessons in local memory. See docs/memory.md.",
        ),
    )
    actions = lessons.add_subparsers(dest="lessons_command", metavar="ACTION", required=True)
    parsers = {
        "list": actions.add_parser("list", help="the lessons in the book"),
        "show": actions.add_parser("show", help="one lesson in full"),
        "retire": actions.add_parser("retire", help="retire a lesson (kept, as the operator's)"),
        "pin": actions.add_parser("pin", help="pin a lesson: the distiller keeps it as it is"),
        "unpin": actions.add_parser("unpin", help="let the distiller change or expire it again"),
    }
    parsers["list"].add_argument(
        "--all", action="store_true", help="also the lessons that left the book"
    )
    for name, sub in parsers.items():
        if name != "list":
            sub.add_argument("lesson_id", metavar="ID", help="the lesson's id")
        sub.add_argument("--json", action="store_true", help="print JSON")
        sub.add_argument("--home", type=Path, help="local state folder (AGENT_LOOP_HOME)")
        sub.add_argument("--repo", metavar="OWNER/NAME", help="which repository's lessons")
    parsers["retire"].add_argument("--reason", default="", help="why, kept with the lesson")


def _location(args: argparse.Namespace) -> MemoryLocation | None:
    from agent_loop_common.runtime import local_memory
    from agent_loop_common.settings import load_settings

    overrides: dict[str, Any] = {}
    home = cast(Path | None, args.home)
    if home is not None:
        overrides["home"] = home
    if not (os.environ.get("AGENT_LOOP_REPO", "").strip() or os.environ.get("AGENT_LOOP_REPOS")):
        overrides["repo"] = cast(str | None, args.repo) or "local/unset"
    if not (os.environ.get("GITHUB_TOKEN") or os.environ.get("GITHUB_APP_ID")):
        overrides["github_token"] = "unused-by-lessons"  # noqa: S105 (never calls GitHub)
    settings = load_settings(**overrides)
    repo = cast(str | None, args.repo)
    if settings.many_repos:
        listed = [r for r in settings.repos if "*" not in r]
        chosen = repo or (listed[0] if len(settings.repos) == 1 and listed else None)
        if chosen is None:
            print(
                "agent-loop lessons: each repository of AGENT_LOOP_REPOS has its own lessons; "
                "add --repo OWNER/NAME.",
                file=sys.stderr,
            )
            return None
        settings = settings.for_repo(chosen)
    return local_memory(settings)


def _state(lesson: Lesson) -> str:
    return lesson.state.value


def _action(lesson: Lesson) -> str:
    """The last diagnosis's action and whether it was carried out (`-`: nothing to do)."""
    d = lesson.diagnosis
    if d is None or d.action == "keep":
        return "-"
    return f"{d.action} ({'done' if d.done else 'flagged'})"


def _summary(lesson: Lesson) -> dict[str, object]:
    return {
        "id": lesson.id,
        "text": lesson.text,
        "state": _state(lesson),
        "diagnosis": _action(lesson),
        "citation_status": lesson.citation_status.value,
        "pinned": lesson.pinned,
        "author": lesson.author.value,
        "repo": lesson.repo,
        "hits": max(lesson.hits, len(lesson.source_run_ids)),
    }


def _list(location: MemoryLocation, *, everything: bool, as_json: bool) -> int:
    import asyncio

    from agent_loop._table import render_table
    from agent_loop.status import terminal_safe
    from agent_loop_common.memory import read_context, read_retired

    book = asyncio.run(read_context(location)).lessons.lessons
    retired = asyncio.run(read_retired(location)) if everything else []
    if as_json:
        out = {
            "lessons": [_summary(x) for x in book],
            "retired": [
                {
                    "id": r.lesson.id,
                    "kind": r.kind,
                    "reason": r.reason,
                    "by": r.by.value,
                    "replaced_by": r.replaced_by,
                    "at": r.at.isoformat(),
                }
                for r in retired
            ],
        }
        print(json.dumps(out, indent=2))
        return 0
    if not book and not retired:
        print("No lessons yet: the distiller writes them after graded runs.")
        return 0
    rows = [
        [
            terminal_safe(x.id),
            _state(x),
            _action(x),
            x.citation_status.value,
            ("pinned " if x.pinned else "") + x.author.value,
            terminal_safe(x.text),
        ]
        for x in book
    ]
    print(f"Lessons ({len(book)})")
    headers = ["id", "state", "diagnosis", "citations", "by", "lesson"]
    print(render_table(headers, rows, max_cell=60))
    if retired:
        print(f"Left the book ({len(retired)})")
        gone = [
            [
                terminal_safe(r.lesson.id),
                r.kind,
                r.by.value,
                terminal_safe(r.reason),
                ", ".join(r.replaced_by) or "-",
            ]
            for r in retired
        ]
        print(render_table(["id", "how", "by", "why", "replaced by"], gone, max_cell=50))
    return 0


def _detail(item: Lesson | RetiredLesson) -> dict[str, object]:
    from agent_loop_common.records import RetiredLesson

    if isinstance(item, RetiredLesson):
        return {**_detail(item.lesson), "left_the_book": item.model_dump(mode="json",
                                                                       exclude={"lesson"})}  # fmt: skip
    return item.model_dump(mode="json")


def _effects(location: MemoryLocation, lesson_id: str) -> list[str]:
    """The lesson's measured effect per outcome, one line each, as the distiller last
    saved it (its target metric first)."""
    import asyncio

    from agent_loop_common.memory import DistillerMemory
    from agent_loop_distiller import EffectBook, estimates_of

    async def read() -> EffectBook | None:
        return await (await DistillerMemory.open(location)).read_effects(EffectBook)

    effect = (asyncio.run(read()) or EffectBook()).lessons.get(lesson_id)
    if effect is None:
        return []
    found = estimates_of(effect)
    ordered = sorted(found, key=lambda e: e.metric is not effect.metric)
    return [("target " if e.metric is effect.metric else "") + e.text() for e in ordered]


def _show(location: MemoryLocation, wanted: str, *, as_json: bool) -> int:
    import asyncio

    from agent_loop.status import terminal_safe
    from agent_loop_common.memory import find_lesson, read_context, read_retired
    from agent_loop_common.records import RetiredLesson

    book = asyncio.run(read_context(location)).lessons.lessons
    item: Lesson | RetiredLesson | None = find_lesson(book, wanted)
    if item is None:
        retired = asyncio.run(read_retired(location))
        match = find_lesson([r.lesson for r in retired], wanted)
        item = next((r for r in retired if match is not None and r.lesson.id == match.id), None)
    if item is None:
        print(f"agent-loop lessons: no lesson {wanted!r}", file=sys.stderr)
        return EXIT_NOT_FOUND
    lesson = item.lesson if isinstance(item, RetiredLesson) else item
    detail = {**_detail(item), "effects": _effects(location, lesson.id)}
    if as_json:
        print(json.dumps(detail, indent=2))
        return 0
    for key, value in detail.items():
        if key == "diagnosis" and lesson.diagnosis is not None:
            # What was measured, how compliance was judged, the action done or flagged.
            shown = lesson.diagnosis.summary()
        elif key == "replay" and lesson.replay is not None:
            # The pairs replayed with and without it, and their sign test's e-values.
            from agent_loop_distiller import replay_line

            shown = replay_line(lesson.replay).removeprefix("replay: ")
        elif key == "effects":
            shown = "; ".join(cast("list[str]", value)) or "not measured yet"
        else:
            shown = value if isinstance(value, str) else json.dumps(value)
        print(f"{key}: {terminal_safe(shown)}")
    return 0


def _edit(location: MemoryLocation, op: str, wanted: str, reason: str, *, as_json: bool) -> int:
    import asyncio
    from datetime import UTC, datetime

    from agent_loop_common.memory import edit_as_operator
    from agent_loop_common.records import OperatorEdit

    try:
        login = getpass.getuser()
    except (KeyError, OSError):
        login = ""
    edit = OperatorEdit.model_validate(
        {
            "op": op,
            "lesson_id": wanted,
            "reason": reason,
            "login": login,
            "at": datetime.now(UTC),
        }
    )
    try:
        result = asyncio.run(edit_as_operator(location, edit))
    except LookupError as exc:
        print(f"agent-loop lessons: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    if as_json:
        print(json.dumps(_detail(result), indent=2))
    else:
        print(f"{op}: {wanted} (applied now; the distiller keeps it at its next tick)")
    return 0


def main(args: argparse.Namespace) -> int:
    """Run `agent-loop lessons ...`; returns the exit code."""
    location = _location(args)
    if location is None:
        return EXIT_USAGE
    action = cast(str, args.lessons_command)
    as_json = bool(args.json)
    if action == "list":
        return _list(location, everything=bool(args.all), as_json=as_json)
    wanted = cast(str, args.lesson_id).strip()
    if action == "show":
        return _show(location, wanted, as_json=as_json)
    reason = cast(str, getattr(args, "reason", "") or "")
    return _edit(location, action, wanted, reason, as_json=as_json)
