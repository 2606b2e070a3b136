"""Lessons as memory, end to end (issue 25, points 5 and 6): `agent-loop run` over the
emulator served on loopback, Flyte local mode, the real builder and distiller pipelines.

- A lesson whose citation is missing from the base commit is hidden from every model of
  the run (lessons block and digest), the record names it, and the next distiller tick
  marks it stale and asks its model to fix or retire it.
- A private repository's lesson never reaches another repository's prompt, even when
  the operator lists it in `AGENT_LOOP_SHARE_LESSONS_FROM`; a public listed one does, an
  unlisted one does not.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from flyte.ai.agents import LLMMessage

from agent_loop import cli
from agent_loop.status import read_snapshot
from agent_loop_common.memory import DIGEST_PATH, LESSONS_PATH, MemoryLocation, read_context
from agent_loop_common.records import (
    Citation,
    CitationStatus,
    Lesson,
    LessonBook,
    Role,
    RunRecord,
)
from agent_loop_common.runtime import local_memory, use_model
from agent_loop_common.settings import load_settings
from agent_loop_distiller import DISTILLER_MARKER
from agent_loop_testing import (
    CliLoop,
    GitHubEmulator,
    GitHubHost,
    InstantModel,
    serve_for_cli,
    write_memory_file,
)

pytestmark = pytest.mark.slow

NOW = datetime.now(UTC)


class Recorder(InstantModel):
    """The instant builder, which also keeps every prompt it was shown, and a distiller
    that adds one general lesson (`teach`) or changes nothing."""

    def __init__(self, teach: str = "") -> None:
        super().__init__()
        self.prompts: list[str] = []
        self.teach = teach

    async def answer(
        self,
        model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
    ) -> LLMMessage:
        self.prompts.append(system + "\n" + "\n".join(str(m.get("content")) for m in messages))
        if DISTILLER_MARKER not in system:
            return await super().answer(model, system, messages, tools)
        done = [m for m in messages if m.get("role") == "tool"]
        run = re.search(r"- run (\S+) \(builder", str(messages[0].get("content")))
        if self.teach and run and not done:
            args = {"text": self.teach, "evidence_run_ids": [run.group(1)], "roles": [],
                    "general": True}  # fmt: skip
            return LLMMessage(content="", tool_calls=[{"id": "a", "name": "add_lesson",
                                                       "arguments": args}])  # fmt: skip
        if len(done) < (2 if self.teach else 1):
            return LLMMessage(content="", tool_calls=[{"id": "f", "name": "finish",
                                                       "arguments": {"summary": "ok"}}])  # fmt: skip
        return LLMMessage(content="Done.", tool_calls=[])


def _seed_book(location: MemoryLocation, book: LessonBook, digest: str) -> None:
    """Write the context key as the distiller leaves it (local-mode store layout)."""
    write_memory_file(location, location.keys.context, LESSONS_PATH, book.model_dump_json())
    write_memory_file(location, location.keys.context, DIGEST_PATH, digest)


def _record(location: MemoryLocation, run_id: str) -> RunRecord:
    snapshot = asyncio.run(read_snapshot(location))
    (record,) = [r for r in snapshot.records if r.run_id == run_id]
    return record


def _lesson(lesson_id: str, text: str, *citations: Citation) -> Lesson:
    return Lesson(
        id=lesson_id, text=text, created_at=NOW, updated_at=NOW, citations=list(citations)
    )


@pytest.fixture
def loop(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> Iterator[CliLoop]:
    em = GitHubEmulator()
    em.seed_files(
        {"src/calc.py": "def add(a, b):\n    return a + b\n", "Makefile": "lint:\n\ttrue\n"}
    )
    # No random holdout: these tests are about which lessons may be shown at all.
    with serve_for_cli(
        monkeypatch,
        em,
        tmp_path / "home",
        AGENT_LOOP_SANDBOX="off",
        AGENT_LOOP_LESSON_HOLDOUT="0",
    ):
        yield CliLoop(em, cli.main, capsys)


def test_a_lesson_with_a_broken_citation_is_hidden_and_marked_stale(loop: CliLoop) -> None:
    emulator = loop.emulator
    location = local_memory(load_settings())
    good = _lesson(
        "L-good",
        "Keep add() in src/calc.py pure; run make lint.",
        Citation(kind="path", value="src/calc.py"),
        Citation(kind="symbol", value="add", path="src/calc.py"),
        Citation(kind="command", value="make lint"),
    )
    gone = _lesson(
        "L-gone",
        "Parse numbers with parse_num in src/parse.py.",
        Citation(kind="path", value="src/parse.py"),
    )
    moved = _lesson("L-moved", "Call subtract().", Citation(kind="symbol", value="subtract"))
    cmd = _lesson(
        "L-cmd", "Deploy with make deploy.", Citation(kind="command", value="make deploy")
    )
    lessons = [good, gone, moved, cmd]
    digest = "".join(f"- [{x.id}] (all; backed by 1 run) {x.text}\n" for x in lessons)
    _seed_book(location, LessonBook(lessons=lessons), "# ctx\n" + digest)
    emulator.add_issue("Add a note", body="Write a note.", author=emulator.owner)
    model = Recorder()
    with use_model(model, label="recorder"):
        (built,) = loop.ticks("builder")
    shown = "\n".join(model.prompts)
    assert good.text in shown
    assert gone.text not in shown  # neither in the lessons block nor in the digest
    assert moved.text not in shown
    assert cmd.text not in shown
    record = _record(location, built.run_id)
    assert record.lesson_ids == ["L-good"]
    stale = {s.lesson_id: s.broken for s in record.stale_lessons}
    assert stale == {
        "L-gone": ["path src/parse.py"],
        "L-moved": ["symbol subtract"],
        "L-cmd": ["command make deploy"],
    }

    model = Recorder()
    with use_model(model, label="recorder"):
        loop.ticks("distiller")
    book = {x.id: x for x in asyncio.run(read_context(location)).lessons.lessons}
    assert book["L-gone"].citation_status is CitationStatus.BROKEN
    assert "path src/parse.py" in book["L-gone"].stale_reason
    assert [e.op for e in book["L-gone"].history] == ["stale"]
    assert book["L-good"].citation_status is CitationStatus.OK
    assert book["L-good"].repo == emulator.full_name
    assert book["L-good"].visibility == "public"
    asked = next(p for p in model.prompts if DISTILLER_MARKER in p)
    assert "L-gone [all; backed by 0 run(s); cites path src/parse.py; STALE" in asked
    digest = asyncio.run(read_context(location)).digest
    assert gone.text not in digest
    assert good.text in digest


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> Iterator[GitHubHost]:
    gh = GitHubHost(["acme/vault", "acme/api", "acme/web"])
    gh["acme/vault"].private = True
    for em in gh:
        em.seed_files({"README.md": "# hi\n"})
    # No random holdout: these tests are about which lessons may be shown at all.
    with serve_for_cli(
        monkeypatch,
        gh,
        tmp_path / "home",
        AGENT_LOOP_SANDBOX="off",
        AGENT_LOOP_LESSON_HOLDOUT="0",
    ):
        yield gh


def test_a_private_repository_lesson_never_reaches_another_repository(
    host: GitHubHost, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = CliLoop(host["acme/web"], cli.main, capsys)
    monkeypatch.setenv("AGENT_LOOP_SHARE_LESSONS_FROM", "acme/vault,acme/api")
    secrets = "Rotate the vault signing key with tools/rotate before each release."
    public = "Write one sentence per line in Markdown notes."
    # Each repository's distiller learns one general lesson from its builder's run.
    for repo, text in (("acme/vault", secrets), ("acme/api", public), ("acme/web", "")):
        host[repo].add_issue(f"Note for {repo}", body="Write a note.", author=host[repo].owner)
        with use_model(Recorder(), label="recorder"):
            loop.ticks("builder", "--repo", repo)
        if text:
            with use_model(Recorder(teach=text), label="recorder"):
                loop.ticks("distiller", "--repo", repo)
    settings = load_settings()
    vault = asyncio.run(read_context(local_memory(settings.for_repo("acme/vault"))))
    (learned,) = vault.lessons.lessons
    assert learned.id.startswith("acme/vault#L-")
    assert (learned.repo, learned.visibility, learned.general) == ("acme/vault", "private", True)

    # The next builder run of web (public) sees api's lesson, never vault's.
    host["acme/web"].add_issue("Another note", body="Write it.", author=host["acme/web"].owner)
    model = Recorder()
    with use_model(model, label="recorder"):
        (web,) = loop.ticks("builder", "--repo", "acme/web")
    shown = "\n".join(model.prompts)
    assert public in shown
    assert secrets not in shown
    seen = _record(local_memory(settings.for_repo("acme/web")), web.run_id).lesson_ids
    assert any(i.startswith("acme/api#") for i in seen)
    assert all(not i.startswith("acme/vault#") for i in seen)

    # Unlisted sources share nothing, whatever their visibility.
    monkeypatch.setenv("AGENT_LOOP_SHARE_LESSONS_FROM", "")
    host["acme/web"].add_issue("Third note", body="Write it.", author=host["acme/web"].owner)
    model = Recorder()
    with use_model(model, label="recorder"):
        loop.ticks("builder", "--repo", "acme/web")
    assert public not in "\n".join(model.prompts)
    stored = json.loads(json.dumps([x.model_dump(mode="json") for x in vault.lessons.lessons]))
    assert stored[0]["author"] == Role.DISTILLER.value
