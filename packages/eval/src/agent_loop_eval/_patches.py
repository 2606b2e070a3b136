"""Git-format unified diffs of file maps, and applying them to file maps, in pure Python.

Mining writes an instance's `patch` and `test_patch` as the difference of two trees
(`diff_files`); scoring lays a patch over the tree at the base (`apply_patch`), whether it
was written here or is a SWE-bench file's, produced by `git diff` elsewhere. Pure Python,
so the eval's image needs no `git` and a patch is applied the same way on every machine;
it follows `git apply`'s rules, which SWE-bench's own harness uses first:

- `diff --git` sections with their extended headers (`new file mode`, `deleted file
  mode`, `rename from`/`to`, `copy from`/`to`, `index`, mode changes), and plain
  `---`/`+++` sections (with one leading path component stripped, like `-p1`);
- names quoted the way git quotes them (`"a/caf\\303\\251.py"`);
- every context and removed line must match exactly; a hunk may be found at an offset
  from the line its header names (nearest first), but no fuzz;
- `\\ No newline at end of file` after the line it belongs to;
- a binary patch (`GIT binary patch`, `Binary files ... differ`) cannot be applied and
  says so (`PatchError`): a text diff cannot carry one either (`BinaryChange`).

A file map is `path -> text`; a change is `path -> new text`, `None` for a deletion:
the shape `Sandbox.run(changes=...)` takes.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agent_loop_common.sandbox import is_test_file

__all__ = [
    "BinaryChange",
    "FilePatch",
    "Hunk",
    "PatchError",
    "apply_patch",
    "diff_files",
    "is_test_path",
    "parse_patch",
    "patch_paths",
    "patched_files",
    "split_test_paths",
]

CONTEXT_LINES = 3
"""Lines of context around each change, as `git diff` writes by default."""

_NO_NEWLINE = "\\ No newline at end of file"
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {"a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r"}
_ESCAPES.update({'"': '"', "\\": "\\"})
_QUOTE_OUT = {v: k for k, v in _ESCAPES.items()}


class PatchError(ValueError):
    """A patch that cannot be read or does not apply (the message names the file)."""


class BinaryChange(PatchError):
    """A file whose change is not text: a unified diff cannot carry it."""


def is_test_path(path: str) -> bool:
    """Whether `path` is a test file, by the sandbox's rule (a `tests`/`test`/`spec`
    folder, `test_*.py`, `*_test.py`, `conftest.py`, `*.test.js`...): the split between
    an instance's `test_patch` and its `patch`."""
    return is_test_file(path)


def split_test_paths(paths: Iterable[str]) -> tuple[list[str], list[str]]:
    """`(code, tests)`: `paths` sorted, split by `is_test_path`."""
    code: list[str] = []
    tests: list[str] = []
    for path in sorted(set(paths)):
        (tests if is_test_path(path) else code).append(path)
    return code, tests


# ---------------------------------------------------------------------- writing


def _lines(text: str) -> list[str]:
    """`text` split after each `\\n` only (not at `\\r`, form feeds and the other breaks
    `str.splitlines` knows); the last line has no `\\n` when the text does not end in one."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _quote(name: str) -> str:
    """A path as git writes it: in C quotes when it holds a quote, a backslash, a control
    character or a non-ASCII byte (git's default `core.quotePath`)."""
    if not any(c in _QUOTE_OUT or ord(c) < 0x20 or ord(c) >= 0x7F for c in name):
        return name
    out: list[str] = []
    for char in name:
        if char in _QUOTE_OUT:
            out.append("\\" + _QUOTE_OUT[char])
        elif ord(char) < 0x20 or ord(char) >= 0x7F:
            out.extend(f"\\{byte:03o}" for byte in char.encode("utf-8"))
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _side(prefix: str, path: str) -> str:
    quoted = _quote(path)
    if quoted.startswith('"'):
        return '"' + prefix + quoted[1:]
    return prefix + quoted


def _text(path: str, content: str | bytes | None) -> str | None:
    if content is None or isinstance(content, str):
        return content
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise BinaryChange(f"{path}: not UTF-8 text, a unified diff cannot carry it") from None


def _range(start: int, length: int) -> str:
    # git's form: `-5` for one line, `-5,0` / `-5,3` otherwise; an empty side starts at
    # the line before it (0 for the top of the file).
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def _hunks(old: list[str], new: list[str]) -> list[str]:
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2 - i1)} +{_range(j1, j2 - j1)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out.extend(_hunk_line(" ", line) for line in old[a1:a2])
                continue
            out.extend(_hunk_line("-", line) for line in old[a1:a2])
            out.extend(_hunk_line("+", line) for line in new[b1:b2])
    return out


def _hunk_line(op: str, line: str) -> str:
    if line.endswith("\n"):
        return op + line
    return f"{op}{line}\n{_NO_NEWLINE}\n"


def _file_diff(path: str, old: str | None, new: str | None) -> str:
    head = [f"diff --git {_side('a/', path)} {_side('b/', path)}\n"]
    if old is None:
        head.append("new file mode 100644\n")
    elif new is None:
        head.append("deleted file mode 100644\n")
    old_lines, new_lines = _lines(old or ""), _lines(new or "")
    if not old_lines and not new_lines:
        return "".join(head)  # an empty file created or deleted: the header says it all
    head.append(f"--- {_side('a/', path) if old is not None else '/dev/null'}\n")
    head.append(f"+++ {_side('b/', path) if new is not None else '/dev/null'}\n")
    return "".join(head + _hunks(old_lines, new_lines))


def diff_files(
    before: Mapping[str, str | bytes],
    after: Mapping[str, str | bytes],
    paths: Iterable[str] | None = None,
) -> str:
    """The git-format unified diff from `before` to `after` (`path -> content` maps).

    Only `paths` are compared when given (a path in neither map is ignored); otherwise
    every path of either map. A path missing on one side is a created or deleted file.
    Files come in path order, with `git diff`'s three lines of context, so the text is
    stable and `git apply` and `apply_patch` both take it.

    Raises:
        BinaryChange: A compared file differs and one side is not UTF-8 text.
    """
    chosen = sorted(set(before) | set(after)) if paths is None else sorted(set(paths))
    parts: list[str] = []
    for path in chosen:
        old_raw, new_raw = before.get(path), after.get(path)
        if old_raw == new_raw:
            continue
        old, new = _text(path, old_raw), _text(path, new_raw)
        if old == new:
            continue
        parts.append(_file_diff(path, old, new))
    return "".join(parts)


# ---------------------------------------------------------------------- reading


@dataclass(frozen=True)
class Hunk:
    """One `@@` block: where it applies and its lines."""

    old_start: int
    """First line of the old side (1-based; the line before it when `old_len` is 0)."""
    old_len: int
    new_start: int
    new_len: int
    lines: tuple[tuple[str, str], ...]
    """`(op, text)` with op `" "`, `"-"` or `"+"`; `text` keeps its `\\n` unless the
    patch said `No newline at end of file` after it."""

    def old_lines(self) -> list[str]:
        return [text for op, text in self.lines if op != "+"]

    def new_lines(self) -> list[str]:
        return [text for op, text in self.lines if op != "-"]


@dataclass(frozen=True)
class FilePatch:
    """One file's section of a patch."""

    old_path: str | None
    """The path before (`None`: the file is created)."""
    new_path: str | None
    """The path after (`None`: the file is deleted)."""
    hunks: tuple[Hunk, ...] = ()
    binary: bool = False
    """A binary change: it cannot be applied from the text."""
    copy: bool = False
    """`copy from`/`copy to`: the old file stays."""

    @property
    def path(self) -> str:
        """The path the section is about (the new one, or the deleted one)."""
        path = self.new_path or self.old_path
        assert path is not None
        return path


def _unquote(token: str) -> str:
    if not token.startswith('"'):
        return token
    body = token[1:-1] if token.endswith('"') and len(token) > 1 else token[1:]
    raw = bytearray()
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567":
                raw.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            raw.extend(_ESCAPES.get(nxt, nxt).encode("utf-8"))
            i += 2
            continue
        raw.extend(char.encode("utf-8"))
        i += 1
    return raw.decode("utf-8", errors="surrogateescape")


def _quoted_token(text: str) -> tuple[str, str]:
    """`("\"a/x y\"", rest)` for a text that starts with a C-quoted name."""
    i = 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return text[: i + 1], text[i + 1 :]
        i += 1
    return text, ""


def _strip_prefix(name: str) -> str | None:
    """`a/x` -> `x` (git's `-p1`), `/dev/null` -> None; a trailing tab and timestamp
    (GNU diff's) is dropped."""
    raw = name.rstrip("\n")
    if raw.startswith('"'):
        name = _unquote(_quoted_token(raw)[0])
    else:
        name = raw.split("\t", 1)[0]
    if name == "/dev/null":
        return None
    _, slash, rest = name.partition("/")
    return rest if slash else name


def _header_paths(line: str) -> tuple[str | None, str | None]:
    """The two paths of a `diff --git a/x b/x` line (best effort: names with spaces are
    found by the halves being equal, as git does for a section without `---`/`+++`)."""
    rest = line[len("diff --git ") :].rstrip("\n")
    if rest.startswith('"'):
        first, second = _quoted_token(rest)
        return _strip_prefix(first), _strip_prefix(second.strip())
    if rest.endswith('"'):
        start = rest.rfind(' "')
        return _strip_prefix(rest[:start]), _strip_prefix(rest[start + 1 :])
    half = (len(rest) - 1) // 2
    if rest[half] == " " and rest[2:half] == rest[half + 3 :]:
        return _strip_prefix(rest[:half]), _strip_prefix(rest[half + 1 :])
    first, _, second = rest.partition(" ")
    return _strip_prefix(first), _strip_prefix(second)


class _Reader:
    def __init__(self, text: str) -> None:
        self.lines = _lines(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.lines[self.pos] if self.pos < len(self.lines) else None

    def take(self) -> str:
        line = self.lines[self.pos]
        self.pos += 1
        return line


def _read_hunk(reader: _Reader, header: str, path: str) -> Hunk:
    match = _HUNK.match(header)
    if match is None:
        raise PatchError(f"{path}: bad hunk header {header.strip()!r}")
    old_start, new_start = int(match.group(1)), int(match.group(3))
    old_len = 1 if match.group(2) is None else int(match.group(2))
    new_len = 1 if match.group(4) is None else int(match.group(4))
    lines: list[tuple[str, str]] = []
    old_left, new_left = old_len, new_len
    while old_left > 0 or new_left > 0:
        line = reader.peek()
        if line is None:
            raise PatchError(f"{path}: hunk {header.strip()!r} is cut short")
        reader.take()
        if line.startswith(_NO_NEWLINE[:2]):
            _drop_newline(lines, path)
            continue
        op, text = (line[0], line[1:]) if line not in ("\n", "") else (" ", "\n")
        if op == " " and old_left > 0 and new_left > 0:
            old_left, new_left = old_left - 1, new_left - 1
        elif op == "-" and old_left > 0:
            old_left -= 1
        elif op == "+" and new_left > 0:
            new_left -= 1
        else:
            raise PatchError(f"{path}: hunk {header.strip()!r} does not match its counts")
        lines.append((op, text))
    nxt = reader.peek()
    if nxt is not None and nxt.startswith(_NO_NEWLINE[:2]):
        reader.take()
        _drop_newline(lines, path)
    return Hunk(old_start, old_len, new_start, new_len, tuple(lines))


def _drop_newline(lines: list[tuple[str, str]], path: str) -> None:
    if not lines:
        raise PatchError(f"{path}: 'No newline at end of file' before any line")
    op, text = lines[-1]
    lines[-1] = (op, text.removesuffix("\n"))


def _read_section(reader: _Reader, first: str) -> FilePatch:
    old_path: str | None
    new_path: str | None
    git = first.startswith("diff --git ")
    old_path, new_path = _header_paths(first) if git else (None, None)
    created = deleted = binary = copy = False
    if not git:
        reader.pos -= 1  # a plain `---` line: read it below
    while (line := reader.peek()) is not None:
        if line.startswith(("diff --git ", "@@")):
            break
        if (
            line.startswith("--- ")
            and (reader.pos + 1 < len(reader.lines))
            and (reader.lines[reader.pos + 1].startswith("+++ "))
        ):
            old_path = _strip_prefix(reader.take()[4:])
            new_path = _strip_prefix(reader.take()[4:])
            created, deleted = old_path is None, new_path is None
            break
        reader.take()
        if not git:
            continue
        if line.startswith("new file mode"):
            created = True
        elif line.startswith("deleted file mode"):
            deleted = True
        elif line.startswith(("rename from ", "copy from ")):
            old_path = _unquote(line.split(" ", 2)[2].rstrip("\n"))
            copy = line.startswith("copy")
        elif line.startswith(("rename to ", "copy to ")):
            new_path = _unquote(line.split(" ", 2)[2].rstrip("\n"))
        elif line.startswith(("GIT binary patch", "Binary files ")):
            binary = True
    if created:
        old_path = None
    if deleted:
        new_path = None
    name = new_path or old_path or "?"
    hunks: list[Hunk] = []
    while (line := reader.peek()) is not None and line.startswith("@@"):
        hunks.append(_read_hunk(reader, reader.take(), name))
    if binary:
        while (line := reader.peek()) is not None and not line.startswith("diff --git "):
            reader.take()
    return FilePatch(old_path, new_path, tuple(hunks), binary, copy)


def parse_patch(text: str) -> list[FilePatch]:
    """The file sections of a patch, in order; text before the first section (a commit
    message, `git format-patch`'s header) is skipped.

    Raises:
        PatchError: A hunk whose lines do not match its header's counts, or a bad header.
    """
    reader = _Reader(text)
    sections: list[FilePatch] = []
    while (line := reader.peek()) is not None:
        reader.take()
        plain = (
            line.startswith("--- ")
            and reader.peek() is not None
            and str(reader.peek()).startswith("+++ ")
        )
        if line.startswith("diff --git ") or plain:
            sections.append(_read_section(reader, line))
    return sections


def patch_paths(text: str) -> list[str]:
    """Every path a patch reads or writes (both names of a rename), sorted."""
    paths: set[str] = set()
    for section in parse_patch(text):
        paths.update(p for p in (section.old_path, section.new_path) if p is not None)
    return sorted(paths)


# ---------------------------------------------------------------------- applying


def _find(lines: list[str], want: list[str], start: int) -> int | None:
    """Where `want` occurs in `lines`, nearest to `start` first (git apply's offsets)."""
    if not want:
        return min(max(start, 0), len(lines))
    last = len(lines) - len(want)
    for distance in range(max(start, last - start, 0) + 1):
        for at in (start - distance, start + distance) if distance else (start,):
            if 0 <= at <= last and lines[at : at + len(want)] == want:
                return at
    return None


def _apply_hunks(path: str, text: str, hunks: tuple[Hunk, ...]) -> str:
    lines = _lines(text)
    offset = 0
    floor = 0
    for number, hunk in enumerate(hunks, start=1):
        want = hunk.old_lines()
        start = (hunk.old_start - 1 if hunk.old_len else hunk.old_start) + offset
        at = _find(lines, want, start)
        if at is None or at < floor:
            raise PatchError(f"{path}: hunk {number} (line {hunk.old_start}) does not apply")
        new = hunk.new_lines()
        lines[at : at + len(want)] = new
        offset += len(new) - len(want)
        floor = at + len(new)
    return "".join(lines)


def apply_patch(files: Mapping[str, str | bytes], patch: str) -> dict[str, str | None]:
    """The change `patch` makes to `files`: `path -> new text`, `None` for a deleted file.

    The result is what `Sandbox.run(changes=...)` takes; `patched_files` gives the whole
    new map. Sections apply in order, each to the result of the ones before.

    Raises:
        PatchError: A section that does not apply (a hunk whose lines are not there, a
            created file that exists, a changed or deleted file that does not), a binary
            section, or a patch that cannot be read.
    """
    changes: dict[str, str | None] = {}

    def current(path: str) -> str | None:
        if path in changes:
            return changes[path]
        return _text(path, files[path]) if path in files else None

    for section in parse_patch(patch):
        path = section.path
        if section.binary:
            raise PatchError(f"{path}: a binary patch cannot be applied from text")
        if section.old_path is None:
            if current(path) is not None:
                raise PatchError(f"{path}: created by the patch but already exists")
            changes[path] = _apply_hunks(path, "", section.hunks)
            continue
        old = current(section.old_path)
        if old is None:
            raise PatchError(f"{section.old_path}: changed by the patch but does not exist")
        new = _apply_hunks(section.old_path, old, section.hunks)
        if section.new_path is None:
            if new:
                raise PatchError(f"{path}: deleted by the patch but its content differs")
            changes[path] = None
            continue
        if section.new_path != section.old_path:
            if current(section.new_path) is not None:
                raise PatchError(f"{section.new_path}: the patch's target already exists")
            if not section.copy:
                changes[section.old_path] = None
        changes[section.new_path] = new
    return changes


def patched_files(files: Mapping[str, str | bytes], patch: str) -> dict[str, str | bytes]:
    """`files` with `patch` applied (see `apply_patch`)."""
    result: dict[str, str | bytes] = dict(files)
    for path, content in apply_patch(files, patch).items():
        if content is None:
            result.pop(path, None)
        else:
            result[path] = content
    return result
