"""StagingPolicy and path normalisation: what an agent may and may not stage."""

from __future__ import annotations

import pytest

from agent_loop_common.staging import (
    PolicyViolation,
    StagingPolicy,
    glob_matches,
    normalise_path,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("src/a.py", "src/a.py"),
        ("./src/a.py", "src/a.py"),
        ("././src//pkg/./a.py", "src/pkg/a.py"),
        ("src\\pkg\\a.py", "src/pkg/a.py"),
        ("  README.md ", "README.md"),
        (".github/ISSUE_TEMPLATE/bug.md", ".github/ISSUE_TEMPLATE/bug.md"),
        (".gitignore", ".gitignore"),
        ("docs/.git-notes.md", "docs/.git-notes.md"),
    ],
)
def test_paths_are_normalised(raw: str, expected: str) -> None:
    assert normalise_path(raw) == expected


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("/etc/passwd", "absolute"),
        ("~/x", "absolute"),
        ("C:/x.py", "absolute"),
        ("../outside.py", "'..'"),
        ("src/../../x.py", "'..'"),
        ("src/..", "'..'"),
        (".git/config", ".git"),
        ("sub/.git/hooks/pre-commit", ".git"),
        (".GIT/HEAD", ".git"),
        ("src/a\x00.py", "NUL"),
        ("src/a\nb.py", "control"),
        ("src/", "directory"),
        (".", "does not name a file"),
        ("a/" + "x" * 300, "longer than 255"),
        (42, "must be a string"),
        (None, "must be a string"),
    ],
)
def test_bad_paths_are_refused_with_a_reason(raw: object, needle: str) -> None:
    with pytest.raises(PolicyViolation) as info:
        normalise_path(raw)
    assert needle in str(info.value)


@pytest.mark.parametrize(
    ("path", "pattern", "matches"),
    [
        (".github/workflows/ci.yml", ".github/workflows/**", True),
        (".github/workflows/sub/x.yml", ".github/workflows/**", True),
        (".github/workflows", ".github/workflows/**", False),
        (".GitHub/Workflows/ci.yml", ".github/workflows/**", True),
        ("deploy/prod.yaml", "deploy/", True),
        ("deploy.yaml", "deploy/", False),
        ("key.pem", "*.pem", True),
        ("certs/key.pem", "*.pem", False),
        ("certs/key.pem", "**/*.pem", True),
        ("key.pem", "**/*.pem", True),
        ("a/b/c.txt", "a/?/c.txt", True),
        ("a/bb/c.txt", "a/?/c.txt", False),
        ("a+b/c.txt", "a+b/*.txt", True),
    ],
)
def test_glob_semantics(path: str, pattern: str, matches: bool) -> None:
    assert glob_matches(path, pattern) is matches


def test_workflow_files_are_refused_unless_allowed() -> None:
    with pytest.raises(PolicyViolation, match="workflow"):
        StagingPolicy().check_path("./.github/workflows/ci.yml")
    # alternative spellings reach the same decision
    with pytest.raises(PolicyViolation, match="workflow"):
        StagingPolicy().check_path(".github//workflows\\release.yml")
    assert StagingPolicy(allow_workflows=True).check_path(".github/workflows/ci.yml") == (
        ".github/workflows/ci.yml"
    )
    # the rest of .github is protected too (issue 16), workflows allowed or not
    for policy in (StagingPolicy(), StagingPolicy(allow_workflows=True)):
        with pytest.raises(PolicyViolation, match="protected repository configuration"):
            policy.check_path(".github/dependabot.yml")


def test_configured_protected_globs_are_refused() -> None:
    policy = StagingPolicy(protected_globs=("**/*.pem", "deploy/"))
    with pytest.raises(PolicyViolation, match=r"matches '\*\*/\*\.pem'"):
        policy.check_path("certs/server.pem")
    with pytest.raises(PolicyViolation, match="protected"):
        policy.check_delete("deploy/prod.yaml", {})
    assert policy.check_path("src/deploy.py") == "src/deploy.py"


def test_size_caps_per_file_and_total() -> None:
    policy = StagingPolicy(max_file_bytes=10, max_total_bytes=15)
    assert policy.check_write("a.txt", "0123456789", {}) == "a.txt"
    with pytest.raises(PolicyViolation, match="11 bytes; the limit is 10"):
        policy.check_write("a.txt", "0123456789a", {})
    # multi-byte characters count in UTF-8 bytes, not characters
    with pytest.raises(PolicyViolation, match="12 bytes"):
        policy.check_write("a.txt", "é" * 6, {})
    with pytest.raises(PolicyViolation, match="16 bytes; the limit is 15"):
        policy.check_write("b.txt", "x" * 6, {"a.txt": "0123456789"})
    # replacing a staged file does not count its old content
    assert policy.check_write("a.txt", "x" * 10, {"a.txt": "0123456789", "b.txt": "xyz"}) == "a.txt"


def test_file_count_cap_counts_writes_and_deletions() -> None:
    policy = StagingPolicy(max_files=2)
    staged: dict[str, str | None] = {"a.txt": "a", "b.txt": None}
    with pytest.raises(PolicyViolation, match="already touches 2 paths"):
        policy.check_write("c.txt", "c", staged)
    with pytest.raises(PolicyViolation, match="already touches 2 paths"):
        policy.check_delete("c.txt", staged)
    # re-staging an already staged path does not grow the change
    assert policy.check_write("b.txt", "b", staged) == "b.txt"


@pytest.mark.parametrize("content", ["a\x00b", "bell\x07", "esc\x1b[0m", "del\x7f"])
def test_binary_content_is_refused_unless_allowed(content: str) -> None:
    with pytest.raises(PolicyViolation, match="only text"):
        StagingPolicy().check_content("x.bin", content)
    assert StagingPolicy(allow_binary=True).check_content("x.bin", content) == content


def test_text_content_rules() -> None:
    policy = StagingPolicy()
    assert policy.check_content("a.md", "tabs\tand\r\nlines\fok ünïcode ✓") != ""
    with pytest.raises(PolicyViolation, match="not valid UTF-8"):
        policy.check_content("a.md", "half a pair \ud800")
    with pytest.raises(PolicyViolation, match="must be a string"):
        policy.check_content("a.md", None)
    with pytest.raises(PolicyViolation, match="must be a string"):
        policy.check_content("a.md", {"not": "text"})


def test_check_files_rechecks_a_whole_change() -> None:
    policy = StagingPolicy(max_files=3)
    policy.check_files({"src/a.py": "x", "old.py": None})
    with pytest.raises(PolicyViolation, match="workflow"):
        policy.check_files({".github/workflows/ci.yml": "on: push"})
    with pytest.raises(PolicyViolation, match="not normalised"):
        policy.check_files({"./src/a.py": "x"})
    with pytest.raises(PolicyViolation, match="touches 4 paths"):
        policy.check_files({f"f{i}.py": "x" for i in range(4)})
    with pytest.raises(PolicyViolation, match="only text"):
        policy.check_files({"a.py": "\x00"})
