"""The marked section of the lessons file: its markers, and its lines read and written.

A section is the text between `SECTION_START` and `SECTION_END`; each lesson is one line
`- [<id>] <text> _(evidence: ...)_`. Pure: the distiller writes it (`_publish`) and reads
people's edits of it (`_flow_back`).
"""

from __future__ import annotations

import re

__all__ = ["SECTION_END", "SECTION_START", "one_line", "parse_section", "splice_section"]

SECTION_START = "<!-- agent-loop:lessons:start -->"
SECTION_END = "<!-- agent-loop:lessons:end -->"
_LINE = re.compile(r"^- \[(?P<id>[^\]\s]+)\] (?P<text>.*?)(?: _\(evidence: .*\)_)?\s*$")


def one_line(text: str) -> str:
    """The lesson as one line of Markdown: whitespace collapsed, no HTML comment marks
    (a lesson's text must not close the section or hide the lines after it)."""
    return " ".join(text.replace("<!--", "").replace("-->", "").split())


def parse_section(content: str | None) -> dict[str, str] | None:
    """Lesson id -> text of the section's lesson lines; `None` when there is no section."""
    if content is None:
        return None
    start, end = content.find(SECTION_START), content.find(SECTION_END)
    if start < 0 or end < start:
        return None
    found: dict[str, str] = {}
    for line in content[start + len(SECTION_START) : end].splitlines():
        match = _LINE.match(line.strip())
        if match is not None and match["text"].strip():
            found[match["id"]] = one_line(match["text"])
    return found


def splice_section(content: str | None, section: str) -> str:
    """`content` with its marked section replaced by `section` (appended when absent)."""
    if not content:
        return section
    start, end = content.find(SECTION_START), content.find(SECTION_END)
    if start >= 0 and end > start:
        tail = content[end + len(SECTION_END) :].removeprefix("\n")
        return content[:start] + section + tail
    return content.rstrip("\n") + "\n\n" + section
