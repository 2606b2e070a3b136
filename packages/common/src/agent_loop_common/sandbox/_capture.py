"""Bounded capture of a command's output: a head, a tail, and what pytest said.

A test suite can print megabytes; the sandbox keeps the first `head_bytes` and the last
`tail_bytes`, counts the rest, and scans every complete line as it streams past for the
two things worth keeping from the middle: pytest's `FAILED`/`ERROR` lines (capped) and
its final summary line. Memory stays bounded whatever the command prints.
"""

from __future__ import annotations

from agent_loop_common.sandbox._reports import (
    MAX_NAMES,
    counts_from_pytest,
    failing_name,
    parse_pytest_summary,
)
from agent_loop_common.sandbox._result import OutputExcerpt, TestCounts

__all__ = ["OutputCapture"]

_MAX_LINE = 4096


class OutputCapture:
    """Accumulates output chunks into a bounded excerpt and scans its lines.

    Args:
        head_bytes: Bytes kept from the start.
        tail_bytes: Bytes kept from the end.
    """

    def __init__(self, head_bytes: int = 8 * 1024, tail_bytes: int = 24 * 1024) -> None:
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0
        self._line = bytearray()
        self._line_overflow = False
        self._failing: list[str] = []
        self._summary: dict[str, int] | None = None

    @property
    def total_bytes(self) -> int:
        """Bytes fed so far."""
        return self._total

    def feed(self, chunk: bytes) -> None:
        """Add the next chunk of output."""
        if not chunk:
            return
        self._total += len(chunk)
        room = self.head_bytes - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk_rest = chunk[room:]
        else:
            chunk_rest = chunk
        if chunk_rest:
            self._tail += chunk_rest
            if len(self._tail) > self.tail_bytes:
                del self._tail[: len(self._tail) - self.tail_bytes]
        self._scan(chunk)

    def _scan(self, chunk: bytes) -> None:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                piece = chunk[start:]
                if len(self._line) + len(piece) > _MAX_LINE:
                    self._line_overflow = True
                    piece = piece[: max(0, _MAX_LINE - len(self._line))]
                self._line += piece
                return
            piece = chunk[start:end]
            if not self._line_overflow:
                self._line += piece[: max(0, _MAX_LINE - len(self._line))]
                self._on_line(self._line.decode("utf-8", "replace"))
            self._line.clear()
            self._line_overflow = False
            start = end + 1

    def _on_line(self, line: str) -> None:
        name = failing_name(line)
        if name is not None:
            if len(self._failing) < MAX_NAMES:
                self._failing.append(name)
            return
        counts = parse_pytest_summary(line)
        if counts is not None:
            self._summary = counts

    def finish(self) -> None:
        """Scan a last line that did not end with a newline."""
        if self._line and not self._line_overflow:
            self._on_line(self._line.decode("utf-8", "replace"))
        self._line.clear()

    def excerpt(self) -> OutputExcerpt:
        """The head and tail kept so far."""
        omitted = self._total - len(self._head) - len(self._tail)
        return OutputExcerpt(
            head=self._head.decode("utf-8", "replace"),
            tail=self._tail.decode("utf-8", "replace"),
            total_bytes=self._total,
            omitted_bytes=max(0, omitted),
        )

    def pytest_counts(self) -> TestCounts | None:
        """Counts from pytest's summary line with the failing names, if pytest printed one."""
        if self._summary is None:
            return None
        return counts_from_pytest(self._summary, self._failing)
