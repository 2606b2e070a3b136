"""The pytest guard: a plugin the sandbox loads first in a repository's pytest run.

This file is never imported by the agent. For each guarded run the sandbox copies it,
under a fresh random module name, into a read-only folder on the command's
`PYTHONPATH`, writes its settings next to it (`<name>.json`: the files the change
touched), and adds `-p <name>` to the pytest command, so pytest imports it before any
entry-point plugin, `conftest.py` or test module (`docs/sandbox.md`). It uses only the
standard library and duck typing, so it runs under any pytest from 7 on and any
Python from 3.8 on.

The code under test runs in this process, so nothing here is tamper-proof; the guard
makes steering the evidence from inside loud instead of quiet. It records:

- a **plugin registered** (or a hook added) by code that is neither pytest itself, a
  declared plugin (an entry point, `-p`, `pytest_plugins`), nor a test file
  (`test_*.py`, `*_test.py`, `conftest.py`) the change left untouched: the caller is
  found by walking the stack out of pytest's and the standard library's frames;
- a **hook implementation** present at the end that no such registration added, or
  whose function was swapped;
- a **report's outcome changed** after pytest made it (`BaseReport.outcome` is watched
  by a descriptor; a change behind it is found by comparing at the end), the session's
  **counters** (`testsfailed`, `testscollected`, `exitstatus`) changed from such code,
  the **terminal reporter's tally** missing a failed report, and pytest's own
  functions or classes **replaced** by code from such a module.

It writes a JSON report next to the JUnit report (`$SANDBOX_JUNIT`'s folder): once when
it is registered (`"state": "loaded"`), again at the end (`"finished"`, with the
findings, the tests it saw fail when pytest made their reports, and the session's exit
status). The sandbox reads it back; a pytest run without it, or without its end, is
itself a finding.
"""

# This module runs inside the sandbox under any pytest and Python 3.8+: duck typing,
# the standard library only, no annotations evaluated at run time.
from __future__ import annotations

import importlib.util
import inspect
import json
import os
import sys
import sysconfig
from collections.abc import Generator
from typing import Any, cast

_NAME = __name__
_HERE = os.path.dirname(os.path.abspath(__file__))
_MAX_FINDINGS = 50
_MAX_FAILING = 200
_MISSING = object()
_PASSING_CATEGORIES = frozenset({"passed", "skipped", "xfailed", "xpassed", "deselected", ""})
_WATCHED_COUNTERS = ("testsfailed", "testscollected", "exitstatus")
_MACHINERY_PREFIXES = ("_pytest", "pytest", "pluggy")


class _State:
    """Everything the guard holds for one pytest process."""

    def __init__(self) -> None:
        self.started = False
        self.config: Any = None
        self.session: Any = None
        self.root = os.getcwd()
        self.report_path = ""
        self.changed: frozenset[str] = frozenset()
        self.findings: list[dict[str, str]] = []
        self.seen_keys: set[tuple[str, str, str]] = set()
        self.errors: list[str] = []
        # plugin id -> (plugin, trusted, {hook name: function})
        self.plugins: dict[int, tuple[Any, bool, dict[str, Any]]] = {}
        self.trusted_files: set[str] = set()
        self.trusted_dirs: set[str] = set()
        # report id -> [report, outcome at birth, last outcome seen, trusted change]
        self.failed_reports: dict[int, list[Any]] = {}
        self.logged: set[int] = set()
        self.snapshot: dict[tuple[str, str, str], Any] = {}
        self.relay: Any = None
        self.config_hook: Any = None
        self.callers: dict[str, Any] = {}
        self.kinds: dict[str, str] = {}
        self.reals: dict[str, str] = {}
        self.pytest_dirs: tuple[str, ...] = ()
        self.stdlib_dirs: tuple[str, ...] = ()
        self.entries: set[str] = set()
        self.exitstatus: Any = None
        self.finished = False


_S = _State()


# ---------------------------------------------------------------- where code comes from


def _caller() -> Any:
    """The frame that called the function calling this one."""
    frame = inspect.currentframe()
    return frame.f_back.f_back if frame is not None and frame.f_back is not None else None


def _members(obj: Any) -> dict[str, Any]:
    """`vars(obj)` as a plain dict (empty for an object without one)."""
    try:
        return dict(cast("dict[str, Any]", vars(obj)))
    except TypeError:
        return {}


def _real(path: str) -> str:
    """`os.path.realpath`, remembered (it costs system calls, and stacks repeat)."""
    known = _S.reals.get(path)
    if known is not None:
        return known
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        real = path
    _S.reals[path] = real
    return real


def _rel(path: str) -> str:
    real = _real(path)
    root = _real(_S.root)
    if real == root or real.startswith(root + os.sep):
        return os.path.relpath(real, root).replace(os.sep, "/")
    return real


def _under(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == f or path.startswith(f + os.sep) for f in folders)


def _is_test_file(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return (
        name == "conftest.py"
        or (name.startswith("test_") and name.endswith(".py"))
        or (name.endswith("_test.py"))
    )


def _kind(filename: str) -> str:
    """`guard`, `pytest` (pytest, pluggy, the entry script), `stdlib`, `trusted` (a
    declared plugin, an untouched test file) or `other`."""
    cached = _S.kinds.get(filename)
    if cached is not None:
        return cached
    kind = "other"
    if filename.startswith("<frozen "):
        kind = "stdlib"
    elif not filename.startswith("<"):
        real = _real(filename)
        rel = _rel(filename)
        if real == _real(os.path.join(_HERE, _NAME + ".py")):
            kind = "guard"
        elif rel in _S.changed:
            kind = "other"  # the change's own files are never trusted, tests included
        elif _under(real, _S.pytest_dirs) or real in _S.entries:
            kind = "pytest"
        elif real in _S.trusted_files or _under(real, tuple(_S.trusted_dirs)) or _is_test_file(rel):
            kind = "trusted"
        elif _under(real, _S.stdlib_dirs) and not _in_site_packages(real):
            kind = "stdlib"
    _S.kinds[filename] = kind
    return kind


def _in_site_packages(path: str) -> bool:
    parts = path.split(os.sep)
    return "site-packages" in parts or "dist-packages" in parts


def _origin(frame: Any) -> tuple[bool, str]:
    """(trusted, where): the code responsible for what is happening in `frame`'s caller.

    Walk out of the stack: the guard's, pytest's and the standard library's own frames
    are passed over; the first other frame decides (a declared plugin or an untouched
    test file is trusted, anything else is not). Reaching pytest's entry point (the
    module-level code of `pytest/__main__.py`, the `pytest` script, or a pytest-xdist
    worker's `xdist/remote.py`) first means it is pytest's own work; a stack that never
    reaches it (a thread, a callback) has nobody to vouch for it.
    """
    while frame is not None:
        code = frame.f_code
        kind = _kind(code.co_filename)
        if kind == "trusted":
            return True, f"{_rel(code.co_filename)}:{frame.f_lineno}"
        if kind == "other":
            return False, f"{_rel(code.co_filename)}:{frame.f_lineno}"
        if code.co_name == "<module>" and _real(code.co_filename) in _S.entries:
            return True, ""
        frame = frame.f_back
    return False, "(no caller outside pytest: a thread or a callback)"


def _code_file(obj: Any) -> str:
    """The source file of a function-like object, or `""` when it has none."""
    for _ in range(4):
        code = getattr(obj, "__code__", None)
        if code is not None:
            return str(code.co_filename)
        inner = getattr(obj, "__func__", None) or getattr(obj, "func", None)
        if inner is None:
            inner = getattr(obj, "fget", None)
        if inner is None:
            return ""
        obj = inner
    return ""


def _trusted_code(obj: Any) -> tuple[bool, str]:
    filename = _code_file(obj)
    if not filename:
        if isinstance(obj, type) and getattr(obj, "__module__", "").startswith(_MACHINERY_PREFIXES):
            return True, ""
        return False, "(code with no source file)"
    kind = _kind(filename)
    return kind in ("pytest", "trusted", "stdlib", "guard"), _rel(filename)


# ---------------------------------------------------------------- findings and the report


def _found(kind: str, detail: str, where: str = "", subject: str = "") -> None:
    key = (kind, where.rsplit(":", 1)[0], subject)
    if key in _S.seen_keys or len(_S.findings) >= _MAX_FINDINGS:
        return
    _S.seen_keys.add(key)
    _S.findings.append({"kind": kind, "detail": detail, "where": where, "subject": subject})


def _error(where: str, exc: BaseException) -> None:
    if len(_S.errors) < 10:
        _S.errors.append(f"{where}: {type(exc).__name__}: {exc}"[:300])


def _write(state: str) -> None:
    if not _S.report_path:
        return
    failing = [_nodeid(entry[0]) for entry in _S.failed_reports.values() if _still_failed(entry)]
    data = {
        "state": state,
        "guard": _NAME,
        "pytest": getattr(sys.modules.get("pytest"), "__version__", ""),
        "findings": _S.findings,
        "failed": len(failing),
        "failing": failing[:_MAX_FAILING],
        "exitstatus": _int_or_none(_S.exitstatus),
        "errors": _S.errors,
    }
    tmp = _S.report_path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, _S.report_path)
    except OSError as exc:
        _error("write", exc)


def _worker_id() -> str:
    """The pytest-xdist worker this process is (`gw0`), or `""` for the main process."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return "".join(ch for ch in worker if ch.isalnum() or ch in "-_")[:20]


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _nodeid(report: Any) -> str:
    try:
        return str(getattr(report, "nodeid", "?"))[:300]
    except Exception:
        return "?"


# ---------------------------------------------------------------- start-up


def _xdist_dir() -> str:
    """pytest-xdist's installed folder (never one inside the repository), or `""`."""
    try:
        spec = importlib.util.find_spec("xdist")
    except (ImportError, ValueError):
        return ""
    origin = getattr(spec, "origin", None)
    if not origin:
        return ""
    folder = os.path.dirname(_real(origin))
    root = _real(_S.root)
    return "" if folder == root or folder.startswith(root + os.sep) else folder


def _start(manager: Any) -> None:
    _S.started = True
    junit = os.environ.get("SANDBOX_JUNIT", "")
    if junit:
        # pytest-xdist's workers import the code under test and make the reports: each
        # writes its own report next to the main process's.
        worker = _worker_id()
        suffix = f".worker-{worker}" if worker else ""
        _S.report_path = os.path.join(os.path.dirname(junit), f"{_NAME}{suffix}.json")
    try:
        with open(os.path.join(_HERE, _NAME + ".json"), encoding="utf-8") as handle:
            settings = json.load(handle)
        _S.changed = frozenset(str(p) for p in settings.get("changed", []))
    except (OSError, ValueError) as exc:
        _error("settings", exc)
    dirs: list[str] = []
    for name in ("_pytest", "pytest", "pluggy", "py"):
        module = sys.modules.get(name)
        location = getattr(module, "__file__", None)
        if location:
            folder = os.path.dirname(_real(location))
            dirs.append(folder if name in ("_pytest", "pluggy") else _real(location))
            if name == "pytest":
                dirs.append(folder)  # pytest/__init__.py, __main__.py
    _S.pytest_dirs = tuple(dict.fromkeys(dirs))
    paths = sysconfig.get_paths()
    _S.stdlib_dirs = tuple(
        dict.fromkeys(_real(paths[k]) for k in ("stdlib", "platstdlib") if paths.get(k))
    )
    script = _real(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if script and _rel(script) not in _S.changed:
        _S.entries.add(script)
    main = getattr(sys.modules.get("pytest.__main__"), "__file__", None)
    pytest_init = getattr(sys.modules.get("pytest"), "__file__", None)
    if main or pytest_init:
        _S.entries.add(
            _real(main or os.path.join(os.path.dirname(pytest_init or ""), "__main__.py"))
        )
    xdist = _xdist_dir() if _worker_id() else ""
    if xdist:
        # A pytest-xdist worker is started by xdist itself: its code drives the run (its
        # module `xdist/remote.py`, sent by execnet, is the worker's entry point).
        _S.pytest_dirs = (*_S.pytest_dirs, xdist)
        _S.entries.add(os.path.join(xdist, "remote.py"))
    _watch_reports()
    _watch_session()
    _S.relay = getattr(manager, "hook", None)
    _S.callers = _members(_S.relay) if _S.relay is not None else {}
    _take_snapshot()
    _write("loaded")


def _watch_reports() -> None:
    reports = sys.modules.get("_pytest.reports")
    base = getattr(reports, "BaseReport", None)
    if base is None:
        _error("reports", LookupError("_pytest.reports.BaseReport not found"))
        return

    def get(self: Any) -> Any:
        try:
            return self.__dict__["outcome"]
        except KeyError:
            raise AttributeError("outcome") from None

    def set_(self: Any, value: Any) -> None:
        old = self.__dict__.get("outcome", _MISSING)
        self.__dict__["outcome"] = value
        if old is not _MISSING and old != value:
            try:
                _outcome_changed(self, old, value, _caller())
            except Exception as exc:
                _error("outcome", exc)

    def delete(self: Any) -> None:
        self.__dict__.pop("outcome", None)

    base.outcome = property(get, set_, delete, "watched by the pytest guard")


def _watch_session() -> None:
    main = sys.modules.get("_pytest.main")
    session = getattr(main, "Session", None)
    if session is None:
        _error("session", LookupError("_pytest.main.Session not found"))
        return
    for name in _WATCHED_COUNTERS:
        setattr(session, name, _counter(name))


def _counter(name: str) -> property:
    def get(self: Any) -> Any:
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(name) from None

    def set_(self: Any, value: Any) -> None:
        old = self.__dict__.get(name, _MISSING)
        self.__dict__[name] = value
        if name == "exitstatus":
            _S.exitstatus = value
        if old is _MISSING or old == value:
            return
        try:
            trusted, where = _origin(_caller())
            if not trusted:
                _found(
                    "counter_changed",
                    f"changed the session's {name} from {old!r} to {value!r} ({where})",
                    where,
                    name,
                )
        except Exception as exc:
            _error("counter", exc)

    return property(get, set_, None, "watched by the pytest guard")


def _outcome_changed(report: Any, old: Any, new: Any, frame: Any) -> None:
    entry = _S.failed_reports.get(id(report))
    trusted, where = _origin(frame)
    if entry is not None:
        entry[2] = new
        if trusted:
            entry[3] = new
    if trusted:
        return
    what = "a test report" if hasattr(report, "when") else "a collection report"
    nodeid = _nodeid(report)
    _found(
        "report_changed",
        f"changed {what} from {old} to {new} ({where}): {nodeid}",
        where,
        nodeid,
    )


def _machinery_modules() -> list[tuple[str, Any]]:
    return [
        (name, module)
        for name, module in list(cast("dict[str, Any]", sys.modules).items())
        if module is not None
        and (name in _MACHINERY_PREFIXES or name.startswith(("_pytest.", "pluggy.")))
    ]


def _codeish(value: Any) -> bool:
    return callable(value) or isinstance(value, (property, staticmethod, classmethod))


def _take_snapshot() -> None:
    """pytest's, pluggy's own functions and classes (and their methods) as they are once
    every early plugin is in place: replaced later by code nobody vouches for, a finding."""
    for name, module in _machinery_modules():
        _S.snapshot[(name, "", "")] = module
        for attr, value in _members(module).items():
            if attr.startswith("__") or not _codeish(value):
                continue
            _S.snapshot[(name, attr, "")] = value
            if isinstance(value, type) and getattr(value, "__module__", "") == name:
                for member, item in _members(value).items():
                    if member.startswith("__") and member not in ("__init__", "__call__"):
                        continue
                    if _codeish(item):
                        _S.snapshot[(name, attr, member)] = item


# ---------------------------------------------------------------- the hooks pytest calls


def _impl(**opts: Any) -> Any:
    """pluggy's hook implementation options for pytest, without importing it."""

    def mark(function: Any) -> Any:
        full = {
            "wrapper": False,
            "hookwrapper": False,
            "optionalhook": False,
            "tryfirst": False,
            "trylast": False,
            "specname": None,
        }
        full.update(opts)
        function.pytest_impl = full
        return function

    return mark


def pytest_plugin_registered(plugin: Any, manager: Any) -> None:
    """Every registration (earlier ones replayed): who registered it, and its hooks."""
    try:
        if not _S.started:
            _start(manager)
        trusted, where = _origin(_caller())
        hooks: dict[str, Any] = {}
        for caller in manager.get_hookcallers(plugin) or ():
            for impl in caller.get_hookimpls():
                if impl.plugin is plugin:
                    hooks[caller.name] = impl.function
        _S.plugins[id(plugin)] = (plugin, trusted, hooks)
        if trusted and isinstance(plugin, type(sys)):
            location = getattr(plugin, "__file__", None)
            if location:
                real = _real(location)
                _S.trusted_files.add(real)
                if not real.startswith(_real(_S.root) + os.sep):
                    _S.trusted_dirs.add(os.path.dirname(real))
                _S.kinds.clear()
        if not trusted:
            name = manager.get_name(plugin) or type(plugin).__name__
            subject = type(plugin).__name__ if not isinstance(plugin, type(sys)) else name
            _found(
                "plugin_registered",
                f"registered a pytest plugin from {where} ({subject}; hooks: "
                f"{', '.join(sorted(hooks)) or 'none'})",
                where,
                subject,
            )
    except Exception as exc:
        _error("plugin_registered", exc)


def pytest_configure(config: Any) -> None:
    """Remember the configuration (a run the guard did not start from is recorded)."""
    _S.config = config
    # pytest 8 wraps the relay for its config (`PathAwareHookProxy`): remember which.
    _S.config_hook = getattr(config, "hook", None)
    if not _S.started:
        _start(config.pluginmanager)


pytest_configure = _impl(tryfirst=True)(pytest_configure)


def pytest_sessionstart(session: Any) -> None:
    """Remember the session."""
    _S.session = session


pytest_sessionstart = _impl(tryfirst=True)(pytest_sessionstart)


def _born(report: Any) -> None:
    if report is None:
        return
    outcome = report.__dict__.get("outcome")
    if outcome == "failed" and not hasattr(report, "wasxfail"):
        _S.failed_reports[id(report)] = [report, outcome, outcome, None]


def pytest_runtest_makereport(item: Any, call: Any) -> Generator[None, Any, None]:
    """Each test report as pytest made it."""
    outcome: Any = yield
    try:
        _born(outcome.get_result())
    except Exception as exc:
        _error("makereport", exc)


pytest_runtest_makereport = _impl(hookwrapper=True, tryfirst=True)(pytest_runtest_makereport)


def pytest_make_collect_report(collector: Any) -> Generator[None, Any, None]:
    """Each collection report as pytest made it."""
    outcome: Any = yield
    try:
        _born(outcome.get_result())
    except Exception as exc:
        _error("make_collect_report", exc)


pytest_make_collect_report = _impl(hookwrapper=True, tryfirst=True)(pytest_make_collect_report)


def pytest_report_from_serializable(config: Any, data: Any) -> Generator[None, Any, None]:
    """Reports rebuilt from a worker's (pytest-xdist)."""
    outcome: Any = yield
    try:
        _born(outcome.get_result())
    except Exception as exc:
        _error("report_from_serializable", exc)


pytest_report_from_serializable = _impl(hookwrapper=True, tryfirst=True)(
    pytest_report_from_serializable
)


def pytest_runtest_logreport(report: Any) -> None:
    """Which failed reports were logged."""
    _S.logged.add(id(report))


pytest_runtest_logreport = _impl(tryfirst=True)(pytest_runtest_logreport)


def pytest_collectreport(report: Any) -> None:
    """Which failed collection reports were logged."""
    _S.logged.add(id(report))


pytest_collectreport = _impl(tryfirst=True)(pytest_collectreport)


def pytest_sessionfinish(session: Any, exitstatus: Any) -> Generator[None, Any, None]:
    """After everything else ran at the end of the session (the terminal summary
    included): check, and write the report."""
    _S.session = session
    yield
    _finish("sessionfinish")


pytest_sessionfinish = _impl(hookwrapper=True, tryfirst=True)(pytest_sessionfinish)


def pytest_unconfigure(config: Any) -> None:
    """The last look: check again and write the final report."""
    _finish("unconfigure")


pytest_unconfigure = _impl(trylast=True)(pytest_unconfigure)


# ---------------------------------------------------------------- the checks at the end


def _finish(when: str) -> None:
    try:
        _check_reports()
        _check_counters()
        _check_hooks()
        _check_stats()
        _check_snapshot()
    except Exception as exc:
        _error(when, exc)
    _S.finished = True
    _write("finished")


def _still_failed(entry: list[Any]) -> bool:
    """Whether a report born failed counts as failed: it still is, or only code nobody
    vouches for changed it."""
    report, _born_as, _seen, trusted_change = entry
    if trusted_change is not None and report.__dict__.get("outcome") == trusted_change:
        return trusted_change == "failed"
    return True


def _check_reports() -> None:
    for report, _born_as, seen, _trusted in list(_S.failed_reports.values()):
        now = report.__dict__.get("outcome")
        if now != seen:
            nodeid = _nodeid(report)
            _found(
                "report_changed",
                f"changed a test report from {seen} to {now} without going through its "
                f"attribute (report.__dict__): {nodeid}",
                "",
                nodeid,
            )


def _check_counters() -> None:
    session = _S.session
    if session is None:
        return
    logged_failed = sum(
        1 for key, entry in _S.failed_reports.items() if key in _S.logged and _still_failed(entry)
    )
    counted = session.__dict__.get("testsfailed")
    if isinstance(counted, int) and counted < logged_failed:
        _found(
            "counter_changed",
            f"the session counts {counted} failed, but {logged_failed} failed report(s) "
            "were logged",
            "",
            "testsfailed",
        )


def _check_hooks() -> None:
    manager = getattr(_S.config, "pluginmanager", None)
    if manager is None:
        return
    relay = getattr(manager, "hook", None)
    if relay is not _S.relay or getattr(_S.config, "hook", None) is not _S.config_hook:
        _found("hook_replaced", "replaced pytest's hook relay (pluginmanager.hook)", "", "hook")
        return
    for name, caller in _members(relay).items():
        before = _S.callers.get(name)
        if before is not None and before is not caller:
            # What a replacement runs is its class's `__call__` (a function, or a wrapper).
            call = vars(type(cast("object", caller))).get("__call__")
            _, where = _trusted_code(call)
            _found("hook_replaced", f"replaced pytest's hook caller {name} ({where})", where, name)
        get = getattr(caller, "get_hookimpls", None)
        if get is None:
            continue
        for impl in get():
            known = _S.plugins.get(id(impl.plugin))
            if known is None:
                trusted, where = _trusted_code(impl.function)
                if not trusted:
                    _found(
                        "hook_added",
                        f"added a {name} hook outside any registration ({where})",
                        where,
                        name,
                    )
                continue
            function = known[2].get(name)
            if function is not None and function is not impl.function:
                trusted, where = _trusted_code(impl.function)
                if not trusted:
                    _found(
                        "hook_replaced",
                        f"swapped the function of a registered {name} hook ({where})",
                        where,
                        name,
                    )


def _check_stats() -> None:
    manager = getattr(_S.config, "pluginmanager", None)
    reporter = manager.get_plugin("terminalreporter") if manager is not None else None
    stats: Any = getattr(reporter, "stats", None)
    if not isinstance(stats, dict):
        return
    counted: set[int] = set()
    for category, reports in list(cast("dict[str, Any]", stats).items()):
        if category in _PASSING_CATEGORIES or not isinstance(reports, list):
            continue
        counted.update(id(r) for r in cast("list[object]", reports))
    for key, entry in list(_S.failed_reports.items()):
        if key in _S.logged and _still_failed(entry) and key not in counted:
            nodeid = _nodeid(entry[0])
            _found(
                "stats_changed",
                f"the terminal summary does not count a failed report as failing: {nodeid}",
                "",
                nodeid,
            )


def _check_snapshot() -> None:
    for (module_name, attr, member), before in list(_S.snapshot.items()):
        if not attr:
            if sys.modules.get(module_name) is not before:
                _found(
                    "internals_replaced",
                    f"replaced the module {module_name} in sys.modules",
                    "",
                    module_name,
                )
            continue
        owner = (
            _S.snapshot[(module_name, "", "")]
            if not member
            else _S.snapshot.get((module_name, attr, ""))
        )
        now = _members(owner).get(member or attr, _MISSING) if owner is not None else _MISSING
        if now is before:
            continue
        subject = f"{module_name}.{attr}" + (f".{member}" if member else "")
        if now is _MISSING:
            _found("internals_replaced", f"deleted pytest's {subject}", "", subject)
            continue
        trusted, where = _trusted_code(now)
        if not trusted:
            _found("internals_replaced", f"replaced pytest's {subject} ({where})", where, subject)
