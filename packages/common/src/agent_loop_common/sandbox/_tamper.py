"""Flags for a change that weakens the tests instead of passing them.

A change can make a red suite green by deleting tests, skipping them, focusing on a
few (`it.only`) or loosening the test configuration. None of that is forbidden (a
person may ask for it), but none of it may pass unnoticed: the verifier and the pull
request body show these flags. Pure: it compares the staged files with their base
contents.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["TamperFlag", "TamperKind", "flag_test_tampering", "is_test_file"]

TamperKind = Literal["deleted_test", "removed_tests", "skip_added", "test_config", "evidence_hook"]
"""`deleted_test`: a test file deleted. `removed_tests`: fewer test functions in a test
file. `skip_added`: more skip/xfail/focus markers. `test_config`: the test runner's
configuration edited. `evidence_hook`: code that can change how results are reported
(an `atexit` hook, `os._exit`, pytest internals, the JUnit report's path, a file Python
runs at start-up)."""

_TEST_FILE = re.compile(
    r"(^|/)(tests?|__tests__|spec)/"
    r"|(^|/)test_[^/]*\.py$|_test\.(py|go)$|\.(test|spec)\.[cm]?[jt]sx?$|(^|/)conftest\.py$"
)
_SKIP_MARKERS = (
    ("@pytest.mark.skip", re.compile(r"@pytest\.mark\.skip(if)?\b")),
    ("@pytest.mark.xfail", re.compile(r"@pytest\.mark\.xfail\b")),
    ("pytest.skip(", re.compile(r"\bpytest\.skip\(")),
    ("pytest.xfail(", re.compile(r"\bpytest\.xfail\(")),
    ("@unittest.skip", re.compile(r"@unittest\.skip\w*\b")),
    ("skipTest(", re.compile(r"\.skipTest\(")),
    (".skip(", re.compile(r"(?<!pytest)(?<!\.mark)\.skip\(")),
    (".only(", re.compile(r"\b(it|describe|test|context)\.only\(")),
    ("xit(/xdescribe(", re.compile(r"\bx(it|describe|test)\(")),
    ("t.Skip(", re.compile(r"\bt\.Skip(Now|f)?\(")),
    ("#[ignore]", re.compile(r"#\[ignore\b")),
)
_TEST_DEF = re.compile(
    r"^\s*(async\s+)?def\s+test\w*\s*\(|^\s*func\s+Test\w*\(|\b(it|test)\(\s*['\"`]|#\[test\]",
    re.MULTILINE,
)
_CONFIG_NAMES = frozenset(
    {
        "pytest.ini",
        "conftest.py",
        "setup.cfg",
        "tox.ini",
        "noxfile.py",
        ".mocharc.js",
        ".mocharc.json",
        ".mocharc.yml",
        ".mocharc.yaml",
        "karma.conf.js",
        "phpunit.xml",
        "phpunit.xml.dist",
    }
)
_CONFIG_PREFIXES = ("jest.config.", "vitest.config.", "vite.config.", "playwright.config.")

# What code under test can use to forge its own evidence: it runs in the test runner's
# process, so it can rewrite the report at exit and leave with a chosen status, or reach
# into the runner. Flagged when a change adds uses (in any file for the first three, in
# code that is not a test file for pytest's own names, which tests use legitimately).
_HOOKS_ANYWHERE = (
    ("`atexit`", re.compile(r"\batexit\b")),
    ("`os._exit`", re.compile(r"\b_exit\s*\(|\bos\._exit\b")),
    ("the JUnit report path", re.compile(r"SANDBOX_JUNIT|junit|/sandbox/out", re.IGNORECASE)),
)
_HOOKS_OUTSIDE_TESTS = (
    (
        "pytest internals",
        re.compile(
            r"\b_pytest\b|\bdef pytest_\w+|\bpytest\.(?:main|exit|hookimpl)\b"
            r"|sys\.modules\[\s*['\"]pytest|^\s*(?:import|from) pytest\b",
            re.MULTILINE,
        ),
    ),
)
_STARTUP_NAMES = ("sitecustomize.py", "usercustomize.py")
_CODE_SUFFIXES = (".py", ".pyi", ".pth", ".cfg", ".toml", ".ini", ".js", ".mjs", ".cjs", ".ts")


class TamperFlag(BaseModel):
    """One way a change touches the tests that a reviewer should look at."""

    model_config = ConfigDict(frozen=True)

    kind: TamperKind
    """What kind of change it is."""
    path: str
    """The file."""
    detail: str
    """What changed, for people."""


def is_test_file(path: str) -> bool:
    """Whether `path` looks like a test file (by folder or name, for common languages)."""
    return bool(_TEST_FILE.search(path))


def _count(pattern: re.Pattern[str], text: str | None) -> int:
    return len(pattern.findall(text)) if text else 0


def _section(text: str | None, header: str) -> str:
    """The lines of TOML/INI tables whose header starts with `header`."""
    if not text:
        return ""
    keep: list[str] = []
    inside = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            inside = stripped.startswith(header)
        if inside:
            keep.append(line.rstrip())
    return "\n".join(keep)


def _json_key(text: str | None, key: str) -> str:
    if not text:
        return ""
    match = re.search(rf'"{re.escape(key)}"\s*:\s*(\{{[^{{}}]*\}}|"[^"]*")', text)
    return match.group(1) if match else ""


def _config_flags(path: str, new: str | None, old: str | None) -> list[TamperFlag]:
    name = posixpath.basename(path)
    if name in _CONFIG_NAMES or name.startswith(_CONFIG_PREFIXES):
        if name == "setup.cfg" and _section(new, "[tool:pytest") == _section(old, "[tool:pytest"):
            return []
        if name == "tox.ini" and _section(new, "[pytest") == _section(old, "[pytest"):
            return []
        verb = "deleted" if new is None else "added" if old is None else "edited"
        return [TamperFlag(kind="test_config", path=path, detail=f"test configuration {verb}")]
    if name == "pyproject.toml":
        before, after = _section(old, "[tool.pytest"), _section(new, "[tool.pytest")
        if before != after:
            return [TamperFlag(kind="test_config", path=path, detail="[tool.pytest] edited")]
    if name == "package.json":
        changed = [
            key for key in ("jest", "mocha", "vitest") if _json_key(new, key) != _json_key(old, key)
        ]
        if _json_key(_json_key(new, "scripts") or None, "test") != _json_key(
            _json_key(old, "scripts") or None, "test"
        ):
            changed.append("scripts.test")
        if changed:
            return [
                TamperFlag(kind="test_config", path=path, detail=f"{', '.join(changed)} edited")
            ]
    return []


def _hook_flags(path: str, new: str | None, old: str | None) -> list[TamperFlag]:
    """Flags for added code that can change how test results are reported."""
    if new is None:
        return []
    name = posixpath.basename(path)
    if (name in _STARTUP_NAMES or name.endswith(".pth")) and new != old:
        return [
            TamperFlag(kind="evidence_hook", path=path, detail="a file Python runs at start-up")
        ]
    if not name.endswith(_CODE_SUFFIXES):
        return []
    checks = _HOOKS_ANYWHERE if is_test_file(path) else _HOOKS_ANYWHERE + _HOOKS_OUTSIDE_TESTS
    flags: list[TamperFlag] = []
    for label, pattern in checks:
        added = _count(pattern, new) - _count(pattern, old)
        if added > 0:
            flags.append(
                TamperFlag(
                    kind="evidence_hook",
                    path=path,
                    detail=f"{added} more use(s) of {label}, which can change how test "
                    "results are reported",
                )
            )
    return flags


def flag_test_tampering(
    staged: Mapping[str, str | None], base: Mapping[str, str | None]
) -> tuple[TamperFlag, ...]:
    """Flags for deleted, skipped or removed tests, edited test configuration, and code
    that can change how results are reported (`evidence_hook`).

    Args:
        staged: The change: path -> new content, `None` for a deleted file.
        base: The same paths' content at the base commit (`None` or absent: new file).
    """
    flags: list[TamperFlag] = []
    for path in sorted(staged):
        new, old = staged[path], base.get(path)
        flags += _config_flags(path, new, old)
        flags += _hook_flags(path, new, old)
        if not is_test_file(path):
            continue
        if new is None:
            if old is not None:
                flags.append(TamperFlag(kind="deleted_test", path=path, detail="test file deleted"))
            continue
        for label, pattern in _SKIP_MARKERS:
            added = _count(pattern, new) - _count(pattern, old)
            if added > 0:
                flags.append(
                    TamperFlag(kind="skip_added", path=path, detail=f"{added} more `{label}`")
                )
        removed = _count(_TEST_DEF, old) - _count(_TEST_DEF, new)
        if old is not None and removed > 0:
            flags.append(
                TamperFlag(
                    kind="removed_tests", path=path, detail=f"{removed} test definition(s) removed"
                )
            )
    return tuple(flags)
