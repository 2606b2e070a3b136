"""Attack through the whole builder (issue 22): the change under test chooses a host mount.

The repository has a setup script the operator's `AGENT_LOOP_SETUP_COMMAND` runs (it
makes `.venv`, so the test command's `python` is the tree's). The model stages a new
setup script that writes `.venv/pyvenv.cfg` with `home =` a host folder holding a
secret, and a test that reads the secret and would fail with it in its name and its
message. Before, the sandbox bound that `home` folder (as root, even from behind a
`0700` folder), the test failed with the secret in the failing test's name, and the
secret reached the model's feedback and the issue's comment. Now nothing in the tree
chooses a bind: the secret stays unreadable, the tests pass, and the secret appears in
no GitHub text and no prompt.

Through `agent-loop run builder` in Flyte local mode, the emulator on loopback, the real
builder with a strict `ScriptedModel`, and the real bubblewrap sandbox.
"""

from __future__ import annotations

import pathlib
import secrets
from collections.abc import Iterator

import pytest

from agent_loop import cli
from agent_loop_common.records import Role
from agent_loop_common.sandbox import _select
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    CALC,
    VERIFIED,
    CliLoop,
    GitHubEmulator,
    ScriptedModel,
    bwrap_e2e_marks,
    call,
    serve_for_cli,
    turn,
)

pytestmark = bwrap_e2e_marks()

SETUP = "import venv\n\nvenv.create('.venv', with_pip=False, symlinks=True)\n"
TESTS = (
    "import unittest\n\nfrom calc import add\n\n\n"
    "class AddTest(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
)
EVIL_SETUP = (
    "import os, sys\n\n"
    "os.makedirs('.venv/bin', exist_ok=True)\n"
    "with open('.venv/pyvenv.cfg', 'w') as cfg:\n"
    "    cfg.write('home = {home}\\n')\n"
    "if not os.path.lexists('.venv/bin/python'):\n"
    "    os.symlink(sys.executable, '.venv/bin/python')\n"
)
LEAK_TEST = (
    "import unittest\n\n\n"
    "def _secret():\n"
    "    try:\n"
    "        with open({secret!r}) as f:\n"
    "            return f.read().strip()\n"
    "    except OSError:\n"
    "        return ''\n\n\n"
    "class LeakTest(unittest.TestCase):\n"
    "    pass\n\n\n"
    "def _check(self, value=_secret()):\n"
    "    self.assertEqual(value, '', 'leaked ' + value)\n\n\n"
    "setattr(LeakTest, 'test_' + (_secret() or 'nothing'), _check)\n"
)


@pytest.fixture
def secret(tmp_path: pathlib.Path) -> tuple[pathlib.Path, str]:
    """A host file in an installation-shaped folder behind a `0700` one (like `/root`)."""
    canary = "canary" + secrets.token_hex(8)
    folder = tmp_path / "locked" / "private"
    (folder / "bin").mkdir(parents=True)
    (folder / "token.txt").write_text(canary)
    (tmp_path / "locked").chmod(0o700)
    return folder / "token.txt", canary


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> Iterator[GitHubEmulator]:
    _select.clear_probe_cache()
    emu = GitHubEmulator()
    emu.seed_files(
        {
            "calc.py": CALC,
            "tests/__init__.py": "",
            "tests/test_calc.py": TESTS,
            "tools/setup_env.py": SETUP,
            "README.md": "# calc\n",
        }
    )
    with serve_for_cli(
        monkeypatch,
        emu,
        tmp_path / "home",
        AGENT_LOOP_SANDBOX="bwrap",
        AGENT_LOOP_SETUP_COMMAND="python3 tools/setup_env.py",
        AGENT_LOOP_TEST_COMMAND="python -m unittest discover -v",
        AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS="120",
    ):
        yield emu
    _select.clear_probe_cache()


def test_a_staged_setup_that_writes_pyvenv_cfg_cannot_read_a_host_file(
    emulator: GitHubEmulator,
    secret: tuple[pathlib.Path, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, canary = secret
    issue = emulator.add_issue("Add a leak check", "Add a test in tests/test_leak.py.")
    staged = {
        "tools/setup_env.py": EVIL_SETUP.format(home=path.parent / "bin"),
        "tests/test_leak.py": LEAK_TEST.format(secret=str(path)),
    }
    model = ScriptedModel(
        [
            *(turn(tool_calls=[call("stage_file", path=p, content=c)]) for p, c in staged.items()),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title="Add a leak check",
                        body="Adds tests/test_leak.py.",
                        summary="A leak check.",
                    ).expecting("Submitted")
                ]
            ),
            turn("Submitted."),
        ],
        routes={VERIFIER_MARKER: [turn(VERIFIED, expect_in_messages=["Checked by the pipeline"])]},
        name="builder",
    )
    loop = CliLoop(emulator, cli.main, capsys)
    summary = loop.run(Role.BUILDER, model)

    assert summary.outcome == "opened_pr"
    [pr] = summary.made
    body = emulator.pull(pr).body or ""
    # The tests ran and passed (unittest's summary is counted since issue 22, point 4).
    assert "- Result: 2 passed (base: 1 passed)" in body, body
    prompts = [
        str(c.messages) + c.system for c in [*model.calls_for(), *model.calls_for(VERIFIER_MARKER)]
    ]
    github_texts = [
        *(f"{i.title}\n{i.body}" for i in emulator.issues()),
        *(f"{p.title}\n{p.body}" for p in emulator.pulls()),
        *(c.body for n in (issue, pr) for c in emulator.comments(n)),
    ]
    for text in [*prompts, *github_texts, *loop.printed[-1]]:
        assert canary not in text
