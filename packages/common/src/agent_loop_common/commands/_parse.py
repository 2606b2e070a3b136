"""Find `/agent-loop <word>` commands in a comment body, the way a reader sees them.

A command counts only where a person reading the rendered comment sees it as one: at
the start of a line (up to three spaces of indent, as Markdown allows), outside fenced
and indented code blocks, outside quoted (`>`) lines, and outside HTML comments (hidden
when rendered). So quoting someone's `/agent-loop stop` in a reply, pasting a log that
contains one, or explaining the syntax in backticks never acts. Anything after the word
on the line is kept as the command's `rest` and otherwise ignored.

Pure: text in, commands out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal, get_args

__all__ = ["COMMAND_PREFIX", "KNOWN_WORDS", "Command", "CommandWord", "parse_commands"]

COMMAND_PREFIX: Final = "/agent-loop"
"""What every command line starts with."""

CommandWord = Literal["build", "review", "stop", "resume", "status"]
"""The words the agents understand."""

KNOWN_WORDS: Final[tuple[CommandWord, ...]] = get_args(CommandWord)

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_QUOTE = re.compile(r"^ {0,3}>")
_INDENTED = re.compile(r"^(?: {4,}|\t)")
_COMMAND = re.compile(r"^ {0,3}/agent-loop(?=\s|$)[ \t]*(\S*)(.*)$", re.IGNORECASE)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_TRAILING_PUNCTUATION = ".,;:!?"


@dataclass(frozen=True, slots=True)
class Command:
    """One command line in a comment."""

    word: str
    """The word after the prefix, lowercased (empty when the line has none)."""
    rest: str = ""
    """Whatever followed the word on the line (ignored by the agents)."""
    line: int = 0
    """Line number in the body, from 0."""

    @property
    def known(self) -> bool:
        """Whether the agents understand this word."""
        return self.word in KNOWN_WORDS


def _visible(body: str) -> str:
    """The body without HTML comments; an unclosed one hides the rest, as when rendered."""
    text = _HTML_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), body)
    start = text.find("<!--")
    return text if start < 0 else text[:start]


def parse_commands(body: str) -> tuple[Command, ...]:
    """Every command in `body`, in order (see the module docstring for what counts).

    Args:
        body: A comment's Markdown source.

    Returns:
        The commands found; unknown words are kept (`known` is False) so the agents can
        answer them with the list of commands.
    """
    found: list[Command] = []
    fence: str | None = None
    for number, line in enumerate(_visible(body.replace("\r\n", "\n")).split("\n")):
        if fence is not None:
            close = _FENCE.match(line)
            if (
                close
                and close.group(1)[0] == fence[0]
                and len(close.group(1)) >= len(fence)
                and not line[close.end() :].strip()
            ):
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            continue
        if _QUOTE.match(line) or _INDENTED.match(line):
            continue
        match = _COMMAND.match(line)
        if match is None:
            continue
        word = match.group(1).lower().rstrip(_TRAILING_PUNCTUATION)
        found.append(Command(word=word, rest=match.group(2).strip(), line=number))
    return tuple(found)
