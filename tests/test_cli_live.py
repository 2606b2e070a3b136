"""`agent-loop run` prints the tick as it happens; `agent-loop show` prints it afterwards.

Real ticks of the real command, each its own process, as a user runs them: the GitHub
emulator served on loopback, the model a `ScriptedModel` served as an OpenAI-compatible
API on loopback and reached through litellm (`AGENT_LOOP_MODEL=openai/gpt-4o-mini`, so
litellm prices the calls from its bundled table), the sample project's tests run in the
bubblewrap sandbox. Three ticks on three issues, one per way of printing (live lines,
`--quiet`, `--json`), then `agent-loop show` of the first run. The documentation's
capture of a finished run (docs/watch.md) is checked against the live run's shape.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest

from agent_loop_common.runtime import TickSummary
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    CALC_REPO,
    CALC_SUB,
    TESTS_SUB,
    VERIFIED,
    GitHubEmulator,
    ScriptedModel,
    Turn,
    bwrap_e2e_marks,
    call,
    serve_chat_model,
    submit_subtract,
    turn,
)

pytestmark = bwrap_e2e_marks()

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "watch.md"
AGENT_LOOP = str(pathlib.Path(sys.executable).with_name("agent-loop"))
USER_PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:agent_loop_hermetic"
ISSUES = ("Add subtract()", "Add subtract() for the CLI", "Add subtract() for the API")
DOC_HOME = "~/.agent-loop"
"""The home and GitHub the documentation's capture shows instead of the test's own."""
DOC_GITHUB = "http://127.0.0.1:8765"


def _builder_try() -> list[Turn]:
    """One builder try: read, stage the change and its test, try the tests, submit."""
    return [
        turn(tool_calls=[call("read_file", path="src/calc.py")]),
        turn(tool_calls=[call("stage_file", path="src/calc.py", content=CALC_SUB)]),
        turn(tool_calls=[call("stage_file", path="tests/test_calc.py", content=TESTS_SUB)]),
        turn(tool_calls=[call("run_tests", args=["-k", "subtract"])]),
        turn(tool_calls=[submit_subtract()]),
        turn("Submitted."),
    ]


def _verifier() -> list[Turn]:
    return [turn(tool_calls=[call("read_file", path="src/calc.py")]), turn(VERIFIED)]


@dataclass
class Tick:
    """One `agent-loop` process: its exit code and what it printed."""

    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


@dataclass
class Ticks:
    text: Tick
    quiet: Tick
    json: Tick
    home: pathlib.Path
    github: str
    env: dict[str, str]

    def show(self, *argv: str) -> Tick:
        return _agent_loop(self.env, "show", *argv, "--home", str(self.home))


def _agent_loop(env: dict[str, str], *argv: str) -> Tick:
    done = subprocess.run(
        [AGENT_LOOP, *argv], env=env, capture_output=True, text=True, check=False, timeout=600
    )
    return Tick(done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def ticks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ticks]:
    emulator = GitHubEmulator()
    emulator.seed_files(dict(CALC_REPO))
    numbers = [emulator.add_issue(title, "We need `subtract(a, b)` in calc.") for title in ISSUES]
    model = ScriptedModel(
        [*_builder_try(), *_builder_try(), *_builder_try()],
        routes={VERIFIER_MARKER: [*_verifier(), *_verifier(), *_verifier()]},
    )
    home = tmp_path_factory.mktemp("live") / "home"
    with emulator.serve() as github, serve_chat_model(model) as api_base:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
        env.update(
            GITHUB_API_URL=github,
            GITHUB_TOKEN=emulator.bot_token,
            AGENT_LOOP_REPO=emulator.full_name,
            AGENT_LOOP_HOME=str(home),
            AGENT_LOOP_MODEL="openai/gpt-4o-mini",
            AGENT_LOOP_API_BASE=api_base,
            OPENAI_API_KEY="sk-test-not-a-key",
            # The model is a server on loopback that this test runs: let the tick call it.
            AGENT_LOOP_ALLOW_MODEL_REQUESTS="1",
            AGENT_LOOP_SANDBOX="bwrap",
            AGENT_LOOP_TEST_COMMAND=USER_PYTEST,
            AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS="120",
        )
        run = ("run", "builder", "--issue")
        text = _agent_loop(env, *run, str(numbers[0]))
        quiet = _agent_loop(env, *run, str(numbers[1]), "--quiet")
        as_json = _agent_loop(env, *run, str(numbers[2]), "--json")
        yield Ticks(text, quiet, as_json, home, github, env)
    model.assert_finished()


def _in_order(lines: Sequence[str], patterns: Sequence[str]) -> None:
    """Each pattern matches a line after the previous pattern's line."""
    at = 0
    for pattern in patterns:
        found = next((i for i in range(at, len(lines)) if re.search(pattern, lines[i])), None)
        assert found is not None, f"{pattern!r} not found in order in:\n" + "\n".join(lines)
        at = found + 1


LIVE = [
    r"^  claimed   issue #1 Add subtract\(\)$",
    r"^  try       1 of 3$",
    r"^  builder   read_file  src/calc\.py$",
    r"^  builder   stage_file  src/calc\.py$",
    r"^  builder   stage_file  tests/test_calc\.py$",
    r"^  builder   run_tests  -k subtract$",
    r"^  tests     run_tests: exit 0: 1 passed.*; base exit 0: 1 passed",
    r"^  builder   submit_implementation  Add subtract\(\)$",
    r"^  staged    2 file\(s\): src/calc\.py \(\+4 -0\), tests/test_calc\.py \(\+5 -1\)$",
    r"^  tests     passed: 2 passed \(base: 1 passed\)$",
    r"^  verifier  read_file  src/calc\.py$",
    r"^  verifier  verified: Checked the code and the tests\.$",
    r"^builder: opened_pr on issue #1 -> http://127\.0\.0\.1:\d+/acme/widgets/pull/\d+$",
    r"^  github_requests: \d+$",
    r"^  took \d+(\.\d)?s|^  took \d+m\d\ds",
]


def test_a_tick_prints_what_it_does_as_it_happens_and_its_cost_at_the_end(ticks: Ticks) -> None:
    tick = ticks.text
    assert tick.code == 0, tick.err
    _in_order(tick.lines, LIVE)
    last = tick.lines[-1]
    assert re.fullmatch(r"  took \S+ · [\d,]+ tokens · \$0\.\d{4} \(8 model calls\)", last), (
        last
    )  # litellm priced gpt-4o-mini's tokens: well under a cent
    assert "agent-loop: one builder tick on #1" in tick.err  # the header, on stderr
    # The tick's report lists the same lines.
    report = next(line.split(": ", 1)[1] for line in tick.lines if "  report: " in line)
    html = pathlib.Path(report).read_text()
    assert "<h3>Progress</h3>" in html
    assert "verifier  verified: Checked the code and the tests." in html


def test_quiet_prints_one_line(ticks: Ticks) -> None:
    tick = ticks.quiet
    assert tick.code == 0, tick.err
    assert len(tick.lines) == 1, tick.out
    assert re.fullmatch(
        r"builder: opened_pr on issue #2 -> http://127\.0\.0\.1:\d+/acme/widgets/pull/\d+"
        r" · 1 try · [\d,]+ tokens · \$0\.\d{4} · \S+",
        tick.lines[0],
    ), tick.lines[0]
    assert "[info" not in tick.err  # the agents' own logs: warnings only


def test_json_prints_one_parseable_line_per_event_and_the_summary_last(ticks: Ticks) -> None:
    tick = ticks.json
    assert tick.code == 0, tick.err
    *events, last = [json.loads(line) for line in tick.lines]
    # Every line is keyed by `event`, the summary too: the last, `tick.summary`, is
    # told from the events by its key alone, and reads as a TickSummary.
    assert last["event"] == "tick.summary"
    assert "tick.summary" not in [e["event"] for e in events]
    assert [line.split(",", 1)[0] for line in tick.lines] == [
        '{"event": "' + e["event"] + '"' for e in [*events, last]
    ]
    summary = TickSummary.model_validate(last)
    assert summary.outcome == "opened_pr"
    assert summary.target == "issue#3"
    assert summary.cost_usd > 0
    kinds = [e["event"] for e in events]
    _in_order(
        kinds,
        [
            "^run.claimed$",
            "^try.started$",
            "^agent.tool$",
            "^tests.ran$",  # the agent's run_tests
            "^change.proposed$",
            "^tests.ran$",  # the pipeline's check
            "^verifier.verdict$",
            "^try.ended$",
            "^run.ended$",
        ],
    )
    assert all(e["run_id"] == summary.run_id and e["role"] == "builder" for e in events)
    assert {e["target"] for e in events} == {summary.target}  # one spelling: `issue#3`
    assert all(re.match(r"\d{4}-\d\d-\d\dT", e["timestamp"]) for e in events)
    tests = [e for e in events if e["event"] == "tests.ran" and e["by"] == "check"]
    assert tests[0]["status"] == "passed"
    assert tests[0]["summary"] == "2 passed (base: 1 passed)"
    (ended,) = [e for e in events if e["event"] == "run.ended"]
    assert ended["tokens"] == summary.tokens
    assert ended["cost_usd"] == pytest.approx(summary.cost_usd)
    assert ended["links"] == [summary.pr_url]


def test_show_prints_the_trace_the_diff_the_evidence_tokens_and_cost(ticks: Ticks) -> None:
    run_id = next(
        line.split(": ", 1)[1] for line in ticks.text.lines if line.startswith("  run_id: ")
    )
    shown = ticks.show(run_id[:18])  # a unique prefix is enough
    assert shown.code == 0, shown.err
    _in_order(
        shown.lines,
        [
            rf"^run {run_id} · builder · opened_pr on issue #1 Add subtract\(\)$",
            r"^  model       openai/gpt-4o-mini$",
            r"^  tokens      [\d,]+ \([\d,]+ in, [\d,]+ out\) in 8 model call\(s\)$",
            r"^  cost        \$0\.\d{4} \(estimated\)$",
            r"^  links       http://127\.0\.0\.1:\d+/acme/widgets/pull/\d+$",
            r"^Tries \(1\)$",
            r"^  1\. verified · [\d,]+ tokens · src/calc\.py, tests/test_calc\.py$",
            r"^     tests: passed: 2 passed \(base: 1 passed\)$",
            r"^Tests \(the evidence\)$",
            r"^  status        passed: 2 passed \(base: 1 passed\)$",
            r"^  command       .* -m pytest .*\(from setting\)$",
            r"^  sandbox       bwrap$",
            r"^  fail to pass  .*test_subtract",
            r"^Trace \(\d+ steps\)$",
            r"ok .* builder   llm  turn 1$",
            r"ok .* builder   run_tests  ",
            r"ok .* builder   submit_implementation  ",
            r"ok .* verifier  read_file  ",
            r"^Diff \(proposed, against its base\)$",
            r"^  diff --git a/src/calc\.py b/src/calc\.py$",
            r"^  \+def subtract\(a, b\):$",
            r"^  diff --git a/tests/test_calc\.py b/tests/test_calc\.py$",
            r"^  \+def test_subtract\(\):$",
        ],
    )
    missing = ticks.show("nope")
    assert missing.code == 1
    assert "no run 'nope' in this memory" in missing.err
    as_json = json.loads(ticks.show(run_id, "--json").out)
    assert as_json["diff"].startswith("diff --git a/src/calc.py b/src/calc.py\n")


def _doc_capture(ticks: Ticks) -> list[str]:
    """The text tick as the docs show it: the header it printed on stderr, then stdout,
    with this test's home and GitHub written as a user's."""
    header = next(line for line in ticks.text.err.splitlines() if line.startswith("agent-loop:"))
    lines = [header, *ticks.text.lines]
    home = str(ticks.home.resolve())
    return [
        line.replace(home, DOC_HOME)
        .replace(str(ticks.home), DOC_HOME)
        .replace(ticks.github, DOC_GITHUB)
        for line in lines
    ]


def _shape(lines: Sequence[str]) -> list[str]:
    """Lines with what changes from run to run (ids, ports, counts, times) made equal."""
    shaped: list[str] = []
    for line in lines:
        line = re.sub(r"\d{8}T\d{6}Z-[0-9a-f]{8}", "RUN", line)
        line = re.sub(r"http://127\.0\.0\.1:\d+", "GITHUB", line)
        line = re.sub(r"\b(\d+(\.\d+)?s|\d+m\d\ds|\d+h\d\dm)\b", "T", line)  # durations
        line = re.sub(r" +T\b", " T", line)  # a duration's padding follows its width
        shaped.append(re.sub(r"\d+", "N", line))
    return shaped


def _doc_block(name: str = "agent-loop run builder") -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"<!-- capture: {name} -->")
    block = text[start:].split("```text\n", 1)[1].split("\n```", 1)[0]
    return block.splitlines()


def test_the_docs_capture_of_a_finished_run_has_the_shape_of_a_real_one(ticks: Ticks) -> None:
    fresh = _doc_capture(ticks)
    assert _shape(_doc_block()) == _shape(fresh), (
        "docs/watch.md's capture is out of date; a real run printed:\n" + "\n".join(fresh)
    )
    assert all(len(line) <= 120 for line in _doc_block())  # it fits a terminal


def test_the_docs_capture_of_show_has_the_shape_of_a_real_one(ticks: Ticks) -> None:
    run_id = next(
        line.split(": ", 1)[1] for line in ticks.text.lines if line.startswith("  run_id: ")
    )
    fresh = [
        line.replace(sys.executable, "python").replace(ticks.github, DOC_GITHUB)
        for line in ticks.show(run_id).lines
    ]
    assert _shape(_doc_block("agent-loop show")) == _shape(fresh), (
        "docs/watch.md's capture of show is out of date; a real one printed:\n" + "\n".join(fresh)
    )
