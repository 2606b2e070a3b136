"""docs/eval.md's "Try it on the emulator", run as written.

Every `uv run agent-loop ...` line of the page's `eval-try` blocks runs, in order, as its
own process of the installed `agent-loop` (what `uv run` starts), and every `agent-loop`
command of the page outside those blocks at least parses. The emulator runs in the
background with the `history` seed (its printed `export` lines become the next
commands' environment, as a person pastes them; its port is swapped for a free one),
then `eval mine` must keep exactly the three fixes the seed's table says, `eval run`
twice (the configured model, then `--model` another) must score each instance as the
scripted models fixed it, and `eval compare` must pair them. The person's models are
scripted ones served as an OpenAI-compatible API on loopback (`serve_chat_model`),
configured the way docs/try-it.md says a local server is; they tell the two runs
apart by the model name each request carries.

The page's output blocks are what these commands printed: each of their lines that
names no time, path or token must be among the lines the commands print here.
"""

from __future__ import annotations

import base64
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
from flyte.ai.agents import LLMMessage

from agent_loop.cli import build_parser
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    EVAL_HISTORY_OPS,
    VERIFIED,
    ScriptedModel,
    bwrap_e2e_marks,
    call,
    serve_chat_model,
    turn,
)

pytestmark = bwrap_e2e_marks()

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "eval.md").read_text(encoding="utf-8")
CLI = str(pathlib.Path(sys.executable).with_name("agent-loop"))
PORT = "8766"
OTHER = "gpt-5-mini"
"""The second run's model, as the page's `--model openai/...` names it."""
WRONG = {"subtract": "b - a", "multiply": "a + b", "divide": "a // b"}
FIXES = {
    "scripted": {"subtract": True, "multiply": True, "divide": False},
    OTHER: {"subtract": True, "multiply": False, "divide": False},
}
"""Which instances each model fixes right: run A resolves two, run B one."""


def _block_lines(marker: str, fence: str = "bash") -> list[str]:
    lines: list[str] = []
    for part in PAGE.split(f"<!-- {marker}:start")[1:]:
        block = part.split(f"<!-- {marker}:end -->", 1)[0]
        if f"```{fence}" not in block:
            continue
        lines += [
            line.strip() for line in block.splitlines()[1:] if line.strip()[:1] not in ("`", "")
        ]
    return lines


def _commands() -> list[list[str]]:
    return [shlex.split(line.split("  #", 1)[0]) for line in _block_lines("eval-try")]


def test_every_command_of_the_page_parses_and_the_walk_runs_them_all() -> None:
    tested = {" ".join(words) for words in _commands()}
    for words in _commands():
        assert words[:3] == ["uv", "run", "agent-loop"]
        build_parser().parse_args(words[3:])
    # Every other agent-loop line of the page (the overview, the cluster) parses too.
    for line in PAGE.splitlines():
        if line.startswith("uv run agent-loop ") and not line.rstrip().endswith("\\"):
            words = shlex.split(line.split("  #", 1)[0])
            if " ".join(words) not in tested:
                build_parser().parse_args(words[3:])


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


class _Models:
    """The served model: each request answered by the scripted build of its model name
    and issue; the verifier accepts every build."""

    def __init__(self) -> None:
        self.scripts: dict[tuple[str, int], ScriptedModel] = {}

    async def __call__(
        self,
        model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
    ) -> LLMMessage:
        first = next((str(m["content"]) for m in messages if m.get("role") == "user"), "")
        found = re.search(r"issue #(\d+)", first, re.IGNORECASE)
        assert found is not None, first[:200]
        key = (model.removeprefix("openai/"), int(found.group(1)))
        return await self.scripts[key](model, system, messages, tools)


def _build(before: str, name: str, right: bool) -> ScriptedModel:
    body = EVAL_HISTORY_OPS[name] if right else WRONG[name]
    content = before + f"\n\ndef {name}(a, b):\n    return {body}\n"
    return ScriptedModel(
        [
            turn(tool_calls=[call("read_file", path="src/calc.py")]),
            turn(tool_calls=[call("stage_file", path="src/calc.py", content=content)]),
            turn(
                tool_calls=[
                    call("submit_implementation", title=name, body="Adds it.", summary=name)
                ]
            ),
            turn("Submitted."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED)]},
        name=name,
    )


class _Shell:
    """The person's second shell: the exports pasted, the model configured."""

    def __init__(self, env: dict[str, str], cwd: pathlib.Path, port: str) -> None:
        self.env, self.cwd, self.port = env, cwd, port
        self.printed: list[str] = []

    def run(self, words: list[str]) -> str:
        argv = [CLI, *(w.replace(f":{PORT}", f":{self.port}") for w in words[3:])]
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, cwd=self.cwd,
                              check=False, timeout=600)  # fmt: skip
        assert done.returncode == 0, f"{shlex.join(words)}\n{done.stdout}\n{done.stderr}"
        self.printed += [f"$ {shlex.join(words)}", *done.stdout.splitlines()]
        return done.stdout

    def base_file(self, path: str, ref: str) -> str:
        token = self.env["GITHUB_TOKEN"]
        api = self.env["GITHUB_API_URL"]
        answer = httpx.get(
            f"{api}/repos/acme/calc/contents/{path}",
            params={"ref": ref},
            headers={"Authorization": f"token {token}"},
        )
        answer.raise_for_status()
        return base64.b64decode(answer.json()["content"]).decode()


_VOLATILE = re.compile(r"\d+\.\d s|\d+\.\ds\b|\$\d|tokens|/|TOKEN")


def _shown_output() -> list[str]:
    """The page's output lines that name nothing volatile (a time, a path, a cost)."""
    lines = _block_lines("eval-try", fence="text")
    return [line for line in lines if not _VOLATILE.search(line)]


def test_the_eval_walk_works_as_written(tmp_path: pathlib.Path) -> None:
    commands = _commands()
    shape = [" ".join(words[3:5]) for words in commands]
    assert shape == ["emulator serve", "eval mine", "eval run", "eval run", "eval compare"]
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
    models = _Models()
    try:
        exported = dict(_exports(emulator, time.monotonic() + 120))
        assert exported["GITHUB_API_URL"] == f"http://127.0.0.1:{port}"
        assert exported["AGENT_LOOP_REPO"] == "acme/calc"
        with serve_chat_model(models) as api_base:
            shell = _Shell(
                {
                    **env,
                    **exported,
                    "AGENT_LOOP_MODEL": "openai/scripted",
                    "AGENT_LOOP_API_BASE": api_base,
                    "AGENT_LOOP_MODEL_KEY_ENV": "none",
                    "AGENT_LOOP_ALLOW_MODEL_REQUESTS": "1",  # the model is on loopback
                    "AGENT_LOOP_SANDBOX": "bwrap",
                },
                tmp_path,
                port,
            )
            _walk(shell, models, commands[1:], tmp_path)
    finally:
        emulator.terminate()
        try:
            emulator.wait(timeout=20)
        except subprocess.TimeoutExpired:
            emulator.kill()
    (tmp_path / "transcript.txt").write_text("\n".join(shell.printed) + "\n")
    printed = {line.strip() for line in shell.printed}
    missing = [line for line in _shown_output() if line.strip() not in printed]
    assert missing == [], f"shown on the page, not printed: {missing}"


def _walk(shell: _Shell, models: _Models, commands: list[list[str]], home: pathlib.Path) -> None:
    out = shell.run(commands[0])  # eval mine
    assert "instance acme__calc-2 (1 fail-to-pass, 1 pass-to-pass)" in out
    assert "#3 Add negate(): skipped, no_linked_issue" in out
    assert "#7 Document calc: skipped, no_test_change" in out
    assert "#9 Test add() with negative numbers: skipped, nothing_fails_before" in out
    file = home / ".agent-loop" / "eval" / "acme__calc" / "instances.jsonl"
    instances = [json.loads(line) for line in file.read_text().splitlines()]
    names = {i["issue_numbers"][0]: i["problem_statement"].split("()")[0][4:] for i in instances}
    assert sorted(names.values()) == sorted(EVAL_HISTORY_OPS)
    assert [i["FAIL_TO_PASS"] for i in instances] == [
        [f"tests/test_{n}.py::test_{n}"] for n in EVAL_HISTORY_OPS
    ]
    for instance in instances:
        number = instance["issue_numbers"][0]
        before = shell.base_file("src/calc.py", instance["base_commit"])
        for model, fixes in FIXES.items():
            name = names[number]
            models.scripts[(model, number)] = _build(before, name, fixes[name])
    for words, model in ((commands[1], "scripted"), (commands[2], OTHER)):
        out = shell.run(words)  # eval run
        for instance in instances:
            name = names[instance["issue_numbers"][0]]
            verdict = "resolved" if FIXES[model][name] else "not resolved"
            assert f"{instance['instance_id']}  {verdict}" in out, out
        runs = pathlib.Path(shell.cwd, words[words.index("--out") + 1])
        results = json.loads((runs / "results.json").read_text())
        assert [r["github_requests"] for r in results] == [0, 0, 0]
    for model in FIXES:
        for number in names:
            models.scripts[(model, number)].assert_finished()
    out = shell.run(commands[3])  # eval compare
    assert "resolved by both: 1, neither: 1, only A: 1, only B: 0" in out
