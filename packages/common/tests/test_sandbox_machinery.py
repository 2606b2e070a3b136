"""The scan of a change for code that reaches into the test runner (issue 30).

Shapes that reach pytest's machinery from product code, written the ways an attacker
would write them (the review's exact script first), must be found; ordinary library
code must not be (the false-positive table). Only what the change adds counts.
"""

from __future__ import annotations

import pytest

from agent_loop_common.sandbox import scan_test_machinery
from agent_loop_common.sandbox._machinery import test_machinery_shapes as shapes_of

# The review's script: pytest's Config through gc, a hook name built at run time.
THE_ATTACK = """
import gc

_HOOK = "py" + "test_runtest_log" + "report"


def _passed(report):
    if report.failed:
        report.outcome = "passed"


class _Steer:
    pass


setattr(_Steer, _HOOK, staticmethod(_passed))

for _found in gc.get_objects():
    if type(_found).__name__ == "Config" and hasattr(_found, "pluginmanager"):
        _found.pluginmanager.register(_Steer())
        break
"""


def _details(source: str, *, path: str = "src/calc.py", base: str | None = None) -> list[str]:
    flags = scan_test_machinery({path: source}, {path: base})
    assert all(f.kind == "test_machinery" for f in flags)
    return [f.detail for f in flags]


def test_the_reviews_forged_pass_is_found_in_every_part() -> None:
    found = "\n".join(_details(THE_ATTACK))
    assert "walks every live object (gc.get_objects)" in found
    assert "builds the pytest hook name 'pytest_runtest_logreport' at run time (line 4)" in found
    assert "reaches pytest's plugin machinery (.pluginmanager)" in found
    assert "sets a test report's outcome to 'passed'" in found


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # gc walks, however the function is reached
        ("import gc as g\nobjs = g.get_objects()\n", "walks every live object (gc.get_objects)"),
        ("from gc import get_referrers\nget_referrers(x)\n", "gc.get_referrers"),
        ("x = __import__('gc').get_objects()\n", "walks every live object (gc.get_objects)"),
        ("import importlib\nimportlib.import_module('gc').get_referents(x)\n", "gc.get_referents"),
        ("import gc\ngetattr(gc, 'get_objects')()\n", "gc.get_objects"),
        ("m = __import__('g' + 'c')\nm.get_objects()\n", "gc.get_objects"),
        ("import gc\ngetattr(gc, 'get_' + 'objects')()\n", "'get_objects'"),
        # pytest's internals
        ("from _pytest.config import Config\n", "imports pytest's internals (_pytest.config)"),
        ("import pluggy\n", "imports pytest's internals (pluggy)"),
        ("m = __import__('_pytest.main')\n", "imports pytest's internals (_pytest.main)"),
        ("import sys\nc = sys.modules['pytest']\n", "reads the test runner's module 'pytest'"),
        ("import sys\nm = sys.modules.get('__main__')\n", "reads the test runner's module"),
        ("def f(config):\n    return config.hook\n", "reaches pytest's hooks (config.hook)"),
        ("def f(item):\n    return item.ihook\n", "plugin machinery (.ihook)"),
        ("def f(s):\n    s.testsfailed = 0\n", "plugin machinery (.testsfailed)"),
        ("def f(h):\n    h._hookimpls.insert(0, x)\n", "plugin machinery (._hookimpls)"),
        ("def f(terminalreporter):\n    terminalreporter.stats.clear()\n", "(.stats)"),
        ("def f(rep):\n    rep.outcome = 'passed'\n", "sets a test report's outcome to 'passed'"),
        ("def f(rep):\n    setattr(rep, 'outcome', 'passed')\n", "sets a test report's outcome"),
        # hook names built at run time, every way a string can be assembled
        ("n = 'pytest_' + 'runtest_logreport'\n", "'pytest_runtest_logreport' at run time"),
        ("n = ''.join(['py', 'test_', 'sessionfinish'])\n", "'pytest_sessionfinish'"),
        ("n = '%s%s' % ('pyt', 'est_collectreport')\n", "'pytest_collectreport'"),
        ("n = '{}{}'.format('pytest', '_terminal_summary')\n", "'pytest_terminal_summary'"),
        ("a = 'runtest'\nn = f'pytest_{a}_logreport'\n", "'pytest_runtest_logreport'"),
        ("n = 'tropergol_tsetnur_tsetyp'[::-1]\n", "'pytest_runtest_logreport'"),
        ("n = ''.join(reversed('tropergol_tsetnur_tsetyp'))\n", "'pytest_runtest_logreport'"),
        ("n = ''.join(chr(c) for c in [112, 121, 116, 101, 115, 116, 95, 120])\n", "'pytest_x'"),
        (
            "import base64\nn = base64.b64decode('cHl0ZXN0X3J1bnRlc3RfbG9ncmVwb3J0').decode()\n",
            "'pytest_runtest_logreport'",
        ),
        (
            "import codecs\nn = codecs.decode('clgrfg_ehagrfg_ybtercbeg', 'rot13')\n",
            "'pytest_runtest_logreport'",
        ),
        ("n = bytes.fromhex('7079746573745f78').decode()\n", "'pytest_x'"),
        ("n = 'PYTEST_RUNTEST_LOGREPORT'.lower() + ''\n", "'pytest_runtest_logreport'"),
        ("def f(name):\n    return 'pytest_' + name\n", "containing 'pytest_' at run time"),
        ("def f(x):\n    return 'plugin' + 'manager'\n", "'pluginmanager'"),
        ("def f(hook, name):\n    return getattr(hook, name)\n", "computed at run time on hook"),
        (
            "import pytest\ndef f(n):\n    return getattr(pytest, n)\n",
            "computed at run time on pytest",
        ),
        (
            "H = 'pytest_runtest_logreport'\ndef f(h):\n    return getattr(h, H)\n",
            "reaches the test runner's 'pytest_runtest_logreport' by name (getattr)",
        ),
        # sys.modules surgery and import hooks
        ("import sys\nsys.modules['pytest'] = object()\n", "sets an entry of sys.modules"),
        ("import sys\ndel sys.modules['_pytest.runner']\n", "deletes an entry of sys.modules"),
        ("import sys\nsys.modules.pop('x')\n", "changes sys.modules (sys.modules.pop)"),
        (
            "import sys\nfor m in list(sys.modules.values()):\n    pass\n",
            "walks every loaded module",
        ),
        ("import sys\nfor name in sys.modules:\n    pass\n", "walks every loaded module"),
        (
            "import sys\nsys.meta_path.insert(0, Finder())\n",
            "installs an import hook (sys.meta_path)",
        ),
        # frames and tracing
        ("import sys\nf = sys._getframe(2)\n", "reads the call stack's frames (sys._getframe)"),
        ("import inspect\nfor fr in inspect.stack():\n    pass\n", "(inspect.stack)"),
        ("from inspect import currentframe as cf\ncf()\n", "(inspect.currentframe)"),
        ("def f(frame):\n    return frame.f_back.f_locals\n", "walks frames (.f_back)"),
        ("def f(tb):\n    return tb.tb_frame\n", "walks frames (.tb_frame)"),
        ("import sys\nsys.settrace(t)\n", "installs a hook that sees every call (sys.settrace)"),
        ("import threading\nthreading.setprofile(p)\n", "(threading.setprofile)"),
        # builtins, code origins, output
        (
            "import builtins\nbuiltins.print = lambda *a: None\n",
            "patches builtins (builtins.print)",
        ),
        ("import builtins as b\nsetattr(b, 'open', o)\n", "patches builtins (setattr(builtins"),
        ("__builtins__['open'] = o\n", "patches builtins (__builtins__[...])"),
        ("c = compile(src, 'tests/test_calc.py', 'exec')\n", "compiles code under a chosen file"),
        ("c = compile(src, path, 'exec')\n", "compiles code under a chosen file name"),
        ("c = code.replace(co_filename='conftest.py')\n", "rewrites a code object's file name"),
        ("import os\nos.dup2(fd, 1)\n", "rewires the process's standard output (os.dup2)"),
    ],
)
def test_a_shape_that_reaches_the_runner_is_found(source: str, expected: str) -> None:
    found = _details(source)
    assert any(expected in d for d in found), found


# Ordinary library code: none of it may be flagged.
ORDINARY = [
    "import gc\ngc.collect()\ngc.disable()\n",
    "import sys\nnumpy = sys.modules.get('numpy')\n",
    "import sys\nthis = sys.modules[__name__]\nsetattr(this, 'x', 1)\n",
    "import sys\nsys.modules[__name__] = _LazyModule(__name__)\n",
    "import sys\nsys.path.insert(0, here)\n",
    "def get(self, key):\n    return getattr(self.config, key)\n",
    "def fire(self, event):\n    return getattr(self.hooks, event)()\n",
    "import inspect\nsig = inspect.signature(f)\nsrc = inspect.getsource(f)\n",
    "import inspect\nok = inspect.isclass(x) and inspect.iscoroutinefunction(y)\n",
    "import traceback\ntext = traceback.format_exc()\n",
    "import warnings\nwarnings.warn('old', DeprecationWarning, stacklevel=2)\n",
    "import re\nPATTERN = re.compile(r'^test_')\n",
    "code = compile(expr, '<string>', 'eval')\n",
    "name = f'{module}.{attr}'\nlabel = '%s:%s' % (a, b)\n",
    "items = ', '.join(names)\npath = '{}/{}'.format(root, leaf)\n",
    "fixture = 'test_' + name\n",
    "prefix = 'py' + version\n",
    "import os\ncurrent = os.environ.get('PYTEST_CURRENT_TEST')\n",
    "import logging\nlog = logging.getLogger(__name__)\n",
    "import functools\n@functools.wraps(f)\ndef g(*a):\n    return f(*a)\n",
    "import builtins\nopen_ = builtins.open\n",
    "import importlib\nmod = importlib.import_module(name)\n",
    "import base64\ndata = base64.b64decode(token)\n",
    "import codecs\ntext = codecs.decode(raw, 'utf-8')\n",
    "class Hooks:\n    def __init__(self):\n        self.hook = None\n",
    "def outcome(result):\n    result.status = 'passed'\n    return result\n",
    "import os\nos.dup2(fd, target)\nos.close(fd)\n",
    "import threading\nthreading.Thread(target=work).start()\n",
    "stats = reporter.stats\n",
    "exec(code, namespace)\n",
]


@pytest.mark.parametrize("source", ORDINARY)
def test_ordinary_code_is_not_flagged(source: str) -> None:
    assert _details(source) == []


def test_only_what_the_change_adds_counts() -> None:
    base = "import sys\n\ndef caller():\n    return sys._getframe(1)\n"
    assert _details(base + "\nX = 1\n", base=base) == []
    added = base + "\n\ndef grandcaller():\n    return sys._getframe(2)\n"
    assert _details(added, base=base) == [
        "reads the call stack's frames (sys._getframe) (lines 4, 8)"
    ]


def test_other_languages_are_not_scanned() -> None:
    assert _details(THE_ATTACK, path="web/app.js") == []


@pytest.mark.parametrize(
    "path", ["tests/test_calc.py", "conftest.py", "src/calc_test.py", "tests/helpers.py"]
)
def test_test_files_are_scanned_for_what_a_test_never_needs(path: str) -> None:
    """Re-audit of issue 30: a test module runs in the guard's process and can silence
    it, so test files are scanned too, for all but what tests ordinarily do."""
    found = "\n".join(_details(THE_ATTACK, path=path))
    assert "walks every live object (gc.get_objects)" in found
    assert "builds the pytest hook name 'pytest_runtest_logreport' at run time" in found
    assert "sets a test report's outcome to 'passed'" in found
    assert ".pluginmanager" not in found  # conftest hooks read it


SILENCE_AND_FORGE = """
import sys
for name, module in list(sys.modules.items()):
    if name.startswith("_agent_loop_guard"):
        module._found = lambda *args: None
import _pytest.reports as reports
made = reports.TestReport.from_item_and_call.__func__
def born_passed(cls, item, call):
    report = made(cls, item, call)
    report.__dict__["outcome"] = "passed"
    return report
reports.TestReport.from_item_and_call = classmethod(born_passed)
"""


def test_a_test_module_that_silences_the_guard_is_found() -> None:
    assert _details(SILENCE_AND_FORGE, path="tests/test_calc.py") == [
        "replaces pytest's internals (_pytest.reports.TestReport.from_item_and_call) (line 12)",
        "sets a test report's outcome (through its __dict__) (line 10)",
        "walks every loaded module (sys.modules) (line 3)",
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from _pytest.reports import TestReport\nTestReport.outcome = property(f)\n",
            "replaces pytest's internals (_pytest.reports.TestReport.outcome)",
        ),
        (
            "import pytest\ndef test_x(monkeypatch):\n"
            "    monkeypatch.setattr(pytest.TestReport, 'from_item_and_call', f)\n",
            "replaces pytest's internals (pytest.TestReport.from_item_and_call)",
        ),
        (
            "def test_x(monkeypatch):\n"
            "    monkeypatch.setattr('_pytest.runner.call_and_report', f)\n",
            "replaces pytest's internals (_pytest.runner.call_and_report)",
        ),
        (
            "from _pytest import reports as r\ntype.__setattr__(r.TestReport, 'x', 1)\n",
            "replaces pytest's internals (_pytest.reports.TestReport.x)",
        ),
        ("def f(rep):\n    vars(rep)['outcome'] = 'passed'\n", "outcome (through its __dict__)"),
    ],
)
def test_pytests_own_objects_replaced_are_found_in_any_file(source: str, expected: str) -> None:
    for path in ("src/calc.py", "tests/test_calc.py"):
        assert any(expected in d for d in _details(source, path=path)), path


ORDINARY_IN_TESTS = [
    "from _pytest.pytester import Pytester\n\ndef test_x(pytester: Pytester):\n    pass\n",
    "import builtins\n\ndef test_x(monkeypatch):\n"
    "    monkeypatch.setattr(builtins, 'input', lambda: 'y')\n",
    "import builtins\nbuiltins.input = lambda prompt='': 'y'\n",
    "import sys\n\ndef test_x():\n    del sys.modules['calc']\n    sys.modules['calc'] = fake\n",
    "import sys\nsys.modules.pop('calc', None)\n",
    "def pytest_terminal_summary(terminalreporter):\n"
    "    terminalreporter.write_line(str(len(terminalreporter.stats.get('failed', []))))\n",
    "def pytest_configure(config):\n"
    "    if config.pluginmanager.hasplugin('xdist'):\n        pass\n",
    "def test_x(request):\n    request.node.ihook.pytest_runtest_logreport\n",
    "import pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_collection_modifyitems(items):\n"
    "    items.sort(key=lambda i: i.name)\n",
]


@pytest.mark.parametrize("source", ORDINARY_IN_TESTS)
def test_what_tests_ordinarily_do_is_not_flagged_in_test_files(source: str) -> None:
    assert _details(source, path="tests/conftest.py") == []


@pytest.mark.parametrize(
    ("path", "shadowed"),
    [
        ("pytest.py", "pytest"),
        ("src/_pytest/runner.py", "_pytest"),
        ("pluggy/__init__.py", "pluggy"),
        ("py.py", "py"),
        ("sitecustomize.py", "sitecustomize"),
        ("src/usercustomize.py", "usercustomize"),
        ("_agent_loop_guard_0123456789abcdef.py", "the sandbox's pytest guard"),
        # at the root, `python -m pytest` imports them before pytest and the guard
        ("argparse.py", "the standard library's argparse"),
        ("inspect.py", "the standard library's inspect"),
        ("json/__init__.py", "the standard library's json"),
        ("iniconfig.py", "iniconfig"),
        ("packaging/version.py", "packaging"),
    ],
)
def test_a_module_that_shadows_the_runner_is_found(path: str, shadowed: str) -> None:
    assert _details("x = 1\n", path=path) == [
        f"a module that shadows {shadowed}, which the test run imports"
    ]


@pytest.mark.parametrize(
    "path", ["src/json.py", "tests/argparse.py", "test/test_json.py", "calc.py", "setup.py"]
)
def test_a_module_named_like_the_standard_librarys_below_the_root_is_not_flagged(
    path: str,
) -> None:
    assert _details("x = 1\n", path=path) == []


def test_a_file_that_does_not_parse_has_no_shapes() -> None:
    assert shapes_of("def (:\n") == {}


PYFUNC_CALL = """
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    return True
"""
FORCED = """
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.force_result(passed_copy(outcome.get_result()))
"""


def test_a_conftest_that_decides_outcomes_through_pytests_hooks_is_found() -> None:
    """Re-audit of issue 30: a changed conftest is a declared plugin to pytest, so the
    guard trusts its hooks; `pytest_pyfunc_call` returning True never calls the test,
    and a makereport wrapper can force another report. Added, each is a shape."""
    assert _details(PYFUNC_CALL, path="tests/conftest.py") == [
        "defines the pytest hook pytest_pyfunc_call, which decides whether a test runs or "
        "what its report says (line 6)"
    ]
    found = _details(FORCED, path="conftest.py")
    assert "forces a hook's result (force_result) (line 8)" in found
    assert any("defines the pytest hook pytest_runtest_makereport" in d for d in found)
    # The same hooks already there at the base: nothing the change adds.
    assert _details(FORCED, path="conftest.py", base=FORCED) == []


def test_code_run_from_a_string_is_read_too() -> None:
    source = 'exec("def pytest_pyfunc_call(pyfuncitem):\\n    return True\\n")\n'
    assert _details(source, path="tests/conftest.py") == [
        "defines the pytest hook pytest_pyfunc_call, which decides whether a test runs or "
        "what its report says (in code run from a string) (line 1)"
    ]
    assert _details("exec('import gc\\ngc.get_objects()')\n") == [
        "walks every live object (gc.get_objects), which reaches the test runner's own "
        "objects (in code run from a string) (line 1)"
    ]
