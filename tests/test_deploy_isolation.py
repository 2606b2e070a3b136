"""Changing only the builder leaves the reviewer's and distiller's deploys as they were.

On a copy of the real workspace: describe the reviewer and distiller deploys, change
the builder's code and its dependencies, describe them again. Image identity, bundled
files and their hashes, triggers and version must not move; the builder's must, and its
validation must report the export as stale.
"""

from __future__ import annotations

import hashlib
import pathlib
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from agent_loop.deploy import AGENTS, ROOT, Workspace, check_spec, inspect_agent, validate_agent
from agent_loop_common.deploy import agent_image

OTHERS = ("reviewer", "distiller")


def _copy_workspace(dest: pathlib.Path) -> Workspace:
    for name in ("pyproject.toml", "uv.lock"):
        shutil.copy(ROOT / name, dest / name)
    for member in ("common", *AGENTS):
        source = ROOT / "packages" / member
        target = dest / "packages" / member
        shutil.copytree(
            source / "src", target / "src", ignore=shutil.ignore_patterns("__pycache__")
        )
        for name in ("pyproject.toml", "requirements.lock.txt"):
            if (source / name).exists():
                shutil.copy(source / name, target / name)
    return Workspace(dest)


@pytest.mark.slow
def test_changing_only_the_builder_leaves_the_other_deploys_unchanged(
    tmp_path: pathlib.Path,
) -> None:
    ws = _copy_workspace(tmp_path)

    def describe(agent: str) -> dict[str, object]:
        spec = inspect_agent(agent, ws=ws, dry_run=False)
        assert check_spec(ws, spec) == []
        return spec.identity()

    with ThreadPoolExecutor(max_workers=2) as pool:
        before = dict(zip(OTHERS, pool.map(describe, OTHERS), strict=True))
    builder_image = agent_image("builder", ws.package_dir("builder")).uri

    env_py = ws.src_dir("builder") / "agent_loop_builder" / "env.py"
    env_py.write_text(env_py.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    lock = ws.lock_path("builder")
    lock.write_text(lock.read_text(encoding="utf-8") + "tomli-w==1.2.0\n", encoding="utf-8")

    with ThreadPoolExecutor(max_workers=3) as pool:
        builder = pool.submit(validate_agent, "builder", ws=ws)
        after = dict(zip(OTHERS, pool.map(describe, OTHERS), strict=True))

    assert after == before
    for agent in OTHERS:
        assert not any("builder" in path for path in before[agent]["bundle"])  # type: ignore[union-attr]

    validation = builder.result()
    assert validation.spec is not None
    [stale] = [f for f in validation.findings if "is stale" in f]
    assert "-tomli-w==1.2.0" in stale
    changed = validation.spec.images["builder"]["uri"]
    assert changed.rsplit("/", 1)[-1] != builder_image.rsplit("/", 1)[-1]
    rel = env_py.relative_to(ws.root).as_posix()
    assert validation.spec.bundle[rel] == hashlib.sha256(env_py.read_bytes()).hexdigest()
