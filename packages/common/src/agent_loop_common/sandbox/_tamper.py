"""Flags for a change that weakens the tests instead of passing them.

A change can make a red suite green by deleting tests, skipping them, focusing on a
few (`it.only`) or loosening the test configuration. None of that is forbidden (a
person may ask for it), but none of it may pass unnoticed: the verifier and the pull
request body show these flags. Pure: it compares the staged files with their base
contents.

The configuration each parsed runner reads is known by name, whichever way it changes
(added, edited, deleted): pytest's `pytest.toml`, `.pytest.toml`, `pytest.ini`,
`.pytest.ini` (pytest 9 reads these first), `pyproject.toml`'s `[tool.pytest...]`,
`tox.ini`'s `[pytest]` (and `[testenv...]`, which `tox` runs), `setup.cfg`'s
`[tool:pytest]`, any `conftest.py`; jest, vitest, mocha, ava, karma and playwright
configuration files and `package.json`'s `jest`/`mocha`/`vitest`/`ava` keys and test
scripts; `go.mod`, `go.work`, a build constraint (`//go:build`) added to a Go test file
(it drops the file from `go test`) and `TestMain` (it decides the exit status); `Cargo.toml`'s
test-shaping tables (`[[test]]`, `[lib]`, `[profile.test]`, `[workspace]`, `[features]`)
and `.cargo/config.toml` (a `runner` or an `alias` replaces what `cargo test` runs).

One kind is more than a flag: `test_machinery`, code outside the tests that reaches into
the test runner itself (`_machinery.scan_test_machinery`: `gc` walks, pytest's plugin
manager, hook names built at run time, ...). It makes the verdict `tampered`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "PYTEST_CONFIG_FILES",
    "TamperFlag",
    "TamperKind",
    "flag_test_tampering",
    "is_test_file",
]

TamperKind = Literal[
    "deleted_test", "removed_tests", "skip_added", "test_config", "evidence_hook", "test_machinery"
]
"""`deleted_test`: a test file deleted. `removed_tests`: fewer test functions in a test
file. `skip_added`: more skip/xfail/focus markers (or a Go build constraint on a test
file). `test_config`: the test runner's configuration added, edited or deleted.
`evidence_hook`: code that can change how results are reported (an `atexit` hook,
`os._exit`, pytest internals, the JUnit report's path, a file Python runs at start-up,
Go's `TestMain`). `test_machinery`: code outside the tests that reaches into the test
runner (a `gc` walk, pytest's plugin manager, a hook name built at run time, frames,
`sys.modules` or `builtins` surgery, a module shadowing pytest): the verdict is then
`tampered`, never `passed`."""

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
    ("pytest.importorskip(", re.compile(r"\bimportorskip\(")),
    ("raise SkipTest", re.compile(r"\braise\s+(?:\w+\.)*(?:SkipTest|Skipped)\b")),
    (".skip(", re.compile(r"(?<!pytest)(?<!\.mark)\.skip\(")),
    (".only(", re.compile(r"\b(it|describe|test|context)\.only\(")),
    ("xit(/xdescribe(", re.compile(r"\bx(it|describe|test)\(")),
    ("t.Skip(", re.compile(r"\bt\.Skip(Now|f)?\(")),
    ("#[ignore]", re.compile(r"#\[ignore\b")),
)
_GO_BUILD_CONSTRAINT = re.compile(r"^\s*//(?:go:build\s|\s*\+build\s)", re.MULTILINE)
"""A Go build constraint: on a `_test.go` file it can drop the file from `go test`."""
_TEST_DEF = re.compile(
    r"^\s*(async\s+)?def\s+test\w*\s*\(|^\s*func\s+Test\w*\(|\b(it|test)\(\s*['\"`]|#\[test\]",
    re.MULTILINE,
)
PYTEST_CONFIG_FILES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini")
"""pytest's own configuration files, in the order pytest 9 looks for them (before
`pyproject.toml`, `tox.ini` and `setup.cfg`): flagged when changed, and the files a
pytest command is detected from (`_detect`, `_pysetup`, the checks' root files)."""
_CONFIG_NAMES = frozenset(
    {
        *PYTEST_CONFIG_FILES,
        "conftest.py",
        "setup.cfg",
        "tox.ini",
        "noxfile.py",
        "karma.conf.js",
        "karma.conf.cjs",
        "karma.conf.ts",
        "phpunit.xml",
        "phpunit.xml.dist",
        "go.mod",
        "go.work",
        "Cargo.toml",
    }
)
_CONFIG_PREFIXES = (
    "jest.config.",
    "jest.preset.",
    "vitest.config.",
    "vitest.workspace.",
    "vite.config.",
    "playwright.config.",
    ".mocharc.",
    "ava.config.",
)
_CARGO_CONFIG = re.compile(r"(^|/)\.cargo/config(\.toml)?$")
"""Cargo's configuration: a `[target.<triple>] runner` or an `alias` replaces what
`cargo test` runs."""
_CARGO_TEST_TABLES = ("[[test]]", "[lib]", "[profile.test]", "[workspace]", "[features]")
_PACKAGE_JSON_KEYS = ("jest", "mocha", "vitest", "ava", "c8", "nyc")
_PACKAGE_JSON_SCRIPTS = ("test", "pretest", "posttest")
"""`npm test` runs `pretest`, `test` and `posttest`."""

# What code under test can use to forge its own evidence: it runs in the test runner's
# process, so it can rewrite the report at exit and leave with a chosen status, or reach
# into the runner. Flagged when a change adds uses (in any file for the first three, in
# code that is not a test file for pytest's own names, which tests use legitimately).
_HOOKS_ANYWHERE = (
    ("`atexit`", re.compile(r"\batexit\b")),
    ("`os._exit`", re.compile(r"\b_exit\s*\(|\bos\._exit\b")),
    ("the JUnit report path", re.compile(r"SANDBOX_JUNIT|junit|/sandbox/out", re.IGNORECASE)),
    (
        "Go's `TestMain` (it decides the test binary's exit status)",
        re.compile(r"\bfunc\s+TestMain\s*\("),
    ),
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
_CODE_SUFFIXES = (
    ".py",
    ".pyi",
    ".pth",
    ".cfg",
    ".toml",
    ".ini",
    ".js",
    ".mjs",
    ".cjs",
    ".ts",
    ".go",
    ".rs",
)


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


def _verb(new: str | None, old: str | None) -> str:
    return "deleted" if new is None else "added" if old is None else "edited"


def _config_flag(path: str, new: str | None, old: str | None, what: str) -> list[TamperFlag]:
    return [TamperFlag(kind="test_config", path=path, detail=f"{what} {_verb(new, old)}")]


def _package_json_changes(new: str | None, old: str | None) -> list[str]:
    changed = [key for key in _PACKAGE_JSON_KEYS if _json_key(new, key) != _json_key(old, key)]
    scripts_new, scripts_old = _json_key(new, "scripts") or None, _json_key(old, "scripts") or None
    changed += [
        f"scripts.{name}"
        for name in _PACKAGE_JSON_SCRIPTS
        if _json_key(scripts_new, name) != _json_key(scripts_old, name)
    ]
    return changed


def _config_flags(path: str, new: str | None, old: str | None) -> list[TamperFlag]:
    """A flag when the change adds, edits or deletes what a test runner reads."""
    if new == old:
        return []
    name = posixpath.basename(path)
    sections = {
        "setup.cfg": ("[tool:pytest",),
        "tox.ini": ("[pytest", "[testenv", "[tox"),
        "Cargo.toml": _CARGO_TEST_TABLES,
    }.get(name)
    if sections is not None:
        changed = [h for h in sections if _section(new, h) != _section(old, h)]
        if not changed:
            return []
        tables = ", ".join(f"{h}{']' if not h.endswith(']') else ''}" for h in changed)
        return _config_flag(path, new, old, f"test configuration ({tables})")
    if name in _CONFIG_NAMES or name.startswith(_CONFIG_PREFIXES):
        return _config_flag(path, new, old, "test configuration")
    if _CARGO_CONFIG.search(path):
        return _config_flag(path, new, old, "cargo configuration (runner, aliases)")
    if name == "pyproject.toml":
        if _section(old, "[tool.pytest") != _section(new, "[tool.pytest"):
            return [TamperFlag(kind="test_config", path=path, detail="[tool.pytest] edited")]
        return []
    if name == "package.json":
        changed = _package_json_changes(new, old)
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
        if path.endswith("_test.go") and _GO_BUILD_CONSTRAINT.findall(new) != (
            _GO_BUILD_CONSTRAINT.findall(old) if old else []
        ):
            flags.append(
                TamperFlag(
                    kind="skip_added",
                    path=path,
                    detail="a build constraint (`//go:build`) changed: it can drop the file "
                    "from `go test`",
                )
            )
        removed = _count(_TEST_DEF, old) - _count(_TEST_DEF, new)
        if old is not None and removed > 0:
            flags.append(
                TamperFlag(
                    kind="removed_tests", path=path, detail=f"{removed} test definition(s) removed"
                )
            )
    return tuple(flags)
