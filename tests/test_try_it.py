"""docs/try-it.md, run as written: the whole loop a person walks on the emulator.

Every `uv run agent-loop ...` line of the page's `try-it` blocks runs, in order, as its
own process of the installed `agent-loop` (what `uv run` starts), and no `agent-loop`
command of the page is left outside those blocks. The emulator runs in the background
(its printed `export` lines become the next commands' environment, as a person pastes
them; its port is swapped for a free one), then: the owner files an issue, a stranger
files one and the builder leaves it alone, the builder opens a PR with test evidence
from the real sandbox (where bubblewrap works; elsewhere tests are off and the PR a
draft), the owner reviews a line, the reviewer pushes a fix and replies, the owner
approves and merges, the distiller grades the PR and learns a lesson, and `status` and
`lessons list` show them.

The person's model is a scripted one served as an OpenAI-compatible API on loopback
(`serve_chat_model`), configured the way the page says a local server is; the script of
each agent is put in place before its command runs, because a reply names ids (the
owner's comment, a run) that exist only by then. The page's curl lines are checked
against the requests `act` sends.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from flyte.ai.agents import LLMMessage

from agent_loop.cli import build_parser
from agent_loop.demo_project import FILES
from agent_loop.emulator_act import request_for
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import ScriptedModel, bwrap_works, call, serve_chat_model, turn

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "try-it.md").read_text(encoding="utf-8")
CLI = str(pathlib.Path(sys.executable).with_name("agent-loop"))
PORT = "8765"

INVENTORY = FILES["src/widgets/inventory.py"]
NAMES = INVENTORY + (
    "\n    def names(self) -> list[str]:\n"
    '        """The names of the items in stock, sorted."""\n'
    "        return sorted(self.items)\n"
)
NAMES_IN_STOCK = NAMES.replace(
    "        return sorted(self.items)\n",
    "        return sorted(n for n, item in self.items.items() if item.quantity > 0)\n",
)
TEST_NAMES = """\
from widgets import Inventory


def test_names_are_sorted():
    stock = Inventory()
    stock.add("nut", 1, unit_price=0.1)
    stock.add("bolt", 2, unit_price=0.25)
    assert stock.names() == ["bolt", "nut"]
"""
TEST_NAMES_IN_STOCK = (
    TEST_NAMES
    + """

def test_names_leave_out_items_without_stock():
    stock = Inventory()
    stock.add("bolt", 2, unit_price=0.25)
    stock.add("nut", 1, unit_price=0.1)
    stock.remove("nut", 1)
    assert stock.names() == ["bolt"]
"""
)
VERIFIED = '{"verified": true, "notes": "Does what was asked, and the tests cover it."}'
LESSON = "When a list is asked for, ask whether empty entries belong in it, and test that."


def _blocks(marker: str) -> list[str]:
    """The command lines of every `marker` block of the page, in order."""
    lines: list[str] = []
    for part in PAGE.split(f"<!-- {marker}:start")[1:]:
        block = part.split(f"<!-- {marker}:end -->", 1)[0]
        lines += [
            line.strip() for line in block.splitlines()[1:] if line.strip()[:1] not in ("`", "")
        ]
    return lines


def _commands() -> list[list[str]]:
    return [shlex.split(line) for line in _blocks("try-it")]


def test_every_command_of_the_page_is_run_and_parses() -> None:
    tested = {" ".join(words) for words in _commands()}
    anywhere = {
        " ".join(shlex.split(line[line.index("uv run agent-loop") :]))
        for line in PAGE.splitlines()
        if "uv run agent-loop" in line and not line.lstrip().startswith("`")
    }
    assert anywhere <= tested  # no agent-loop command of the page is left untested
    for words in _commands():
        assert words[:3] == ["uv", "run", "agent-loop"]
        build_parser().parse_args(words[3:])


def _curl(line: str) -> tuple[str, str, dict[str, Any]]:
    words = shlex.split(line)
    method = words[words.index("-X") + 1]
    url = next(w for w in words if w.startswith("$GITHUB_API_URL"))
    return method, url.removeprefix("$GITHUB_API_URL"), json.loads(words[words.index("-d") + 1])


def _shape(body: dict[str, Any]) -> dict[str, Any]:
    """A request body without its texts (the page shortens them in curl lines)."""
    out = {k: ("..." if k in ("title", "body") else v) for k, v in body.items()}
    if "comments" in out:
        out["comments"] = [{**c, "body": "..."} for c in out["comments"]]
    return out


def test_the_curl_lines_send_what_act_sends() -> None:
    """Each curl line sends what an `act` command sends: the method, the path, the
    fields and every value but the texts."""
    parser = build_parser()
    writer = ["emulator", "act", "--as", "writer", "comment", "4", "--body", "/agent-loop build"]
    acts = [
        request_for(parser.parse_args(argv), "acme/widgets")
        for argv in [words[3:] for words in _commands() if words[3:5] == ["emulator", "act"]]
        + [writer]
    ]
    lines = _blocks("curl")
    assert len(lines) == 5
    for line in lines:
        method, path, body = _curl(line)
        assert any(
            (a.method, a.path, _shape(a.body)) == (method, path, _shape(body)) for a in acts
        ), line


class _Playbook:
    """The served model: the scripted model of the agent whose command runs next."""

    def __init__(self) -> None:
        self.current = ScriptedModel(name="nobody")

    async def __call__(
        self,
        model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
    ) -> LLMMessage:
        return await self.current(model, system, messages, tools)


def _builder() -> ScriptedModel:
    return ScriptedModel(
        [
            turn(
                tool_calls=[call("read_file", path="src/widgets/inventory.py")],
                expect_in_messages="Title: Add Inventory.names()",
            ),
            turn(tool_calls=[call("stage_file", path="src/widgets/inventory.py", content=NAMES)]),
            turn(tool_calls=[call("stage_file", path="tests/test_names.py", content=TEST_NAMES)]),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title="Add Inventory.names()",
                        body="`Inventory.names()` returns the item names, sorted, with a test.",
                        summary="names() and its test.",
                    ).expecting("Submitted")
                ]
            ),
            turn("Submitted."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED)]},
        name="builder",
    )


def _reviewer(comment_id: int) -> ScriptedModel:
    return ScriptedModel(
        [
            turn(
                tool_calls=[call("get_diff").expecting("def names")],
                expect_in_messages=[f"id={comment_id}", "Leave out items with nothing left"],
            ),
            turn(
                tool_calls=[
                    call("stage_file", path="src/widgets/inventory.py", content=NAMES_IN_STOCK)
                ]
            ),
            turn(
                tool_calls=[
                    call("stage_file", path="tests/test_names.py", content=TEST_NAMES_IN_STOCK)
                ]
            ),
            turn(
                tool_calls=[
                    call(
                        "submit_fix",
                        summary="names() leaves out items with no stock; a test covers it.",
                        replies=[
                            {
                                "comment_id": comment_id,
                                "reply": "Done: names() skips items with quantity 0, and "
                                "test_names_leave_out_items_without_stock checks it.",
                            }
                        ],
                    ).expecting("1 reply")
                ]
            ),
            turn("Fixed."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED)]},
        name="reviewer",
    )


def _distiller(review_run: str) -> ScriptedModel:
    return ScriptedModel(
        [
            turn(
                tool_calls=[
                    call(
                        "add_lesson",
                        text=LESSON,
                        evidence_run_ids=[review_run],
                        roles=["builder"],
                    ).expecting("Added")
                ],
                expect_in_messages=review_run,
            ),
            turn(tool_calls=[call("finish", summary="One lesson from the owner's review.")]),
            turn("Done."),
        ],
        name="distiller",
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _exports(proc: subprocess.Popen[str], deadline: float) -> Iterator[tuple[str, str]]:
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        name, _, value = shlex.split(line.removeprefix("export "), comments=True)[0].partition("=")
        yield name, value
        if name == "EMULATOR_STRANGER_TOKEN":  # the last of them
            return
    raise AssertionError(f"the emulator printed no exports: {proc.stderr and proc.stderr.read()}")


class _Shell:
    """The person's second shell: the exports pasted, the model configured."""

    def __init__(self, env: dict[str, str], cwd: pathlib.Path, port: str) -> None:
        self.env, self.cwd, self.port = env, cwd, port
        self.api = env["GITHUB_API_URL"]

    def run(self, words: list[str]) -> str:
        argv = [CLI, *(w.replace(f":{PORT}", f":{self.port}") for w in words[3:])]
        done = subprocess.run(
            argv,
            env=self.env,
            capture_output=True,
            text=True,
            cwd=self.cwd,
            check=False,
            timeout=300,
        )
        assert done.returncode == 0, f"{shlex.join(words)}\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def get(self, path: str) -> Any:
        token = self.env["EMULATOR_OWNER_TOKEN"]
        answer = httpx.get(f"{self.api}{path}", headers={"Authorization": f"token {token}"})
        answer.raise_for_status()
        return answer.json()


def _run_id(out: str) -> str:
    found = re.search(r"^\s*run_id: (\S+)", out, re.M)
    assert found is not None, out
    return found.group(1)


def test_the_try_it_walk_works_as_written(tmp_path: pathlib.Path) -> None:
    commands = _commands()
    shape = [" ".join(words[3:6]) for words in commands]
    assert shape == [
        "emulator serve --port",
        "emulator act --as",  # the owner's issue
        "emulator act --as",  # a stranger's
        "run builder --issue",  # ... left alone
        "run builder --issue",  # the owner's -> a PR
        "emulator act --as",  # the owner's review
        "run reviewer --pr",
        "emulator act --as",  # approve
        "emulator act --as",  # merge
        "run distiller",
        "status",
        "lessons list",
    ]
    port = str(_free_port())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
    env["HOME"] = str(tmp_path / "user")
    emulator = subprocess.Popen(
        [CLI, *(w.replace(PORT, port) for w in commands[0][3:])],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    playbook = _Playbook()
    sandboxed, why = bwrap_works()
    try:
        exported = dict(_exports(emulator, time.monotonic() + 120))
        assert exported["GITHUB_API_URL"] == f"http://127.0.0.1:{port}"
        with serve_chat_model(playbook) as api_base:
            shell = _Shell(
                {
                    **env,
                    **exported,
                    "AGENT_LOOP_MODEL": "openai/scripted",
                    "AGENT_LOOP_API_BASE": api_base,
                    "AGENT_LOOP_MODEL_KEY_ENV": "none",
                    "AGENT_LOOP_ALLOW_MODEL_REQUESTS": "1",  # the model is on loopback
                    # The sample's tests in bubblewrap where it works; else none (a draft).
                    "AGENT_LOOP_SANDBOX": "bwrap" if sandboxed else "off",
                },
                tmp_path,
                port,
            )
            _walk(shell, playbook, commands[1:], sandboxed=sandboxed)
    finally:
        emulator.terminate()
        try:
            emulator.wait(timeout=20)
        except subprocess.TimeoutExpired:
            emulator.kill()
    assert emulator.returncode == 0, why  # stopped cleanly on SIGTERM


def _walk(
    shell: _Shell, playbook: _Playbook, commands: list[list[str]], *, sandboxed: bool
) -> None:
    web = f"{shell.api}/acme/widgets"
    # 2. the owner's issue, and a stranger's the builder leaves alone
    out = shell.run(commands[0])
    assert out.strip() == f"@acme filed issue #4: {web}/issues/4"
    out = shell.run(commands[1])
    assert out.strip() == f"@stranger filed issue #5: {web}/issues/5"
    out = shell.run(commands[2])
    assert _outcome(out).startswith("builder: skipped on issue #5"), out
    assert "#5 is not from a trusted source: author @stranger has read permission" in out
    # 3. the builder's PR, with the sample's tests run on base and change
    playbook.current = builder = _builder()
    out = shell.run(commands[3])
    assert _outcome(out).startswith(f"builder: opened_pr on issue #4 -> {web}/pull/6"), out
    builder.assert_finished()
    pull = shell.get("/repos/acme/widgets/pulls/6")
    assert pull["user"]["login"] == "agent-loop[bot]"
    assert pull["draft"] is not sandboxed
    if sandboxed:
        assert "3 passed" in out
        assert "3 passed" in pull["body"]
    page = httpx.get(pull["html_url"])
    assert page.status_code == 200
    assert "Add Inventory.names()" in page.text
    # 4. the owner's review comment on a line
    out = shell.run(commands[4])
    assert re.fullmatch(
        rf"@acme reviewed PR #6 \(commented\): {web}/pull/6#pullrequestreview-\d+", out.strip()
    )
    [comment] = shell.get("/repos/acme/widgets/pulls/6/comments")
    assert (comment["user"]["login"], comment["path"], comment["line"]) == (
        "acme",
        "src/widgets/inventory.py",
        43,
    )
    # 5. the reviewer's fix and reply
    head_before = pull["head"]["sha"]
    playbook.current = reviewer = _reviewer(comment["id"])
    out = shell.run(commands[5])
    assert _outcome(out).startswith("reviewer: pushed_fix on PR #6"), out
    reviewer.assert_finished()
    review_run = _run_id(out)
    after = shell.get("/repos/acme/widgets/pulls/6")
    assert after["head"]["sha"] != head_before
    replies = shell.get("/repos/acme/widgets/pulls/6/comments")
    assert replies[-1]["in_reply_to_id"] == comment["id"]
    assert replies[-1]["user"]["login"] == "agent-loop[bot]"
    # 6. approve and merge, as the owner
    out = shell.run(commands[6])
    assert re.fullmatch(
        rf"@acme reviewed PR #6 \(approved\): {web}/pull/6#pullrequestreview-\d+", out.strip()
    )
    out = shell.run(commands[7])
    assert re.fullmatch(rf"@acme merged PR #6 as [0-9a-f]{{7}}: {web}/pull/6", out.strip())
    merged = shell.get("/repos/acme/widgets/pulls/6")
    assert merged["merged"]
    assert merged["merged_by"]["login"] == "acme"
    # 7. the distiller grades the merged PR and learns the lesson
    playbook.current = distiller = _distiller(review_run)
    out = shell.run(commands[8])
    assert _outcome(out).startswith("distiller: distilled"), out
    distiller.assert_finished()
    status = shell.run(commands[9])
    assert "graded PRs" in status
    assert "opened_pr" in status
    assert "pushed_fix" in status
    lessons = shell.run(commands[10])
    assert LESSON[:40] in lessons
    assert "proving" in lessons
    grades = json.loads(shell.run(["uv", "run", "agent-loop", "status", "--json"]))["grades"]
    [grade] = [g for g in grades if g["target"]["number"] == 6]
    assert grade["state"] == "merged"
    assert grade["review_rounds"] == 1


def _outcome(out: str) -> str:
    """A tick's outcome line: the first one not indented (its live lines are)."""
    return next((line for line in out.splitlines() if line and not line[0].isspace()), "")
