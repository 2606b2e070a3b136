"""Bounded capture of a command's output: a head, a tail, and what the runner said.

A test suite can print megabytes; the sandbox keeps the first `head_bytes` and the last
`tail_bytes`, counts the rest, and scans every complete line as it streams past for
what is worth keeping from the middle: the test runner's failing names (capped) and its
final summary (`SummaryScanner`: pytest, unittest, jest, vitest, node, go, cargo).
Memory stays bounded whatever the command prints.
"""

from __future__ import annotations

from agent_loop_common.sandbox._result import OutputExcerpt, TestCounts
from agent_loop_common.sandbox._summaries import SummaryScanner

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
        self.scanner = SummaryScanner()
        """The runner summaries seen so far."""

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
        self.scanner.feed(line)

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

    def printed_counts(self) -> TestCounts | None:
        """Counts and failing names from the runner's printed summary, if it printed one."""
        return self.scanner.counts()
