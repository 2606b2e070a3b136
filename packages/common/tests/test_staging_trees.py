"""Protected paths are trees, not strings: the attacks of issue 16, tried as a model would.

A model that may not edit `.github/workflows/ci.yml` must not get the same effect by
staging a *file* at `.github/workflows` or `.github` (the commit would replace the whole
directory, so the PR deletes every workflow), by deleting the directory, or by
replacing any other directory of the base branch with a file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agent_loop_common.github import GitHub
from agent_loop_common.staging import (
    CI_GLOBS,
    REFUSAL_PREFIX,
    REPOSITORY_CONFIG_GLOBS,
    ChangeStage,
    PolicyViolation,
    StagingPolicy,
    StagingTool,
    directory_lookup,
    fix_tools,
    implementation_tools,
)
from agent_loop_testing import GitHubEmulator, emulator_client


def by_name(tools: list[StagingTool]) -> dict[str, Callable[..., Any]]:
    return {t.__name__: t for t in tools}


# ---------------------------------------------------------------- the pure policy


@pytest.mark.parametrize(
    "path",
    [
        ".github/workflows",  # a file where the workflows directory is
        ".github",  # a file where all of .github is
        ".GitHub",  # the same on a case-insensitive checkout
        "./.github//workflows",
        ".github/workflows/ci.yml",
        ".github/actions/setup/action.yml",
        ".github/CODEOWNERS",
        ".github/dependabot.yml",
        ".github/ISSUE_TEMPLATE/bug.md",
        "CODEOWNERS",
        "docs/CODEOWNERS",
        ".gitlab-ci.yml",
        ".gitlab-ci.yml/inner",  # turning a protected file into a directory deletes it
        ".gitlab/CODEOWNERS",
        ".circleci",
        ".circleci/config.yml",
        "Jenkinsfile",
        "azure-pipelines.yml",
        ".buildkite/pipeline.yml",
        ".travis.yml",
        "bitbucket-pipelines.yml",
    ],
)
def test_protected_trees_are_refused_for_writes_and_deletions(path: str) -> None:
    policy = StagingPolicy()
    with pytest.raises(PolicyViolation, match=r"protected|workflow"):
        policy.check_write(path, "replaced", {})
    with pytest.raises(PolicyViolation, match=r"protected|workflow"):
        policy.check_delete(path, {})


def test_the_apply_time_recheck_refuses_a_directory_replaced_by_a_file() -> None:
    with pytest.raises(PolicyViolation, match="contains"):
        StagingPolicy().check_files({".github": "not a directory any more"})
    with pytest.raises(PolicyViolation, match="protected repository configuration"):
        StagingPolicy(allow_workflows=True).check_files({".github/workflows": None})


def test_allowing_workflows_opens_ci_pipelines_but_not_the_rest_of_github() -> None:
    policy = StagingPolicy(allow_workflows=True)
    for path in (
        ".github/workflows/ci.yml",
        ".github/actions/setup/action.yml",
        ".gitlab-ci.yml",
        ".circleci/config.yml",
        "Jenkinsfile",
    ):
        assert policy.check_write(path, "x", {}) == path
    for path in (
        ".github/workflows",  # still a directory: replacing it with a file is refused
        ".github",
        ".github/CODEOWNERS",
        ".github/dependabot.yml",
        "CODEOWNERS",
    ):
        with pytest.raises(PolicyViolation, match="protected"):
            policy.check_write(path, "x", {})


def test_configured_protected_paths_are_trees_too() -> None:
    policy = StagingPolicy(protected_globs=("deploy/", "secrets/prod/**"), allow_workflows=True)
    for path in ("deploy", "deploy/prod.yaml", "secrets", "secrets/prod", "secrets/prod/k"):
        with pytest.raises(PolicyViolation, match="protected"):
            policy.check_delete(path, {})
    assert policy.check_write("secrets/dev/k", "x", {}) == "secrets/dev/k"
    assert policy.check_write("deployment.md", "x", {}) == "deployment.md"
    # a configured glob wins over the workflow opt-in
    strict = StagingPolicy(allow_workflows=True, protected_globs=(".github/workflows/release.yml",))
    with pytest.raises(PolicyViolation, match="protected"):
        strict.check_write(".github/workflows/release.yml", "x", {})


def test_the_default_lists_are_exported_and_disjoint() -> None:
    assert ".github/workflows/" in CI_GLOBS
    assert ".github/" in REPOSITORY_CONFIG_GLOBS
    assert not set(CI_GLOBS) & set(REPOSITORY_CONFIG_GLOBS)


def test_a_path_cannot_be_a_file_and_a_directory_in_one_change() -> None:
    policy = StagingPolicy()
    with pytest.raises(PolicyViolation, match="is a directory in this change"):
        policy.check_write("src", "x", {"src/a.py": "a"})
    with pytest.raises(PolicyViolation, match="staged as a file"):
        policy.check_write("src/a.py/b.py", "x", {"src/a.py": "a"})
    with pytest.raises(PolicyViolation, match="is a directory in this change"):
        policy.check_files({"src": "x", "src/a.py": "a"})
    # deleting a file and creating a directory in its place is a valid change
    assert policy.check_write("old/new.py", "x", {"old": None}) == "old/new.py"


# ---------------------------------------------------------------- the staging tools

BASE = frozenset({"README.md", "src/pkg/a.py", "src/pkg/b.py", "guide/intro.md"})


async def _files() -> frozenset[str]:
    return BASE


async def _exists(path: str) -> bool:
    return path in BASE


def _tools(stage: ChangeStage, **kwargs: Any) -> dict[str, Callable[..., Any]]:
    return by_name(
        implementation_tools(
            stage,
            StagingPolicy(),
            exists_at_base=_exists,
            is_dir_at_base=directory_lookup(_files),
            **kwargs,
        )
    )


@pytest.mark.parametrize("path", ["src", "src/pkg", "./src//pkg"])
async def test_stage_file_refuses_to_replace_a_directory_of_the_base_branch(path: str) -> None:
    stage = ChangeStage()
    result = await _tools(stage)["stage_file"](path=path, content="gone")
    assert result.startswith(REFUSAL_PREFIX), result
    assert "is a directory" in result
    assert dict(stage.files) == {}


async def test_delete_file_refuses_a_directory_of_the_base_branch() -> None:
    stage = ChangeStage()
    result = await _tools(stage)["delete_file"](path="src/pkg")
    assert result.startswith(f"{REFUSAL_PREFIX}'src/pkg' is a directory"), result
    assert dict(stage.files) == {}


async def test_stage_file_refuses_a_path_under_a_file_of_the_base_branch() -> None:
    stage = ChangeStage()
    tools = _tools(stage)
    result = await tools["stage_file"](path="README.md/x.md", content="x")
    assert result.startswith(REFUSAL_PREFIX), result
    assert "'README.md' is a file" in result
    # once the file's deletion is staged, a directory may take its place
    await tools["delete_file"](path="README.md")
    assert (await tools["stage_file"](path="README.md/x.md", content="x")).startswith("Staged")


async def test_ordinary_files_still_stage_with_the_lookups_wired() -> None:
    stage = ChangeStage()
    tools = by_name(
        fix_tools(
            stage, StagingPolicy(), exists_at_base=_exists, is_dir_at_base=directory_lookup(_files)
        )
    )
    assert (await tools["stage_file"](path="src/pkg/c.py", content="c")).startswith("Staged")
    assert (await tools["stage_file"](path="src/pkg/a.py", content="a")).startswith("Staged")
    assert (await tools["delete_file"](path="guide/intro.md")).startswith("Staged deletion")


async def test_directory_lookup_lists_every_ancestor_once() -> None:
    calls = 0

    async def files() -> list[str]:
        nonlocal calls
        calls += 1
        return ["a/b/c.txt", "top.txt"]

    is_dir = directory_lookup(files)
    assert [await is_dir(p) for p in ("a", "a/b", "a/b/c.txt", "top.txt", "x")] == [
        True,
        True,
        False,
        False,
        False,
    ]
    assert calls == 1


# ---------------------------------------------------------------- the commit backstop


@pytest.fixture
def emu() -> GitHubEmulator:
    em = GitHubEmulator()
    em.seed_files({".github/workflows/ci.yml": "on: push\n", "src/a.py": "a\n", "README": "r\n"})
    return em


async def test_commit_files_refuses_a_file_where_the_base_has_a_directory(
    emu: GitHubEmulator,
) -> None:
    gh: GitHub = emulator_client(emu)
    parent = emu.ref_sha("heads/main")
    assert parent is not None
    for files in (
        {".github/workflows": "gone"},
        {".github": "gone"},
        {"src": None},
        {"README/x": "file turned into a directory"},
    ):
        with pytest.raises(ValueError, match=r"is a directory|is a file"):
            await gh.commit_files(parent_sha=parent, message="m", files=files)
    # the README may become a directory when the same change deletes the file
    sha = await gh.commit_files(
        parent_sha=parent, message="m", files={"README": None, "README/x": "x\n"}
    )
    assert sha != parent
