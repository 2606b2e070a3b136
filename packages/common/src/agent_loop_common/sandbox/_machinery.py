"""Code outside the tests that reaches into the test runner: found by reading the change.

The repository's tests run in the same process as the code they test, so that code can
reach the runner and steer what it reports (issue 30: product code that finds pytest's
`Config` through `gc`, registers a plugin whose hook name is assembled at run time, and
turns failures into passes: exit status, summary and JUnit report then all agree). The
pytest guard (`_guard`) watches such a run from inside; this scan reads the change
before it runs, so a change that would also disable or fool the guard is still seen.

`scan_test_machinery` parses each staged Python file and counts the shapes that reach
the runner, against the same file at the base commit: a shape the change adds is a
`test_machinery` flag, and the verdict is `tampered`. Test files and `conftest.py` are
read too, since they run in the guard's process and can silence it, but may add what
tests ordinarily do (`_ORDINARY_IN_TESTS`: pytest's helpers imported, the plugin manager
read in a conftest hook, `sys.modules` entries and `builtins` mocked). The shapes:

- **`gc` object walks**: `gc.get_objects`, `get_referrers`, `get_referents`;
- **pytest's and pluggy's internals**: importing `_pytest` or `pluggy`, reading
  `pytest`/`_pytest`/`__main__` from `sys.modules`, the plugin manager
  (`.pluginmanager`, `config.hook`, `.ihook`, hook implementation lists), the session's
  counters (`testsfailed`, `testscollected`), the terminal reporter's `stats`, a
  report's `outcome` set to `"passed"`/`"failed"`/`"skipped"` or through its
  `__dict__`, pytest's or pluggy's own objects replaced (an attribute assigned, `setattr`,
  `monkeypatch.setattr`, `type.__setattr__`), a hook that decides outcomes defined
  (`pytest_pyfunc_call`, `pytest_runtest_makereport`, ...: `_OUTCOME_HOOKS`), a hook
  wrapper's `force_result`;
- **code run from a string** the scan can read (`exec("...")`): its shapes count;
- **names built at run time** that spell the machinery (`"py" + "test_runtest_log" +
  "report"`, `"".join(...)`, `%`/`format`/f-strings, `chr` codes, reversed, base64,
  rot13 or hex of literals), and `getattr`/`setattr`/`delattr` with a computed name on
  pytest, pluggy, a hook relay or a plugin manager;
- **`sys.modules` surgery** (setting, deleting, popping, walking every loaded module)
  and import hooks (`sys.meta_path`, `sys.path_hooks`);
- **frames**: `sys._getframe`, `inspect.currentframe`/`stack`/`getouterframes`/`trace`,
  `traceback.walk_stack`, `f_back`/`f_globals`/`f_locals`/`tb_frame`, and tracing
  hooks (`sys.settrace`, `sys.setprofile`, `threading.settrace`, audit hooks);
- **`builtins` patching** (`builtins.x = ...`, `setattr(builtins, ...)`,
  `__builtins__[...] = ...`) and code compiled under a file name that is not
  `<...>` or a rewritten `co_filename` (what a traceback shows as the code's origin);
- **rewiring the process's output**: `os.dup2(..., 1 or 2)`, `os.close(1 or 2)`;
- **a module that shadows the runner**: a staged `pytest.py`, `_pytest/`, `pluggy/`,
  `py.py`, `sitecustomize.py` or `usercustomize.py`, one named like the guard, or one at
  the repository's root named like a module of the standard library or of pytest's own
  dependencies (`python -m pytest` imports it from the root before pytest and the guard).

Ordinary code is not flagged: `gc.collect()`, `sys.modules.get("numpy")`,
`sys.modules[__name__]`, `getattr(self.config, key)`, `inspect.signature`,
`re.compile`, `compile(src, "<string>", "exec")`, f-strings and joins that spell no
part of the runner (the false-positive table in `test_sandbox_machinery.py`). Pure.
"""

from __future__ import annotations

import ast
import base64
import binascii
import codecs
import posixpath
import re
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from agent_loop_common.sandbox._tamper import TamperFlag, is_test_file

__all__ = ["scan_test_machinery", "test_machinery_shapes"]

_UNKNOWN = "\x00"
"""What an unknown part of a string built at run time folds to."""
_MAX_FOLD = 400
_FRAGMENTS = (
    "pytest_",
    "_pytest",
    "pluggy",
    "pluginmanager",
    "hookimpl",
    "_hookimpls",
    "testsfailed",
    "testscollected",
    "terminalreporter",
    "get_objects",
    "get_referrers",
    "get_referents",
    "_getframe",
    "f_back",
    "f_globals",
    "f_locals",
    "settrace",
    "setprofile",
)
"""Spelled by a name built at run time, these reach the runner (names of pytest hooks
all start with `pytest_`)."""
_GC_WALKS = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents"})
_FRAME_CALLS = frozenset(
    {
        "sys._getframe",
        "sys._current_frames",
        "inspect.currentframe",
        "inspect.stack",
        "inspect.getouterframes",
        "inspect.getinnerframes",
        "inspect.trace",
        "traceback.walk_stack",
    }
)
_TRACE_CALLS = frozenset(
    {
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "threading.settrace",
        "threading.setprofile",
        "threading.settrace_all_threads",
        "threading.setprofile_all_threads",
        "sys.monitoring.register_callback",
        "sys.monitoring.use_tool_id",
    }
)
_FRAME_ATTRS = frozenset(
    {
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "tb_frame",
        "gi_frame",
        "cr_frame",
        "ag_frame",
    }
)
_MACHINERY_ATTRS = frozenset(
    {
        "pluginmanager",
        "ihook",
        "_hookimpls",
        "_hookexec",
        "_inner_hookexec",
        "get_hookimpls",
        "get_hookcallers",
        "testsfailed",
        "testscollected",
    }
)
_MACHINERY_MODULES = ("_pytest", "pluggy")
_HOOKISH_OBJECTS = frozenset(
    {"hook", "ihook", "pluginmanager", "pytest", "_pytest", "pluggy", "terminalreporter"}
)
"""Objects a name computed at run time must not be looked up on (by their last name)."""
_RUNNER_MODULE_KEYS = frozenset({"pytest", "__main__", "conftest"})
_MODULE_MUTATORS = frozenset({"pop", "popitem", "update", "setdefault", "clear", "__setitem__"})
_MODULE_WALKS = frozenset({"values", "items", "keys", "copy"})
_PATH_HOOKS = frozenset({"sys.meta_path", "sys.path_hooks", "sys.path_importer_cache"})
_LIST_MUTATORS = frozenset({"insert", "append", "extend", "__setitem__", "remove", "clear", "pop"})
_OUTCOMES = frozenset({"passed", "failed", "skipped"})
_SHADOWED_FILES = frozenset(
    {"pytest.py", "_pytest.py", "pluggy.py", "py.py", "sitecustomize.py", "usercustomize.py"}
)
_SHADOWED_PACKAGES = frozenset({"pytest", "_pytest", "pluggy"})
_RUNNER_DEPENDENCIES = frozenset(
    {"iniconfig", "packaging", "pygments", "colorama", "exceptiongroup", "tomli"}
)
"""Third-party modules pytest imports as it starts, before any plugin."""
_STDLIB = frozenset(sys.stdlib_module_names) - {"__main__", "this", "antigravity"}
"""The standard library's top-level modules: `python -m pytest` puts the working
directory (the repository's root) before them on `sys.path`."""
_GUARD_NAME = re.compile(r"(^|/)_agent_loop_guard")
_STR_METHODS = frozenset(
    {"lower", "upper", "strip", "lstrip", "rstrip", "title", "casefold", "swapcase", "capitalize"}
)
_DECODERS = frozenset(
    {
        "base64.b64decode",
        "base64.standard_b64decode",
        "base64.urlsafe_b64decode",
        "base64.b32decode",
        "base64.b16decode",
        "base64.a85decode",
        "base64.b85decode",
        "binascii.unhexlify",
        "binascii.a2b_hex",
        "bytes.fromhex",
        "bytearray.fromhex",
        "codecs.decode",
    }
)


def _known(value: str | None) -> str:
    return _UNKNOWN if value is None else value


@dataclass
class _Shapes:
    """Shapes found in one file: description -> its lines, and how many times."""

    counts: Counter[str] = field(default_factory=Counter[str])
    lines: dict[str, list[int]] = field(default_factory=dict[str, list[int]])

    def add(self, description: str, node: ast.AST) -> None:
        self.counts[description] += 1
        self.lines.setdefault(description, []).append(getattr(node, "lineno", 0))


class _Scan(ast.NodeVisitor):
    """One pass over a module: aliases and string constants first, then the shapes."""

    def __init__(self, tree: ast.Module, depth: int = 0) -> None:
        self.depth = depth  # how deep in code run from strings (bounded)
        self.shapes = _Shapes()
        self.aliases: dict[str, str] = {}
        self.constants: dict[str, str | None] = {}
        self._folded: set[int] = set()
        self._collect(tree)

    # -- what names stand for -------------------------------------------------------

    def _collect(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".", 1)[0]
                        self.aliases.setdefault(top, top)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    self._constant(target.id, node.value)
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.value is not None
            ):
                self._constant(node.target.id, node.value)
        # A name bound to a module (`g = __import__("gc")`) is that module.
        for name, value in list(self.constants.items()):
            if value is not None and value.startswith("module:"):
                self.aliases[name] = value.removeprefix("module:")
                del self.constants[name]

    def _constant(self, name: str, value: ast.expr) -> None:
        module = self._imported(value)
        folded = f"module:{module}" if module else self._fold(value, depth=0)
        if name in self.constants and self.constants[name] != folded:
            self.constants[name] = None  # assigned twice: unknown
        else:
            self.constants[name] = folded if folded is not None and _UNKNOWN not in folded else None

    def _imported(self, node: ast.expr) -> str | None:
        """`__import__("gc")` / `importlib.import_module("gc")`: the module named."""
        if isinstance(node, ast.Call) and node.args:
            func = self._qualname(node.func, resolve=False)
            if func in ("__import__", "importlib.import_module", "importlib.__import__"):
                name = self._fold(node.args[0], depth=0)
                if name and _UNKNOWN not in name:
                    return name
        return None

    def _qualname(self, node: ast.expr, *, resolve: bool = True) -> str:
        """`gc.get_objects` for `gc.get_objects`, `g.get_objects` (g = gc),
        `getattr(gc, "get_objects")`, `__import__("gc").get_objects`; `""` otherwise."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id) if resolve else node.id
        if isinstance(node, ast.Attribute):
            head = self._qualname(node.value, resolve=resolve)
            return f"{head}.{node.attr}" if head else ""
        if isinstance(node, ast.Call):
            imported = self._imported(node)
            if imported:
                return imported
            if (
                isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) >= 2
            ):
                head = self._qualname(node.args[0], resolve=resolve)
                name = self._fold(node.args[1], depth=0)
                if head and name and _UNKNOWN not in name:
                    return f"{head}.{name}"
        return ""

    # -- strings built at run time -----------------------------------------------------

    def _fold(self, node: ast.AST, depth: int) -> str | None:
        """The string `node` builds, unknown parts as `_UNKNOWN`; `None` when it is not
        a string expression at all."""
        if depth > 20:
            return _UNKNOWN
        value = self._fold_inner(node, depth + 1)
        if value is not None and len(value) > _MAX_FOLD:
            return value[:_MAX_FOLD]
        return value

    def _fold_inner(self, node: ast.AST, depth: int) -> str | None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return node.value
            if isinstance(node.value, bytes):
                return node.value.decode("latin-1")
            return None
        if isinstance(node, ast.Name):
            if node.id in self.constants:
                return _known(self.constants[node.id])
            return None
        if isinstance(node, ast.JoinedStr):
            parts: list[str] = []
            for value in node.values:
                if isinstance(value, ast.FormattedValue):
                    parts.append(_known(self._fold(value.value, depth)))
                else:
                    parts.append(self._fold(value, depth) or "")
            return "".join(parts)
        if isinstance(node, ast.BinOp):
            left, right = self._fold(node.left, depth), self._fold(node.right, depth)
            if isinstance(node.op, ast.Add) and (left is not None or right is not None):
                return _known(left) + _known(right)
            if isinstance(node.op, ast.Mult):
                text, times = (left, node.right) if left is not None else (right, node.left)
                if text is None:
                    return None
                count = times.value if isinstance(times, ast.Constant) else None
                return text * min(count, 8) if isinstance(count, int) and count > 0 else _UNKNOWN
            if isinstance(node.op, ast.Mod) and left is not None:
                return self._percent(left, node.right, depth)
            return None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            text = self._fold(node.value, depth)
            if text is None:
                return None
            if _UNKNOWN in text:
                return _UNKNOWN
            bounds = [self._int(b) for b in (node.slice.lower, node.slice.upper, node.slice.step)]
            if any(b is False for b in bounds):
                return _UNKNOWN
            try:
                return text[slice(*bounds)]
            except ValueError:
                return _UNKNOWN
        if isinstance(node, ast.Call):
            return self._fold_call(node, depth)
        return None

    def _int(self, node: ast.expr | None) -> int | bool | None:
        if node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, int)
        ):
            return -node.operand.value
        return False

    def _percent(self, template: str, right: ast.expr, depth: int) -> str:
        args = right.elts if isinstance(right, ast.Tuple) else [right]
        values = [_known(self._fold(a, depth)) for a in args]
        out: list[str] = []
        index = 0
        for piece in re.split(r"(%[-#0 +]*\d*(?:\.\d+)?[sdrai%])", template):
            if piece.startswith("%") and len(piece) > 1:
                if piece == "%%":
                    out.append("%")
                else:
                    out.append(values[index] if index < len(values) else _UNKNOWN)
                    index += 1
            else:
                out.append(piece)
        return "".join(out)

    def _items(self, node: ast.expr, depth: int) -> list[str] | None:
        """The strings of a literal list, tuple, reversed(...), or a comprehension
        `chr(c) for c in [...]` / `c for c in "..."`."""
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return [_known(self._fold(e, depth)) for e in node.elts]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("reversed", "list", "tuple")
            and len(node.args) == 1
        ):
            items = self._items(node.args[0], depth)
            if items is None:
                text = self._fold(node.args[0], depth)
                items = list(text) if text is not None and _UNKNOWN not in text else None
            if items is not None and node.func.id == "reversed":
                return items[::-1]
            return items
        if isinstance(node, ast.GeneratorExp | ast.ListComp) and len(node.generators) == 1:
            gen = node.generators[0]
            if gen.ifs or not isinstance(gen.target, ast.Name):
                return None
            source: list[object] | None = None
            if isinstance(gen.iter, ast.List | ast.Tuple):
                source = [e.value if isinstance(e, ast.Constant) else None for e in gen.iter.elts]
            else:
                text = self._fold(gen.iter, depth)
                if text is not None and _UNKNOWN not in text:
                    source = list(text)
            if source is None:
                return None
            name, elt = gen.target.id, node.elt
            return [_apply_element(name, elt, item) for item in source]
        text = self._fold(node, depth)
        if text is not None and _UNKNOWN not in text:
            return list(text)
        return None

    def _fold_call(self, node: ast.Call, depth: int) -> str | None:
        func = node.func
        name = self._qualname(func)
        if name in ("chr",) and len(node.args) == 1:
            code = self._int(node.args[0])
            return chr(code) if isinstance(code, int) and 0 <= code < 0x110000 else _UNKNOWN
        if name == "str" and len(node.args) == 1:
            return self._fold(node.args[0], depth)
        if name in ("bytes", "bytearray") and len(node.args) == 1:
            items = node.args[0]
            if isinstance(items, ast.List | ast.Tuple):
                codes = [self._int(e) for e in items.elts]
                ints = [c for c in codes if isinstance(c, int) and not isinstance(c, bool)]
                if len(ints) == len(codes) and all(0 <= c < 256 for c in ints):
                    return bytes(ints).decode("latin-1")
                return _UNKNOWN
            return self._fold(items, depth)
        if name in _DECODERS and node.args:
            return self._decode(name, node, depth)
        if not isinstance(func, ast.Attribute):
            return None
        owner = self._fold(func.value, depth)
        method = func.attr
        if method == "join" and owner is not None and len(node.args) == 1:
            items = self._items(node.args[0], depth)
            return owner.join(items) if items is not None else _UNKNOWN
        if owner is None:
            return None
        if method == "format":
            values = [_known(self._fold(a, depth)) for a in node.args]
            pieces = re.split(r"(\{[^{}]*\})", owner)
            out: list[str] = []
            index = 0
            for piece in pieces:
                if piece.startswith("{") and piece.endswith("}"):
                    field_name = piece[1:-1].split(":", 1)[0].split("!", 1)[0]
                    if field_name.isdigit() and int(field_name) < len(values):
                        out.append(values[int(field_name)])
                    elif not field_name and index < len(values):
                        out.append(values[index])
                        index += 1
                    else:
                        out.append(_UNKNOWN)
                else:
                    out.append(piece)
            return "".join(out)
        if method == "replace" and len(node.args) >= 2:
            old, new = self._fold(node.args[0], depth), self._fold(node.args[1], depth)
            if old is None or new is None or _UNKNOWN in old + new + owner:
                return _UNKNOWN
            return owner.replace(old, new)
        if method in _STR_METHODS and not node.args:
            return owner if _UNKNOWN in owner else getattr(owner, method)()
        if method in ("decode", "encode"):
            return owner
        return _UNKNOWN

    def _decode(self, name: str, node: ast.Call, depth: int) -> str:
        text = self._fold(node.args[0], depth)
        if text is None or _UNKNOWN in text:
            return _UNKNOWN
        data = text.encode("latin-1", "replace")
        try:
            if name == "codecs.decode":
                codec = self._fold(node.args[1], depth) if len(node.args) > 1 else None
                codec = (codec or "").lower().replace("-", "_")
                if codec in ("rot13", "rot_13"):
                    return codecs.decode(text, "rot13")
                if codec in ("hex", "hex_codec"):
                    return binascii.unhexlify(data).decode("latin-1")
                if codec in ("base64", "base64_codec", "base_64"):
                    return base64.b64decode(data).decode("latin-1")
                return _UNKNOWN
            if name in ("bytes.fromhex", "bytearray.fromhex"):
                return bytes.fromhex(text).decode("latin-1")
            if name in ("binascii.unhexlify", "binascii.a2b_hex"):
                return binascii.unhexlify(data).decode("latin-1")
            decoder = getattr(base64, name.split(".", 1)[1])
            return bytes(decoder(data)).decode("latin-1")
        except (ValueError, TypeError, binascii.Error):
            return _UNKNOWN

    def _built_name(self, node: ast.expr) -> None:
        """Flag a string built at run time that spells part of the runner."""
        if isinstance(node, ast.Constant | ast.Name):
            return
        text = self._fold(node, depth=0)
        if not text:
            return
        spelled = next((f for f in _FRAGMENTS if f in text), None)
        if spelled is None:
            return
        self._mark_folded(node)
        if _UNKNOWN not in text and text.startswith("pytest_") and text.isidentifier():
            self.shapes.add(f"builds the pytest hook name {text!r} at run time", node)
        elif _UNKNOWN not in text:
            self.shapes.add(f"builds the name {text!r} at run time (part of the test runner)", node)
        else:
            self.shapes.add(f"builds a name containing {spelled!r} at run time", node)

    def _mark_folded(self, node: ast.AST) -> None:
        for child in ast.walk(node):
            self._folded.add(id(child))

    # -- the shapes ---------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".", 1)[0] in _MACHINERY_MODULES:
                self.shapes.add(f"imports pytest's internals ({alias.name})", node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.level == 0 and node.module.split(".", 1)[0] in _MACHINERY_MODULES:
            self.shapes.add(f"imports pytest's internals ({node.module})", node)

    def visit_Call(self, node: ast.Call) -> None:
        name = self._qualname(node.func)
        if name in _GC_WALKS:
            self.shapes.add(
                f"walks every live object ({name}), which reaches the test runner's own objects",
                node,
            )
        elif name in _FRAME_CALLS:
            self.shapes.add(f"reads the call stack's frames ({name})", node)
        elif name in _TRACE_CALLS:
            self.shapes.add(f"installs a hook that sees every call ({name})", node)
        imported = self._imported(node)
        if imported and imported.split(".", 1)[0] in _MACHINERY_MODULES:
            self.shapes.add(f"imports pytest's internals ({imported})", node)
        if name in ("getattr", "setattr", "delattr", "hasattr") and len(node.args) >= 2:
            self._attribute_call(name, node)
        if node.args and name.rsplit(".", 1)[-1] in _SETTERS:
            self._replacing_call(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr in _FORCERS:
            self.shapes.add(f"forces a hook's result ({node.func.attr})", node)
        if name in ("exec", "eval", "compile") and node.args:
            self._scan_code_string(node)
        if name == "compile" and len(node.args) >= 2:
            filename = self._fold(node.args[1], depth=0)
            if filename is None or not filename.startswith("<") or filename.startswith("<frozen"):
                self.shapes.add(
                    "compiles code under a chosen file name (what a traceback shows as its origin)",
                    node,
                )
        if name == "types.CodeType" or (
            isinstance(node.func, ast.Attribute)
            and node.func.attr == "replace"
            and any(k.arg == "co_filename" for k in node.keywords)
        ):
            self.shapes.add("rewrites a code object's file name", node)
        if name in ("os.dup2", "os.close") and node.args:
            fd = self._int(node.args[-1] if name == "os.dup2" else node.args[0])
            if fd in (1, 2):
                self.shapes.add(f"rewires the process's standard output ({name})", node)
        if isinstance(node.func, ast.Attribute):
            target = self._qualname(node.func.value)
            if target == "sys.modules" and node.func.attr in _MODULE_MUTATORS:
                self.shapes.add(f"changes sys.modules (sys.modules.{node.func.attr})", node)
            elif target == "sys.modules" and node.func.attr in _MODULE_WALKS:
                self.shapes.add("walks every loaded module (sys.modules)", node)
            elif target == "sys.modules" and node.func.attr == "get" and node.args:
                self._module_key(node.args[0], node)
            elif target in _PATH_HOOKS and node.func.attr in _LIST_MUTATORS:
                self.shapes.add(f"installs an import hook ({target})", node)
        for argument in (*node.args, *(k.value for k in node.keywords)):
            if (
                isinstance(argument, ast.Name | ast.Attribute)
                and self._qualname(argument) == "sys.modules"
            ) and name in ("list", "tuple", "dict", "iter", "sorted", "set", "vars"):
                self.shapes.add("walks every loaded module (sys.modules)", node)
        if id(node) not in self._folded:
            self._built_name(node)
        self.generic_visit(node)

    def _attribute_call(self, name: str, node: ast.Call) -> None:
        owner = self._qualname(node.args[0])
        last = (owner or ast.unparse(node.args[0])).rsplit(".", 1)[-1]
        attr = self._fold(node.args[1], depth=0)
        if owner in ("builtins", "__builtins__"):
            if name in ("setattr", "delattr"):
                self.shapes.add(f"patches builtins ({name}(builtins, ...))", node)
            return
        if attr is not None and _UNKNOWN not in attr:
            if attr in _MACHINERY_ATTRS or any(f in attr for f in _FRAGMENTS):
                self.shapes.add(f"reaches the test runner's {attr!r} by name ({name})", node)
                self._mark_folded(node.args[1])
            elif name == "setattr" and attr == "outcome":
                self.shapes.add("sets a test report's outcome (setattr)", node)
            return
        if last in _HOOKISH_OBJECTS or owner.split(".", 1)[0] in _MACHINERY_MODULES:
            self.shapes.add(
                f"looks up a name computed at run time on {owner or 'an object'} ({name})", node
            )

    def _scan_code_string(self, node: ast.Call) -> None:
        """Code run from a string the scan can read (`exec("def pytest_...")`): its
        shapes count as this file's, at the call's line."""
        text = self._fold(node.args[0], depth=0)
        if not text or _UNKNOWN in text or self.depth >= 3:
            return
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return
        inner = _Scan(tree, depth=self.depth + 1)
        inner.visit(tree)
        for description, count in inner.shapes.counts.items():
            for _ in range(count):
                self.shapes.add(f"{description} (in code run from a string)", node)

    def _replacing_call(self, node: ast.Call) -> None:
        """`setattr(T, ...)`, `monkeypatch.setattr(T, ...)`, `type.__setattr__(T, ...)` or
        `monkeypatch.setattr("_pytest.x.y", ...)` on pytest's own objects."""
        first = node.args[0]
        owner = self._qualname(first)
        if _is_machinery(owner):
            attr = self._fold(node.args[1], depth=0) if len(node.args) > 1 else None
            shown = f"{owner}.{attr}" if attr and _UNKNOWN not in attr else owner
            self.shapes.add(f"replaces pytest's internals ({shown})", node)
            return
        target = self._fold(first, depth=0)
        if target and _UNKNOWN not in target and _is_machinery(target.rsplit(".", 1)[0]):
            self.shapes.add(f"replaces pytest's internals ({target})", node)

    def _module_key(self, key: ast.expr, node: ast.AST) -> None:
        text = self._fold(key, depth=0)
        if text and _UNKNOWN not in text:
            top = text.split(".", 1)[0]
            if top in _RUNNER_MODULE_KEYS or top in _MACHINERY_MODULES:
                self.shapes.add(f"reads the test runner's module {text!r} from sys.modules", node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.slice, ast.Slice) and id(node) not in self._folded:
            self._built_name(node)
        target = self._qualname(node.value)
        if target == "sys.modules":
            key = node.slice
            is_self = isinstance(key, ast.Name) and key.id == "__name__"
            if isinstance(node.ctx, ast.Store | ast.Del) and not is_self:
                verb = "sets" if isinstance(node.ctx, ast.Store) else "deletes"
                self.shapes.add(f"{verb} an entry of sys.modules", node)
            elif isinstance(node.ctx, ast.Load):
                self._module_key(key, node)
        elif isinstance(node.ctx, ast.Store | ast.Del) and (
            target in ("__builtins__", "builtins.__dict__")
            or (
                isinstance(node.value, ast.Call)
                and self._qualname(node.value.func) == "vars"
                and node.value.args
                and self._qualname(node.value.args[0]) == "builtins"
            )
        ):
            self.shapes.add("patches builtins (__builtins__[...])", node)
        elif target in _PATH_HOOKS and isinstance(node.ctx, ast.Store):
            self.shapes.add(f"installs an import hook ({target})", node)
        elif (
            isinstance(node.ctx, ast.Store)
            and self._fold(node.slice, depth=0) == "outcome"
            and (
                (isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__")
                or (isinstance(node.value, ast.Call) and self._qualname(node.value.func) == "vars")
            )
        ):
            self.shapes.add("sets a test report's outcome (through its __dict__)", node)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        owner = self._qualname(node.value)
        store = isinstance(node.ctx, ast.Store | ast.Del)
        if node.attr in _FRAME_ATTRS:
            self.shapes.add(f"walks frames (.{node.attr})", node)
        elif node.attr in _MACHINERY_ATTRS:
            self.shapes.add(f"reaches pytest's plugin machinery (.{node.attr})", node)
        elif node.attr == "hook" and _ends_with(node.value, ("config", "_config")):
            self.shapes.add("reaches pytest's hooks (config.hook)", node)
        elif node.attr == "stats" and _ends_with(
            node.value, ("terminalreporter", "terminal_reporter")
        ):
            self.shapes.add("reaches the terminal reporter's tally (.stats)", node)
        elif node.attr == "co_filename" and store:
            self.shapes.add("rewrites a code object's file name", node)
        if store and _is_machinery(owner):
            self.shapes.add(f"replaces pytest's internals ({owner}.{node.attr})", node)
        if store and owner == "builtins":
            self.shapes.add(f"patches builtins (builtins.{node.attr})", node)
        if store and owner == "__builtins__":
            self.shapes.add(f"patches builtins (__builtins__.{node.attr})", node)
        if store and owner in _PATH_HOOKS:
            self.shapes.add(f"installs an import hook ({owner})", node)
        if isinstance(node.ctx, ast.Store) and self._qualname(node) in _PATH_HOOKS:
            self.shapes.add(f"installs an import hook ({self._qualname(node)})", node)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in _OUTCOME_HOOKS:
            self.shapes.add(
                f"defines the pytest hook {node.name}, which decides whether a test runs "
                "or what its report says",
                node,
            )
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if (
                isinstance(target, ast.Attribute)
                and target.attr == "outcome"
                and isinstance(node.value, ast.Constant)
                and node.value.value in _OUTCOMES
            ):
                self.shapes.add(f"sets a test report's outcome to {node.value.value!r}", node)
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        if self._qualname(node.iter) == "sys.modules":
            self.shapes.add("walks every loaded module (sys.modules)", node)
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        if self._qualname(node.iter) == "sys.modules":
            self.shapes.add("walks every loaded module (sys.modules)", node.iter)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if id(node) not in self._folded:
            self._built_name(node)
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        if id(node) not in self._folded:
            self._built_name(node)
        self.generic_visit(node)


_OUTCOME_HOOKS = frozenset(
    {
        "pytest_pyfunc_call",
        "pytest_runtest_call",
        "pytest_runtest_protocol",
        "pytest_runtest_makereport",
        "pytest_runtest_logreport",
        "pytest_report_teststatus",
        "pytest_make_collect_report",
        "pytest_collectreport",
        "pytest_sessionfinish",
    }
)
"""Hooks a plugin or `conftest.py` may implement that decide whether a test runs
(`pytest_pyfunc_call` returning without calling it), what its report says (a
`pytest_runtest_makereport` wrapper forcing another result) or how the session ends:
one the change adds is a shape even in a conftest, which pytest loads as a declared
plugin the guard cannot tell from an ordinary one."""
_FORCERS = frozenset({"force_result", "force_exception"})
"""pluggy's way for a hook wrapper to replace what the hook returned."""
_SETTERS = frozenset({"setattr", "delattr", "__setattr__", "__delattr__"})
"""Calls that replace an attribute of their first argument (`monkeypatch.setattr`,
`type.__setattr__`, ...)."""


def _is_machinery(qualname: str) -> bool:
    """Whether `qualname` names pytest's or pluggy's own module, class or function."""
    top = qualname.split(".", 1)[0]
    return top in _MACHINERY_MODULES or top == "pytest"


def _apply_element(name: str, elt: ast.expr, item: object) -> str:
    """`chr(c)`, `c`, `str(c)` of one literal item of a comprehension."""
    if isinstance(elt, ast.Name) and elt.id == name:
        return item if isinstance(item, str) else _UNKNOWN
    if (
        isinstance(elt, ast.Call)
        and isinstance(elt.func, ast.Name)
        and elt.func.id == "chr"
        and len(elt.args) == 1
        and isinstance(elt.args[0], ast.Name)
        and elt.args[0].id == name
        and isinstance(item, int)
        and 0 <= item < 0x110000
    ):
        return chr(item)
    return _UNKNOWN


def _ends_with(node: ast.expr, names: tuple[str, ...]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute):
        return node.attr in names
    return False


def _scan(source: str) -> _Shapes:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return _Shapes()  # it cannot run either
    scan = _Scan(tree)
    scan.visit(tree)
    return scan.shapes


def test_machinery_shapes(source: str) -> Counter[str]:
    """Each shape that reaches the test runner in `source`, with how often it appears
    (empty when the source does not parse: then it cannot run either)."""
    return _scan(source).counts


_ORDINARY_IN_TESTS = (
    "imports pytest's internals",
    "reaches pytest's plugin machinery (.pluginmanager)",
    "reaches pytest's plugin machinery (.ihook)",
    "reaches pytest's hooks (config.hook)",
    "reaches the terminal reporter's tally",
    "changes sys.modules",
    "sets an entry of sys.modules",
    "deletes an entry of sys.modules",
    "patches builtins",
    "rewires the process's standard output",
)
"""Shapes a test file or `conftest.py` may add without a flag: tests import pytest's
helpers, conftest hooks read the plugin manager and the terminal reporter's tally, and
tests mock modules and builtins. Everything else reaches further than a test needs (a
walk over every loaded module, pytest's own objects replaced, a report's outcome set by
hand, `gc` walks, frames, hook names built at run time) and is flagged in test files
too: a test module runs in the same process as the pytest guard and can silence it."""


def _shadowing(path: str) -> str:
    """What a staged file shadows (`pytest`, `sitecustomize`, ...), or `""`."""
    name = posixpath.basename(path)
    if name in _SHADOWED_FILES and not is_test_file(path):
        return name.removesuffix(".py")
    if _GUARD_NAME.search(path):
        return "the sandbox's pytest guard"
    parts = path.split("/")[:-1]
    shadowed = next((p for p in parts if p in _SHADOWED_PACKAGES), "")
    if shadowed and name.endswith(".py") and not is_test_file(path):
        return shadowed
    # At the root, a module or package named like one the run imports before the guard
    # (`python -m pytest` puts the root first on `sys.path`): it runs before pytest.
    top = parts[0] if parts else name.removesuffix(".py")
    if name.endswith((".py", ".pyc")) and not is_test_file(path):
        if top in _STDLIB:
            return f"the standard library's {top}"
        if top in _RUNNER_DEPENDENCIES:
            return top
    return ""


def scan_test_machinery(
    staged: Mapping[str, str | None], base: Mapping[str, str | None]
) -> tuple[TamperFlag, ...]:
    """`test_machinery` flags for shapes the change adds (in test files, only the shapes a
    test never needs).

    Args:
        staged: The change: path -> new content, `None` for a deleted file.
        base: The same paths' content at the base commit (`None` or absent: new file).
    """
    flags: list[TamperFlag] = []
    for path in sorted(staged):
        new = staged[path]
        if new is None:
            continue
        shadowed = _shadowing(path)
        if shadowed:
            flags.append(
                TamperFlag(
                    kind="test_machinery",
                    path=path,
                    detail=f"a module that shadows {shadowed}, which the test run imports",
                )
            )
        if not path.endswith(".py"):
            continue
        in_tests = is_test_file(path)
        old = base.get(path)
        before = test_machinery_shapes(old) if old else Counter[str]()
        after = _scan(new)
        for description, count in sorted(after.counts.items()):
            if in_tests and description.startswith(_ORDINARY_IN_TESTS):
                continue
            if count > before.get(description, 0):
                lines = sorted(set(after.lines.get(description, [])))
                shown = ", ".join(str(n) for n in lines[:5]) + (", ..." if len(lines) > 5 else "")
                where = f" (line{'s' if len(lines) > 1 else ''} {shown})" if lines else ""
                flags.append(
                    TamperFlag(kind="test_machinery", path=path, detail=f"{description}{where}")
                )
    return tuple(flags)
