"""A builder tick on an Anthropic model marks cache breakpoints and records cached tokens.

Each tick is `agent-loop run builder` in its own process, as cron runs it, against the
GitHub emulator served on loopback, with `AGENT_LOOP_MODEL=anthropic/claude-sonnet-4-5`
and `AGENT_LOOP_API_BASE` pointing at a local Messages API (`serve_messages_model`): a
`ScriptedModel` answers, and a simulated prompt cache (Anthropic's rules: prefixes up to
a `cache_control` breakpoint, five minutes, nothing under 1,024 tokens) decides what each
request reads from and writes to the cache. Two runs of the same task on two identical
repositories share one cache, as two ticks of one organization would. A longer run
has its old reads masked (`AGENT_LOOP_KEEP_TURNS` at its default), reads one again, and
still opens its pull request with every request accepted (the stub refuses a tool result
without its tool call, as Anthropic does). The reviewer's tick, answering an owner's
review comment, is cached and masked the same way; `status` and `show` say the cached
share the record holds. An OpenAI model (`serve_chat_model`), which caches by itself,
gets no marker, and the cached tokens it reports are recorded and priced as billed.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import pathlib
import subprocess
import sys
from dataclasses import replace
from typing import Any

import pytest

from agent_loop_common.llm import ALLOW_MODEL_REQUESTS_ENV, load_litellm
from agent_loop_common.records import Outcome, RunRecord
from agent_loop_common.runtime import local_memory
from agent_loop_common.settings import load_settings
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    CALC_ISSUE,
    CALC_REPO,
    CALC_SUB,
    TESTS_SUB,
    VERIFIED,
    GitHubEmulator,
    MessagesServer,
    ScriptedModel,
    SimulatedPromptCache,
    call,
    emulator_client,
    serve_chat_model,
    serve_messages_model,
    stored_record,
    submit_subtract,
    subtract_try,
    turn,
)

pytestmark = pytest.mark.slow

MODEL = "anthropic/claude-sonnet-4-5"
CLI = str(pathlib.Path(sys.executable).with_name("agent-loop"))


def _script() -> ScriptedModel:
    return ScriptedModel(
        [
            turn(tool_calls=[call("read_file", path="src/calc.py")]),
            turn(tool_calls=[call("read_file", path="tests/test_calc.py")]),
            turn(tool_calls=[call("stage_file", path="src/calc.py", content=CALC_SUB)]),
            turn(tool_calls=[call("stage_file", path="tests/test_calc.py", content=TESTS_SUB)]),
            turn(tool_calls=[submit_subtract()]),
            turn("Submitted."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED)]},
    )


BIG = "".join(f"HELPER_{n:04d} = 'a value the builder reads and moves past'\n" for n in range(1200))
"""`src/big.py`: 1,200 lines, two pages of `read_file`, about 36,000 characters each."""


def _emulator() -> GitHubEmulator:
    emulator = GitHubEmulator()
    emulator.seed_files({**CALC_REPO, "src/big.py": BIG})
    emulator.add_issue(*CALC_ISSUE)
    return emulator


def _tick(
    emulator: GitHubEmulator,
    home: pathlib.Path,
    server: MessagesServer | str,
    role: str = "builder",
    model: str = MODEL,
) -> RunRecord:
    """One tick of `role` in a child process, its model `model` at `server` (the
    Messages stub, or an OpenAI-compatible API's base URL); its run's record."""
    api_base = server if isinstance(server, str) else server.api_base
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
    with emulator.serve() as github_url:
        env.update(
            {
                "GITHUB_API_URL": github_url,
                "GITHUB_TOKEN": emulator.bot_token,
                "AGENT_LOOP_REPO": emulator.full_name,
                "AGENT_LOOP_HOME": str(home),
                "AGENT_LOOP_MODEL": model,
                "AGENT_LOOP_API_BASE": api_base,
                "OPENAI_API_KEY": "sk-test-not-a-key",
                "AGENT_LOOP_SANDBOX": "off",
                "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
                ALLOW_MODEL_REQUESTS_ENV: "1",  # to the stub on loopback, nothing else
            }
        )
        done = subprocess.run(
            [CLI, "run", role, "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    settings = load_settings(repo=emulator.full_name, home=home, github_token="x")
    return stored_record(local_memory(settings), summary["run_id"])


def _cli(home: pathlib.Path, *argv: str) -> str:
    """`agent-loop ARGV` on the memory of `home`, in its own process; its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
    env["AGENT_LOOP_HOME"] = str(home)
    done = subprocess.run(
        [CLI, *argv], env=env, capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _builder_requests(server: MessagesServer, first: int = 0) -> list[dict[str, Any]]:
    return [
        body
        for body in server.requests[first:]
        if VERIFIER_MARKER not in json.dumps(body.get("system"))
    ]


def _breakpoints(body: dict[str, Any]) -> list[str]:
    """Where a request carries `cache_control`: `system`, or `message <i>`."""
    where = [
        "system"
        for block in body.get("system") or []
        if isinstance(block, dict) and "cache_control" in block
    ]
    for index, message in enumerate(body["messages"]):
        if "cache_control" in json.dumps(message.get("content")):
            where.append(f"message {index}")
    return where


def _stable_prefix(body: dict[str, Any]) -> str:
    """Tools, system and the first message, exactly as sent."""
    return json.dumps([body.get("tools"), body.get("system"), body["messages"][0]])


def test_a_tick_on_an_anthropic_model_reads_its_conversation_from_the_cache(
    tmp_path: pathlib.Path,
) -> None:
    model = _script()
    second = _script()
    cache = SimulatedPromptCache()
    with serve_messages_model(model, cache=cache) as server:
        record = _tick(_emulator(), tmp_path / "one", server)
        model.assert_finished()
        first_run = len(server.requests)
        server.model = second
        again = _tick(_emulator(), tmp_path / "two", server)
        second.assert_finished()

    assert record.outcome is Outcome.OPENED_PR
    builder = _builder_requests(server)[:6]
    assert len(builder) == 6
    # Every request marks the system prompt, the task and the conversation so far.
    for number, body in enumerate(builder, start=1):
        last = len(body["messages"]) - 1
        expected = ["system", "message 0"] + ([f"message {last}"] if last else [])
        assert _breakpoints(body) == expected, f"request {number}"
    # The stable prefix is byte-identical turn after turn, and in the second run.
    prefixes = {_stable_prefix(body) for body in _builder_requests(server)}
    assert len(prefixes) == 1
    assert len(_builder_requests(server, first_run)) == 6

    charges = server.charges[:first_run]
    # From the second request on, each reads what the one before it wrote.
    builder_charges = [c for c, b in zip(charges, server.requests, strict=False) if b in builder]
    assert builder_charges[0].cache_read_input_tokens == 0
    assert builder_charges[0].cache_creation_input_tokens > 0
    for before, after in itertools.pairwise(builder_charges):
        assert after.cache_read_input_tokens >= before.prompt_tokens - before.input_tokens
    # The record holds exactly what the provider reported.
    assert record.usage.tokens_cache_read == sum(c.cache_read_input_tokens for c in charges)
    assert record.usage.tokens_cache_write == sum(c.cache_creation_input_tokens for c in charges)
    assert record.usage.tokens_in == sum(c.prompt_tokens for c in charges)
    assert record.usage.tokens_cache_read > record.usage.tokens_in / 2
    # `status` and `show` say the same share of the input read from the cache.
    share = f"{record.usage.tokens_cache_read / record.usage.tokens_in:.0%}"
    status, show = (_cli(tmp_path / "one", *argv) for argv in (["status"], ["show", record.run_id]))
    assert f"{record.usage.tokens:,} ({share} cached)" in status
    assert (
        f"tokens      {record.usage.tokens:,} ({record.usage.tokens_in:,} in, {share} of it "
        f"read from the cache; {record.usage.tokens_out:,} out) in {record.usage.llm_calls} "
        "model call(s)"
    ) in show
    # The second run of the same task reads even its first request's prefix.
    second_first = server.charges[first_run]
    assert second_first.cache_read_input_tokens > 0
    assert again.usage.tokens_cache_read > record.usage.tokens_cache_read


def test_a_long_run_sees_its_old_reads_elided_reads_one_again_and_opens_its_pr(
    tmp_path: pathlib.Path,
) -> None:
    elided = "[elided: read_file(path='src/big.py')"
    model = ScriptedModel(
        [
            turn(tool_calls=[call("read_file", path="src/big.py")]),
            turn(tool_calls=[call("read_file", path="src/big.py", start_line=601)]),
            turn(tool_calls=[call("read_file", path="src/calc.py")]),
            turn(tool_calls=[call("search_code", pattern="def add")]),
            # the two pages (72,000 characters) are older than the last two turns and
            # more than 40,000 characters: both are masked now, at once
            turn(
                tool_calls=[
                    call("read_file", path="src/big.py", start_line=1, max_lines=3).expecting(
                        "HELPER_0000"
                    )
                ],
                expect_in_messages=[elided, "Call read_file again to see it."],
            ),
            turn(tool_calls=[call("stage_file", path="src/calc.py", content=CALC_SUB)]),
            turn(tool_calls=[call("stage_file", path="tests/test_calc.py", content=TESTS_SUB)]),
            turn(tool_calls=[submit_subtract()]),
            turn("Submitted."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED)]},
    )
    with serve_messages_model(model) as server:
        record = _tick(_emulator(), tmp_path / "home", server)
    model.assert_finished()

    assert record.outcome is Outcome.OPENED_PR
    builder = _builder_requests(server)
    shown = [json.dumps(body["messages"]) for body in builder]
    assert [elided in text for text in shown] == [False] * 4 + [True] * 5
    assert len({_stable_prefix(body) for body in builder}) == 1
    # masking rewrote the conversation once; every other turn read it from the cache
    charges = [c for c, b in zip(server.charges, server.requests, strict=True) if b in builder]
    assert [c.cache_read_input_tokens > 0 for c in charges] == [False] + [True] * 8
    assert record.usage.tokens_cache_read == sum(c.cache_read_input_tokens for c in server.charges)
    assert record.usage.tokens_in == sum(c.prompt_tokens for c in server.charges)


def test_the_reviewers_conversation_is_cached_and_masked_too(tmp_path: pathlib.Path) -> None:
    """The reviewer's model is made by the same runtime as the builder's: its requests
    carry the same breakpoints and its old reads are masked the same way."""
    emulator = _emulator()
    emulator.push(
        "agent-loop/issue-1-add-subtract",
        {"src/calc.py": CALC_SUB, "tests/test_calc.py": TESTS_SUB},
        message="Add subtract()",
        author=emulator.bot_login,
    )
    pr = emulator.open_pull(
        "agent-loop/issue-1-add-subtract",
        title="Add subtract()",
        body="Adds subtract().\n\nFixes #1",
        author=emulator.bot_login,
    )
    note = "Please end src/calc.py with a `# reviewed` line."
    emulator.add_review(pr, author=emulator.owner, comments=[("src/calc.py", 5, note)])

    async def comment_id() -> int:
        async with emulator_client(emulator, token=emulator.owner_token) as owner:
            return (await owner.list_review_comments(pr))[-1].id

    commented = asyncio.run(comment_id())
    elided = "[elided: read_file(path='src/big.py')"
    model = ScriptedModel(
        [
            turn(tool_calls=[call("list_feedback").expecting(str(commented))]),
            turn(tool_calls=[call("read_file", path="src/big.py")]),
            turn(tool_calls=[call("read_file", path="src/big.py", start_line=601)]),
            turn(tool_calls=[call("read_file", path="src/calc.py")]),
            turn(tool_calls=[call("search_code", pattern="def subtract")]),
            turn(
                tool_calls=[
                    call("stage_file", path="src/calc.py", content=CALC_SUB + "# reviewed\n")
                ],
                expect_in_messages=[elided],
            ),
            turn(
                tool_calls=[
                    call(
                        "submit_fix",
                        summary="Ends calc.py with the line the review asked for.",
                        replies=[{"comment_id": commented, "reply": "Done."}],
                    ).expecting("Submitted a fix")
                ]
            ),
            turn("Submitted the fix."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED)]},
    )
    with serve_messages_model(model) as server:
        record = _tick(emulator, tmp_path / "home", server, role="reviewer")
    model.assert_finished()

    assert record.outcome is Outcome.PUSHED_FIX
    reviewer = _builder_requests(server)  # every request but the verifier's
    assert len(reviewer) == 8
    for number, body in enumerate(reviewer, start=1):
        last = len(body["messages"]) - 1
        expected = ["system", "message 0"] + ([f"message {last}"] if last else [])
        assert _breakpoints(body) == expected, f"request {number}"
    assert len({_stable_prefix(body) for body in reviewer}) == 1
    shown = [json.dumps(body["messages"]) for body in reviewer]
    assert [elided in text for text in shown] == [False] * 5 + [True] * 3
    assert record.usage.tokens_cache_read == sum(c.cache_read_input_tokens for c in server.charges)
    assert record.usage.tokens_cache_read > record.usage.tokens_in / 2


def test_an_openai_model_gets_no_marker_and_its_cached_tokens_are_recorded_and_priced(
    tmp_path: pathlib.Path,
) -> None:
    """OpenAI caches a repeated prefix by itself: the prompt goes unmarked, and what it
    reports as `prompt_tokens_details.cached_tokens` is recorded and billed at its
    cached price."""
    script = [
        turn(tool_calls=[call("read_file", path="src/calc.py")], prompt_tokens=2_000),
        *[
            replace(step, prompt_tokens=2_000 + 500 * n, cached_tokens=1_024 + 512 * n)
            for n, step in enumerate(subtract_try(CALC_SUB), start=1)
        ],
    ]
    model = ScriptedModel(script, routes={VERIFIER_MARKER: [turn(VERIFIED)]})
    with serve_chat_model(model) as api_base:
        record = _tick(_emulator(), tmp_path / "home", api_base, model="openai/gpt-4o-mini")
    model.assert_finished()

    assert record.outcome is Outcome.OPENED_PR
    assert all("cache_control" not in json.dumps(c.messages) for c in model.calls)
    read = sum(1_024 + 512 * n for n in range(1, 5))
    assert (record.usage.tokens_cache_read, record.usage.tokens_cache_write) == (read, 0)
    assert record.usage.tokens_in == 2_000 + sum(2_000 + 500 * n for n in range(1, 5)) + 100
    info = load_litellm().get_model_info("gpt-4o-mini")
    billed = (
        (record.usage.tokens_in - read) * info["input_cost_per_token"]
        + read * info["cache_read_input_token_cost"]
        + record.usage.tokens_out * info["output_cost_per_token"]
    )
    assert record.usage.cost_usd == pytest.approx(billed)
    status = _cli(tmp_path / "home", "status")
    share = f"{read / record.usage.tokens_in:.0%}"
    assert f"{record.usage.tokens:,} ({share} cached)" in status
