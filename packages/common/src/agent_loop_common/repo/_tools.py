"""Read-only repository tools for every agent and verifier: list, read (paged), search.

Plain async functions closed over a `RepoSnapshot`: the Agent turns each signature and
docstring into the schema the model sees. They are in-process reads, not durable
tasks: a read has no effect to make durable, and a task per file read would cost a
container start on a cluster for a few kilobytes. Every output is bounded so one call
cannot flood the model's context; a cut says what was left out and how to get it.

File contents are shown verbatim (not through `fence_untrusted`, which removes HTML
comments and would make the model re-stage files without them), inside a `<file>`
block that the instructions tell the model to treat as data.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from pydantic import Field

from agent_loop_common.repo._snapshot import RepoSnapshot
from agent_loop_common.staging import ChangeStage, StagingError, normalize_path

__all__ = ["ReadTool", "ToolLimits", "repo_tools"]

ReadTool = Callable[..., Awaitable[str]]


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


def repo_tools(snapshot: RepoSnapshot, *, stage: ChangeStage | None = None) -> list[ReadTool]:
    """`list_files`, `read_file` and `search_code` at the snapshot's commit.

    Args:
        snapshot: The pinned commit (its `label` names it in the tools' descriptions).
        stage: The agent's stage: `read_file` then shows a staged path's staged
            content (a retry sees its own proposal). `None` reads the commit only.
    """
    lim = ToolLimits

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
            lines.append("Staged by you: " + ", ".join(sorted(stage.files)))
        return "\n".join(lines)

    async def read_file(
        path: FilePath, start_line: StartLine = 1, max_lines: MaxLines = 600
    ) -> str:
        """Read a file at {where} (or your staged version of it, if you staged one)."""
        try:
            norm = normalize_path(path)
        except StagingError as exc:
            return f"Cannot read {path!r}: {exc}"
        origin = snapshot.label
        text: str | None
        if stage is not None and norm in stage.files:
            staged = stage.files[norm]
            if staged is None:
                return f"{norm} is staged for deletion by you (unstage_file to keep it)."
            text, origin = staged, "your staged version"
        else:
            data = await snapshot.read(norm)
            if data is None:
                return f"No file {norm} at {origin}. Use list_files or search_code to find paths."
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                return f"{norm} is a binary file ({len(data)} bytes); it cannot be shown."
        return _excerpt(norm, text, origin, start_line, max_lines)

    async def search_code(pattern: Pattern, directory: Directory = "") -> str:
        """Find lines containing a text in the repository's files at {where}."""
        needle = pattern.strip().casefold()
        if not needle:
            return "Give a non-empty text to search for."
        prefix = _folder(directory)
        index = await snapshot.search_index()
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
        tool.__doc__ = (tool.__doc__ or "").format(where=snapshot.label)
    return tools


def _folder(directory: str) -> str:
    clean = directory.strip().strip("/")
    return f"{clean}/" if clean and clean != "." else ""


def _excerpt(path: str, text: str, origin: str, start_line: int, max_lines: int) -> str:
    lines = text.splitlines(keepends=True)
    first = max(start_line, 1)
    count = min(max(max_lines, 1), ToolLimits.read_lines)
    chunk = lines[first - 1 : first - 1 + count]
    body = "".join(chunk)
    last = first - 1 + len(chunk)
    if len(body) > ToolLimits.read_chars:
        body = body[: ToolLimits.read_chars]
        last = first - 1 + body.count("\n")
    header = f"{path} ({origin}), lines {first}-{last} of {len(lines)}"
    if last < len(lines):
        header += f"; read on with start_line={last + 1}"
    return f'{header}:\n<file path="{path}">\n{body}\n</file>'
