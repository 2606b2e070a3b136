"""Read-only repository tools for every agent and verifier: list, read (paged), search.

Plain async functions closed over a `RepoSnapshot`: the Agent turns each signature and
docstring into the schema the model sees. They are in-process reads, not durable
tasks: a read has no effect to make durable, and a task per file read would cost a
container start on a cluster for a few kilobytes. Every output is bounded so one call
cannot flood the model's context; a cut says what was left out and how to get it.

File contents are shown verbatim (not through `fence_untrusted`, which removes HTML
comments and would make the model re-stage files without them), inside a `<file>`
block that the instructions tell the model to treat as data.

With a stage (the agent's own, or the verifier's read-only view of a submitted plan)
the tools show the tree as it would be after the change: `read_file` and `search_code`
read staged content over the commit, deleted paths are gone, and a `ReadLog` can note
which lines of staged files were shown, so the pipeline knows what the verifier saw.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Protocol

from pydantic import Field

from agent_loop_common.repo._snapshot import RepoSnapshot
from agent_loop_common.staging import StagingError, normalize_path

__all__ = ["ReadLog", "ReadTool", "StagedFiles", "ToolLimits", "repo_tools"]

ReadTool = Callable[..., Awaitable[str]]


class StagedFiles(Protocol):
    """Staged content over the commit: a `ChangeStage`, or a submitted `ChangePlan`."""

    @property
    def files(self) -> Mapping[str, str | None]:
        """Normalized path -> full new content, `None` for a deletion."""
        ...


class ReadLog:
    """Which lines of which staged files a reader was shown through `read_file`.

    The verifier's read tools keep one, so the pipeline can tell whether every part of
    a change was in front of the verifier (the prompt, or pages it read).
    """

    def __init__(self) -> None:
        self.lines: dict[str, set[int]] = {}
        """Path -> 1-based numbers of the staged lines shown in full."""

    def add(self, path: str, first: int, last: int) -> None:
        """Note that lines `first` to `last` of the staged `path` were shown."""
        if last >= first:
            self.lines.setdefault(path, set()).update(range(first, last + 1))

    def shown(self, path: str) -> set[int]:
        """The staged lines of `path` shown so far."""
        return self.lines.get(path, set())


class ToolLimits:
    """Output bounds of the read tools."""

    list_entries = 300
    read_chars = 40_000
    read_lines = 600
    search_hits = 50
    line_chars = 200


Directory = Annotated[
    str, Field(description="A folder relative to the repository root, e.g. 'src/pkg'; '' for all.")
]
FilePath = Annotated[str, Field(description="File path relative to the repository root.")]
StartLine = Annotated[int, Field(description="First line to show (1-based).")]
MaxLines = Annotated[int, Field(description="Most lines to show (at most 600).")]
Pattern = Annotated[
    str, Field(description="Text to find (case-insensitive, plain text, not a regex).")
]


def repo_tools(
    snapshot: RepoSnapshot,
    *,
    stage: StagedFiles | None = None,
    staged_by: str = "you",
    log: ReadLog | None = None,
) -> list[ReadTool]:
    """`list_files`, `read_file` and `search_code` at the snapshot's commit.

    Args:
        snapshot: The pinned commit (its `label` names it in the tools' descriptions).
        stage: Staged content over the commit: the agent's stage (a retry sees its own
            proposal), or a submitted plan (the verifier reads the tree that would be
            committed). `read_file` and `search_code` show staged content; `None` reads
            the commit only.
        staged_by: Who staged it, as the tools say it: `you` for the agent, `the
            proposal` for the verifier.
        log: Notes the staged lines `read_file` shows (the verifier's coverage).
    """
    lim = ToolLimits
    yours = "your staged version" if staged_by == "you" else f"the version staged by {staged_by}"

    async def list_files(directory: Directory = "") -> str:
        """List the files of the repository at {where}, optionally only under one folder."""
        prefix = _folder(directory)
        paths = [p for p in await snapshot.paths() if p.startswith(prefix)]
        shown = paths[: lim.list_entries]
        lines = [f"{len(paths)} file(s) under '{prefix or '/'}' at {snapshot.branch}:"]
        lines += shown
        if len(paths) > len(shown):
            lines.append(f"... {len(paths) - len(shown)} more; list a sub-folder to see them.")
        if stage is not None and stage.files:
            lines.append(f"Staged by {staged_by}: " + ", ".join(sorted(stage.files)))
        return "\n".join(lines)

    async def read_file(
        path: FilePath, start_line: StartLine = 1, max_lines: MaxLines = 600
    ) -> str:
        """Read a file at {where} (or {staged} of it, if one is staged)."""
        try:
            norm = normalize_path(path)
        except StagingError as exc:
            return f"Cannot read {path!r}: {exc}"
        origin = snapshot.label
        text: str | None
        if stage is not None and norm in stage.files:
            staged = stage.files[norm]
            if staged is None:
                keep = " (unstage_file to keep it)" if staged_by == "you" else ""
                return f"{norm} is staged for deletion by {staged_by}{keep}."
            text, origin = staged, yours
            page, first, last = _excerpt(norm, text, origin, start_line, max_lines)
            if log is not None:
                log.add(norm, first, last)
            return page
        data = await snapshot.read(norm)
        if data is None:
            return f"No file {norm} at {origin}. Use list_files or search_code to find paths."
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return f"{norm} is a binary file ({len(data)} bytes); it cannot be shown."
        return _excerpt(norm, text, origin, start_line, max_lines)[0]

    async def search_code(pattern: Pattern, directory: Directory = "") -> str:
        """Find lines containing a text in the repository's files at {where}."""
        needle = pattern.strip().casefold()
        if not needle:
            return "Give a non-empty text to search for."
        prefix = _folder(directory)
        index = dict(await snapshot.search_index())
        if stage is not None:
            for path, content in stage.files.items():
                if content is None:
                    index.pop(path, None)
                else:
                    index[path] = content
        hits: list[str] = []
        total = 0
        for path in sorted(index):
            if not path.startswith(prefix):
                continue
            for number, line in enumerate(index[path].splitlines(), start=1):
                if needle in line.casefold():
                    total += 1
                    if len(hits) < lim.search_hits:
                        hits.append(f"{path}:{number}: {line.strip()[: lim.line_chars]}")
        if not hits:
            return f"No line under '{prefix or '/'}' contains {pattern!r}."
        more = (
            f"\n... {total - len(hits)} more match(es); narrow the text or the folder."
            if total > len(hits)
            else ""
        )
        return f"{total} match(es) for {pattern!r}:\n" + "\n".join(hits) + more

    tools: list[ReadTool] = [list_files, read_file, search_code]
    for tool in tools:
        tool.__doc__ = (tool.__doc__ or "").format(where=snapshot.label, staged=yours)
    return tools


def _folder(directory: str) -> str:
    clean = directory.strip().strip("/")
    return f"{clean}/" if clean and clean != "." else ""


def _excerpt(
    path: str, text: str, origin: str, start_line: int, max_lines: int
) -> tuple[str, int, int]:
    """The page shown, and the first and last line shown in full."""
    lines = text.splitlines(keepends=True)
    first = max(start_line, 1)
    count = min(max(max_lines, 1), ToolLimits.read_lines)
    chunk = lines[first - 1 : first - 1 + count]
    body = "".join(chunk)
    last = first - 1 + len(chunk)
    if len(body) > ToolLimits.read_chars:
        body = body[: ToolLimits.read_chars]
        whole, used = 0, 0
        for line in chunk:
            used += len(line)
            if used > ToolLimits.read_chars:
                break
            whole += 1
        last = first - 1 + whole
    header = f"{path} ({origin}), lines {first}-{last} of {len(lines)}"
    if last < first <= len(lines):
        header += (
            f"; line {first} alone is longer than {ToolLimits.read_chars} characters and "
            "cannot be shown whole"
        )
    elif last < len(lines):
        header += f"; read on with start_line={last + 1}"
    return f'{header}:\n<file path="{path}">\n{body}\n</file>', first, last
