"""Commands as argument vectors: parsing, refusing shell syntax, extra arguments, detection."""

from __future__ import annotations

import pytest

from agent_loop_common.sandbox import (
    CommandRejected,
    detect_test_command,
    parse_command,
    resolve_test_command,
    validate_extra_args,
)
from agent_loop_common.sandbox._command import expand_placeholders


def test_a_command_line_becomes_an_argument_vector() -> None:
    assert parse_command("python -m pytest -q") == ("python", "-m", "pytest", "-q")
    assert parse_command(" pytest -k 'not slow and (a or b)' ") == (
        "pytest",
        "-k",
        "not slow and (a or b)",
    )
    assert parse_command("/opt/venv/bin/python -m pytest --junitxml=$SANDBOX_JUNIT")[-1] == (
        "--junitxml=$SANDBOX_JUNIT"
    )


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("pytest; rm -rf /", "';'"),
        ("make test && make lint", "'&'"),
        ("pytest &", "'&'"),
        ("pytest | tee log", "'|'"),
        ("pytest || true", "'|'"),
        ("echo `id`", "backticks"),
        ("echo $(id)", "'$('"),
        ("pytest > out.txt", "'>'"),
        ("pytest 2>&1", "'&'"),
        ("pytest < in", "'<'"),
        ("pytest\nmake", "line break"),
        ("pytest --basetemp=$TMPDIR", "'$'"),
    ],
)
def test_shell_syntax_is_refused_with_a_reason(text: str, named: str) -> None:
    with pytest.raises(CommandRejected) as caught:
        parse_command(text, what="AGENT_LOOP_TEST_COMMAND")
    message = str(caught.value)
    assert message.startswith("AGENT_LOOP_TEST_COMMAND")
    assert named in message
    assert "without a shell" in message


@pytest.mark.parametrize(
    ("text", "argv"),
    [
        ('python -c "import a; a.main()"', ("python", "-c", "import a; a.main()")),
        ("python -c 'print(1 > 0 and 2 < 3)'", ("python", "-c", "print(1 > 0 and 2 < 3)")),
        ("pytest -k 'a|b' -p 'x&y'", ("pytest", "-k", "a|b", "-p", "x&y")),
        ("echo '$HOME `id` $(id)'", ("echo", "$HOME `id` $(id)")),
        ("pytest \\; done", ("pytest", ";", "done")),
        ('pytest --junitxml="$SANDBOX_JUNIT"', ("pytest", "--junitxml=$SANDBOX_JUNIT")),
    ],
)
def test_quoted_shell_characters_are_one_argument(text: str, argv: tuple[str, ...]) -> None:
    """No shell runs, so what is quoted is literal (issue 22): only unquoted syntax is refused."""
    assert parse_command(text) == argv


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('python -c "$(id)"', "'$('"),
        ('python -c "`id`"', "backticks"),
        ('pytest "--basetemp=$TMPDIR"', "'$'"),
        ("python -c 'a' ; rm x", "';'"),
        ('python -c "a" | tee', "'|'"),
    ],
)
def test_what_a_shell_expands_in_double_quotes_or_outside_quotes_is_refused(
    text: str, named: str
) -> None:
    with pytest.raises(CommandRejected) as caught:
        parse_command(text)
    assert named in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("pytest 'unclosed", "cannot be parsed"),
        ("CI=1 pytest", "variable assignment"),
        ("x" * 2001, "longer than"),
    ],
)
def test_other_bad_commands(text: str, expected: str) -> None:
    with pytest.raises(CommandRejected, match=expected):
        parse_command(text)


def test_the_junit_placeholder_is_the_only_substitution() -> None:
    argv = ("pytest", "--junitxml=$SANDBOX_JUNIT", "${SANDBOX_JUNIT}", "$SANDBOX_JUNITX")
    assert expand_placeholders(argv, junit_path="/out/j.xml") == (
        "pytest",
        "--junitxml=/out/j.xml",
        "/out/j.xml",
        "$SANDBOX_JUNITX",
    )


def test_extra_arguments_a_model_may_append() -> None:
    good = ["-x", "-k", "login and not slow", "tests/test_a.py::test_b[1]", "--maxfail=2"]
    assert validate_extra_args(good) == tuple(good)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["/etc/passwd"], "absolute path"),
        (["--rootdir=/"], "absolute path"),
        (["../secrets"], "leaves the repository"),
        (["tests/../../x"], "leaves the repository"),
        (["--basetemp=../../x"], "leaves the repository"),
        (["~/.ssh/id_rsa"], "home folder"),
        (["a;b"], "shell syntax"),
        (["$(id)"], "shell syntax"),
        (["$HOME"], "shell syntax"),
        (["a\x00b"], "control character"),
        (["a\nb"], "control character"),
        ([""], "empty"),
        (["x" * 301], "longer than"),
        (["-x"] * 33, "too many"),
    ],
)
def test_extra_arguments_that_are_refused(args: list[str], expected: str) -> None:
    with pytest.raises(CommandRejected, match=expected):
        validate_extra_args(args)


# ---------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("agents_md", "expected"),
    [
        ("# Dev\n\nTest command: `uv run pytest -q`\n", ("uv", "run", "pytest", "-q")),
        ("- **Test command:** make check\n", ("make", "check")),
        ("test-command: tox -e py311\n", ("tox", "-e", "py311")),
        (
            "# Project\n\n## Setup\n\n```sh\npip install -e .\n```\n\n## Running the tests\n\n"
            "Run them like this:\n\n```console\n# all of them\n$ python -m pytest -x\n```\n",
            ("python", "-m", "pytest", "-x"),
        ),
        ("## Testing\n\n~~~\nnpm run test:unit\n~~~\n", ("npm", "run", "test:unit")),
    ],
)
def test_agents_md_names_the_command(agents_md: str, expected: tuple[str, ...]) -> None:
    found = detect_test_command({"AGENTS.md": agents_md, "pyproject.toml": "[tool.pytest]"})
    assert found is not None
    assert (found.argv, found.source) == (expected, "AGENTS.md")


def test_a_shell_command_in_agents_md_is_skipped_with_a_note() -> None:
    files = {
        "AGENTS.md": "Test command: `make lint && make test`\n",
        "pyproject.toml": "[tool.pytest.ini_options]\n",
    }
    found = detect_test_command(files)
    assert found is not None
    assert found.source == "pyproject.toml"
    assert "shell syntax" in found.notes[0]


def test_a_code_block_outside_the_testing_section_does_not_count() -> None:
    files = {"AGENTS.md": "## Build\n\n```\nmake build\n```\n\n## Testing\n\nJust ask.\n"}
    assert detect_test_command(files) is None


@pytest.mark.parametrize(
    ("files", "argv", "source"),
    [
        (
            {"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n"},
            ("python", "-m", "pytest", "-q", "--junitxml=$SANDBOX_JUNIT"),
            "pyproject.toml",
        ),
        (
            {
                "pyproject.toml": '[project]\ndependencies = []\n[dependency-groups]\ndev = ["pytest>=8"]\n'
            },
            ("python", "-m", "pytest", "-q", "--junitxml=$SANDBOX_JUNIT"),
            "pyproject.toml",
        ),
        (
            {"pytest.ini": "[pytest]\n"},
            ("python", "-m", "pytest", "-q", "--junitxml=$SANDBOX_JUNIT"),
            "pytest.ini",
        ),
        (
            {"setup.cfg": "[tool:pytest]\n"},
            ("python", "-m", "pytest", "-q", "--junitxml=$SANDBOX_JUNIT"),
            "setup.cfg",
        ),
        (
            {"tox.ini": "[pytest]\n"},
            ("python", "-m", "pytest", "-q", "--junitxml=$SANDBOX_JUNIT"),
            "tox.ini",
        ),
        (
            {"conftest.py": ""},
            ("python", "-m", "pytest", "-q", "--junitxml=$SANDBOX_JUNIT"),
            "conftest.py",
        ),
        ({"package.json": '{"scripts": {"test": "jest"}}'}, ("npm", "test"), "package.json"),
        ({"go.mod": "module x\n"}, ("go", "test", "./..."), "go.mod"),
        ({"Cargo.toml": "[package]\n"}, ("cargo", "test"), "Cargo.toml"),
        ({"Makefile": "build:\n\tcc x.c\n\ntest: build\n\t./x\n"}, ("make", "test"), "Makefile"),
    ],
)
def test_detection_from_project_files(
    files: dict[str, str], argv: tuple[str, ...], source: str
) -> None:
    found = detect_test_command(files)
    assert found is not None
    assert (found.argv, found.source) == (argv, source)


@pytest.mark.parametrize(
    "files",
    [
        {},
        {"README.md": "hello"},
        {"package.json": '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}'},
        {"package.json": "{not json"},
        {"package.json": '{"scripts": {"build": "tsc"}}'},
        {"Makefile": "testing:\n\ttrue\n"},
        {"pyproject.toml": "[project]\nname = 'x'\n"},
    ],
)
def test_nothing_detected(files: dict[str, str]) -> None:
    assert detect_test_command(files) is None


def test_the_order_of_the_rules() -> None:
    everything = {
        "pyproject.toml": "[tool.pytest]",
        "package.json": '{"scripts": {"test": "jest"}}',
        "go.mod": "module x",
        "Makefile": "test:\n",
    }
    first = detect_test_command(everything)
    assert first is not None
    assert first.source == "pyproject.toml"
    del everything["pyproject.toml"]
    second = detect_test_command(everything)
    assert second is not None
    assert second.source == "package.json"


def test_a_reader_function_works_like_a_mapping() -> None:
    asked: list[str] = []

    def read(path: str) -> str | None:
        asked.append(path)
        return "module x\n" if path == "go.mod" else None

    found = detect_test_command(read)
    assert found is not None
    assert found.argv == ("go", "test", "./...")
    assert "AGENTS.md" in asked


def test_the_setting_wins_over_detection() -> None:
    found = resolve_test_command("tox -e py", {"go.mod": "module x"})
    assert found is not None
    assert (found.argv, found.source) == (("tox", "-e", "py"), "setting")
    assert found.describe() == "tox -e py (from setting)"
    detected = resolve_test_command("  ", {"go.mod": "module x"})
    assert detected is not None
    assert detected.source == "go.mod"
    with pytest.raises(CommandRejected, match="AGENT_LOOP_TEST_COMMAND"):
        resolve_test_command("a | b", {})
