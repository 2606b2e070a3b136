"""`agent-loop status` prints untrusted text without letting it drive the terminal (issue 16).

Issue titles come from anyone who can open an issue, errors quote GitHub and model
output, and lessons are model-written. Printed raw, an escape sequence in them could
clear the screen, rewrite earlier lines, set the window title, plant a disguised
hyperlink (OSC 8) or reorder text with bidi overrides. Status strips all of that.
"""

from __future__ import annotations

import asyncio
import pathlib
import re
from datetime import UTC, datetime, timedelta

import pytest

from agent_loop import cli
from agent_loop.status import terminal_safe
from agent_loop_common.memory import DistillerMemory, write_run_record
from agent_loop_common.records import (
    Lesson,
    LessonBook,
    Links,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
    Usage,
)
from agent_loop_common.runtime import local_memory
from agent_loop_common.settings import load_settings

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

HOSTILE_TITLE = (
    "\x1b[2J\x1b[HInnocent\x1b]0;pwned window title\x07 title"
    "\x1b]8;;https://evil.example/\x1b\\click me\x1b]8;;\x1b\\"
)
HOSTILE_ERROR = "boom\rOVERWRITTEN\x08\x08\x9b31mred\x9b0m \u202egnp.exe\u202c done"
HOSTILE_LESSON = (
    "Stage tests\x1bP+q544e\x1b\\ first\x1b[1A\x1b[2K\x07 always\u2066 isolated\u2069\x00"
)

# What a terminal would act on: ESC and the C0/C1 controls (newline aside), DEL, and
# the bidirectional embeddings, overrides, isolates and marks.
_ACTIVE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith(("GITHUB_", "AGENT_LOOP_")) and key != "AGENT_LOOP_ALLOW_MODEL_REQUESTS":
            monkeypatch.delenv(key)


async def _fill(home: pathlib.Path) -> None:
    settings = load_settings(repo="acme/widgets", github_token="x", home=home)
    location = local_memory(settings)
    record = RunRecord(
        run_id="run-evil",
        role=Role.BUILDER,
        target=Target(kind=TargetKind.ISSUE, number=7, title=HOSTILE_TITLE),
        outcome=Outcome.ERROR,
        started_at=T0,
        finished_at=T0 + timedelta(seconds=42),
        usage=Usage(tokens_in=10, tokens_out=2, llm_calls=1, cost_usd=0.01),
        error=HOSTILE_ERROR,
        links=Links(),
    )
    await write_run_record(location, record, now=record.finished_at)
    linked = record.model_copy(
        update={
            "run_id": "run-evil-2",
            "outcome": Outcome.OPENED_PR,
            "error": "",
            "links": Links(pr_url="https://github.com/acme/widgets/pull/4\x1b]8;;x\x07"),
            "finished_at": T0 + timedelta(minutes=1),
        }
    )
    await write_run_record(location, linked, now=linked.finished_at)
    memory = await DistillerMemory.open(location)
    batch = await memory.collect(now=T0 + timedelta(hours=1))
    lesson = Lesson(
        id="L-0001",
        text=HOSTILE_LESSON,
        roles=[Role.BUILDER],
        source_run_ids=["run-evil"],
        created_at=T0,
        updated_at=T0,
    )
    await memory.commit(batch, lessons=LessonBook(lessons=[lesson]), digest="# d\n", grades=[])


def test_status_strips_terminal_escapes_from_untrusted_text(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    asyncio.run(_fill(home))
    assert cli.main(["status", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert _ACTIVE.search(out) is None, repr(_ACTIVE.findall(out))
    # the readable words survive, the payloads of the sequences do not
    assert "Innocent" in out
    assert "click me" in out
    assert "pwned window title" not in out
    assert "evil.example" not in out
    assert "OVERWRITTEN" in out
    assert "Stage tests" in out
    assert "isolated" in out
    assert "https://github.com/acme/widgets/pull/4" in out


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("plain text, ünïcode ✓", "plain text, ünïcode ✓"),
        ("a\x1b[31mred\x1b[0m", "ared"),
        ("a\x1b]0;title\x07b", "ab"),
        ("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),
        ("a\x1b]unterminated", "a"),
        ("a\x9b2Jb\x9d0;t\x9cc", "abc"),
        ("a\x1bPdata\x1b\\b", "ab"),
        ("a\x1b(Bb\x1bcc", "abc"),
        ("tab\tnew\nline\rcr", "tab new\nline cr"),
        ("bell\x07back\x08del\x7f", "bellbackdel"),
        ("\u202egnp.exe\u202c \u2067x\u2069 \u200fy", "gnp.exe x y"),
    ],
)
def test_terminal_safe(raw: str, clean: str) -> None:
    assert terminal_safe(raw) == clean
