"""A real project's history on the emulator: cachetools, reduced (see `data/cachetools`).

`agent-loop eval` must work on a real project's real fixes, not only on histories written
for its tests. `seed_cachetools_history` plays the vendored history of
<https://github.com/tkem/cachetools> (MIT) on an emulator named `tkem/cachetools`: its
tree at the base commit, then each step in order, an upstream step as the maintainer's
push to `master`, a fix as a pull request of its commit's author (its commit message as
title and body, `Fixes #N` naming the emulated issue) merged by the maintainer. Each
issue a fix names is filed just before its first fix, by its author on GitHub. All of it
is one `seed_history` (an upstream step is a `HistoryPush`).

```python
emulator = GitHubEmulator("tkem", "cachetools", default_branch="master")
seeded = seed_cachetools_history(emulator)
seeded.issues[387], seeded.pulls["57d2e48"]     # emulated numbers, by real number / commit
```
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any, cast

from agent_loop_testing._emulator_history import (
    HistoryIssue,
    HistoryPull,
    HistoryPush,
    HistoryStep,
)

if TYPE_CHECKING:
    from agent_loop_testing._emulator import GitHubEmulator

__all__ = ["CACHETOOLS_TEST_ARGS", "VendoredHistory", "seed_cachetools_history"]

_DATA = "data/cachetools"
_LOGINS = {"Thomas Kemmer": "tkem", "Mike Decuir": "mdecuir"}
"""Git author names -> GitHub logins of the people in the vendored history."""
_PERMISSIONS = {"mdecuir": "read"}
"""Everyone but the maintainer (the emulator's owner) reads only: not a maintainer."""

CACHETOOLS_TEST_ARGS = ("--rootdir=.", "-o", "pythonpath=src", "tests")
"""What pytest needs besides `-m pytest` to run the vendored tests (the project is not
installed: `src` goes on the path, relative to the tree's root)."""


@dataclass
class VendoredHistory:
    """What seeding made, by the real project's names."""

    issues: dict[int, int] = field(default_factory=dict[int, int])
    """Real issue number -> emulated issue number."""
    pulls: dict[str, int] = field(default_factory=dict[str, int])
    """Short commit (7 characters) of each fix -> its emulated pull request number."""
    merges: dict[str, str] = field(default_factory=dict[str, str])
    """Short commit of each fix -> its emulated merge commit."""
    manifest: dict[str, Any] = field(default_factory=dict[str, Any])
    """`history.json` as read."""


def _read() -> tuple[dict[str, Any], dict[str, bytes]]:
    folder = resources.files("agent_loop_testing").joinpath(_DATA)
    manifest = cast("dict[str, Any]", json.loads(folder.joinpath("history.json").read_text()))
    files: dict[str, bytes] = {}
    archive = folder.joinpath("history.tar.xz").read_bytes()
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:xz") as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member)
            if handle is not None:
                files[member.name] = handle.read()
    return manifest, files


def _subject(message: str) -> tuple[str, str]:
    """`("Use LFUCache ...", rest)` from `Fix #260: Use LFUCache ...\\n\\nrest`: the issue
    reference leaves the title (the emulated issue has another number)."""
    first, _, rest = message.partition("\n")
    title = re.sub(r"^(?:Fix(?:es)?|Close[sd]?)\s+#\d+:\s*", "", first).strip()
    return title, rest.strip()


def seed_cachetools_history(emulator: GitHubEmulator) -> VendoredHistory:
    """Play the vendored cachetools history on `emulator` (see the module docstring).

    The emulator should be `GitHubEmulator("tkem", "cachetools",
    default_branch="master")`: the maintainer is its owner.
    """
    manifest, files = _read()
    for login, permission in _PERMISSIONS.items():
        emulator.add_user(login, permission=permission)
    base = {n.removeprefix("base/"): d for n, d in files.items() if n.startswith("base/")}
    emulator.seed_files(base, message=f"cachetools at {manifest['base'][:7]}")
    issues = cast("dict[str, dict[str, str]]", manifest["issues"])
    steps: list[HistoryStep] = []
    filed: set[int] = set()
    fixes: dict[str, int] = {}
    for index, step in enumerate(cast("list[dict[str, Any]]", manifest["steps"])):
        prefix = f"steps/{index:02d}/"
        change: dict[str, str | bytes | None] = {
            path: files[prefix + path] for path in cast("list[str]", step["changed"])
        }
        change.update(dict.fromkeys(cast("list[str]", step["deleted"])))
        if step["kind"] == "upstream":
            commits = cast("list[str]", step["commits"])
            message = f"{len(commits)} upstream commit(s), {commits[0][:7]}..{commits[-1][:7]}"
            steps.append(HistoryPush(f"upstream-{index}", message, change))
            continue
        real = int(step["issue"])
        if real not in filed:
            issue = issues[str(real)]
            steps.append(
                HistoryIssue(f"issue-{real}", issue["title"], issue["body"], author=issue["author"])
            )
            filed.add(real)
        short = str(step["commit"])[:7]
        title, body = _subject(str(step["message"]))
        author = _LOGINS.get(str(step["author"]), emulator.owner)
        steps.append(
            HistoryPull(short, title, change, body=body, closes=(f"issue-{real}",), author=author)
        )
        fixes[short] = real
    made = emulator.seed_history(steps)
    return VendoredHistory(
        issues={real: made.numbers[f"issue-{real}"] for real in filed},
        pulls={short: made.numbers[short] for short in fixes},
        merges={short: made.merges[short] for short in fixes},
        manifest=manifest,
    )
