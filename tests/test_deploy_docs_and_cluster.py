"""docs/deploy.md's commands work as written, a cluster that does not answer is named
with how to start it, and `run distiller --help` offers only the distiller's options
(issue 31, the smaller items)."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import shlex
import socket
import subprocess

import pytest

from agent_loop import cli
from agent_loop.cluster import endpoint_address, flyte_error_text, unavailable

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEPLOY = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")


def _shell_lines() -> list[str]:
    """Every command line of docs/deploy.md's shell blocks (continuations joined)."""
    lines: list[str] = []
    for block in re.findall(r"```(?:bash|sh)\n(.*?)```", DEPLOY, re.DOTALL):
        text = re.sub(r"\\\n\s*", " ", block)
        for raw in text.splitlines():
            line = raw.split("  #", 1)[0].strip()
            if line and not line.startswith(("#", "for ", "done", "export ")):
                lines.append(line)
    return lines


def test_every_documented_command_runs_from_the_workspace() -> None:
    lines = _shell_lines()
    assert lines
    for line in lines:
        word = line.split()[0]
        assert word not in ("agent-loop", "flyte", "python"), f"needs `uv run`: {line}"
        if word.startswith("infra/"):
            script = ROOT / word
            assert script.is_file(), line
            assert os.access(script, os.X_OK), line
        elif line.startswith("uv run agent-loop "):
            argv = shlex.split(line.removeprefix("uv run agent-loop ").split("|")[0])
            cli.build_parser().parse_args([a.replace("$agent", "builder") for a in argv])
        elif line.startswith("uv run python -m "):
            module = line.split()[4]
            assert importlib.util.find_spec(module) is not None, line
        else:
            assert word == "uv", line


def _closed_config(tmp_path: pathlib.Path) -> pathlib.Path:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    config = tmp_path / "cluster.yaml"
    config.write_text(
        f"admin:\n  endpoint: dns:///127.0.0.1:{port}\n  insecure: true\n"
        "image:\n  builder: local\n  registry: localhost:30000\n"
        "task:\n  org: o\n  project: p\n  domain: development\n",
        encoding="utf-8",
    )
    return config


def test_a_deploy_to_a_cluster_that_does_not_answer_names_it_at_once(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_LOOP_REPO", "acme/widgets")
    config = _closed_config(tmp_path)
    assert cli.main(["deploy", "builder", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agent-loop deploy builder: the Flyte cluster at dns:///127.0.0.1:")
    assert "does not answer (connection refused); nothing was changed" in err
    assert "uv run flyte start devbox" in err


def test_the_devbox_is_told_how_to_start() -> None:
    text = unavailable(
        "dns:///localhost:30080", "infra/flyte/devbox.yaml", purpose="p", reason="refused"
    )
    assert "Start the devbox first: `uv run flyte start devbox`" in text
    assert endpoint_address("dns:///localhost:30080") == ("localhost", 30080)
    assert endpoint_address("https://flyte.example.com") == ("flyte.example.com", 443)
    assert endpoint_address("flyte.example.com:8089") == ("flyte.example.com", 8089)


def test_the_trigger_script_says_ours_not_flytes_boxed_error(tmp_path: pathlib.Path) -> None:
    config = _closed_config(tmp_path)
    done = subprocess.run(
        [str(ROOT / "infra" / "flyte" / "trigger"), "pause", "builder", "--config", str(config)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("infra/flyte/trigger pause builder: the Flyte cluster at")
    assert "╭" not in done.stderr + done.stdout


def test_flytes_boxed_error_becomes_one_line() -> None:
    boxed = (
        "\x1b[32m⠇\x1b[0m Updating trigger builder_schedule...\n"
        "╭─ Error ──────────────────────────────╮\n"
        "│ Service is currently unavailable.    │\n"
        "│ Please try again later.              │\n"
        "╰──────────────────────────────────────╯\n"
    )
    assert flyte_error_text(boxed) == "Service is currently unavailable. Please try again later."
    assert flyte_error_text("boom\nlast words\n") == "last words"


def test_run_distiller_help_offers_no_target(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["run", "distiller", "--help"])
    text = capsys.readouterr().out
    assert "--issue" not in text
    assert "--pr" not in text
    assert "--retry-now" in text
