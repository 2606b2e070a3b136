"""`agent-loop emulator serve`: seeds, and bad usage answered before anything is served."""

from __future__ import annotations

import json
import os
import pathlib
import socket

import pytest

from agent_loop import cli
from agent_loop.emulator_cmd import SeedError, load_seed


def test_the_built_in_seeds() -> None:
    repo, files, issues = load_seed("demo")
    assert repo == "acme/widgets"
    assert "README.md" in files
    assert len(issues) == 3
    assert load_seed("empty") == ("acme/widgets", {"README.md": "# widgets\n"}, [])


def test_a_seed_file(tmp_path: pathlib.Path) -> None:
    seed = tmp_path / "seed.json"
    seed.write_text(
        json.dumps(
            {
                "repo": "octo/app",
                "files": {"app.py": "print('hi')\n"},
                "issues": [{"title": "Say hello", "body": "Print hello.", "labels": ["x"]}],
            }
        )
    )
    assert load_seed(str(seed)) == (
        "octo/app",
        {"app.py": "print('hi')\n"},
        [{"title": "Say hello", "body": "Print hello.", "labels": ["x"]}],
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ("[]", "expected an object"),
        ('{"repo": "no-slash"}', "repo must be owner/name"),
        ('{"files": {"a": 1}}', "files must map paths to text"),
        ('{"issues": [{"body": "no title"}]}', "issues must be a list of objects with a title"),
    ],
)
def test_a_bad_seed_file_is_named(tmp_path: pathlib.Path, content: str, message: str) -> None:
    seed = tmp_path / "seed.json"
    seed.write_text(content)
    with pytest.raises(SeedError, match=message):
        load_seed(str(seed))


def test_bad_usage_exits_2_before_serving(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = os.fspath(tmp_path / "missing.json")
    assert cli.main(["emulator", "serve", "--seed", missing]) == cli.EXIT_CONFIG
    assert "not demo, empty or a readable file" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.main(["emulator", "serve", "--port", str(port)]) == cli.EXIT_CONFIG
    out, err = capsys.readouterr()
    assert f"cannot listen on 127.0.0.1:{port}" in err
    assert out == ""  # no exports for a GitHub that is not there
