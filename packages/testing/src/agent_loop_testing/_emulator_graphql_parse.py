"""A small GraphQL parser for the emulator: operations, variables, fields, fragments.

It reads what a client library sends (`query($x: Int!) { a(b: $x) { c ... on T { d } } }`)
into plain dataclasses, reporting malformed input the way GitHub does (`Parse error on
"}" at [1, 5]`). Named fragments and directives are refused with a clear message: no
client of the emulator needs them yet.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, cast

from agent_loop_testing._emulator_render import Json

__all__ = ["FieldNode", "FragmentNode", "Operation", "Parser", "QueryFailure", "Var"]

_TOKEN = re.compile(
    r"(?P<skip>[\s,\ufeff]+|#[^\n]*)"
    r'|(?P<string>"(?:[^"\\\n]|\\.)*")'
    r"|(?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[_A-Za-z][_0-9A-Za-z]*)"
    r"|(?P<punct>\.\.\.|[!$():=@\[\]{|}])"
)


class QueryFailure(Exception):
    """A request-level error: the answer is `{"errors": [error]}` without data."""

    def __init__(self, message: str, line: int = 0, column: int = 0, **extra: Any) -> None:
        super().__init__(message)
        self.error: Json = {"message": message, **extra}
        if line:
            self.error["locations"] = [{"line": line, "column": column}]


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    line: int
    column: int


def lex(source: str) -> list[Token]:
    tokens: list[Token] = []
    pos, line, line_start = 0, 1, 0
    while pos < len(source):
        match = _TOKEN.match(source, pos)
        column = pos - line_start + 1
        if match is None:
            raise QueryFailure(
                f'Parse error on "{source[pos]}" at [{line}, {column}]', line, column
            )
        kind = match.lastgroup or ""
        text = match.group()
        if kind != "skip":
            tokens.append(Token(kind, text, line, column))
        newlines = text.count("\n")
        if newlines:
            line += newlines
            line_start = match.start() + text.rfind("\n") + 1
        pos = match.end()
    tokens.append(Token("end", "", line, pos - line_start + 1))
    return tokens


@dataclass(frozen=True)
class Var:
    name: str


@dataclass
class FieldNode:
    alias: str
    name: str
    args: dict[str, object]
    selections: list[FieldNode | FragmentNode] | None
    line: int
    column: int


@dataclass
class FragmentNode:
    type_condition: str | None
    selections: list[FieldNode | FragmentNode]


@dataclass
class Operation:
    kind: str
    name: str | None
    variables: dict[str, tuple[str, object]] = field(default_factory=dict[str, tuple[str, object]])
    """Variable name -> (type as written, default value)."""
    selections: list[FieldNode | FragmentNode] = field(
        default_factory=list[FieldNode | FragmentNode]
    )


class Parser:
    def __init__(self, source: str) -> None:
        self.tokens = lex(source)
        self.pos = 0

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def fail(self, tok: Token) -> QueryFailure:
        what = "end of file" if tok.kind == "end" else f'"{tok.text}"'
        return QueryFailure(
            f"Parse error on {what} at [{tok.line}, {tok.column}]", tok.line, tok.column
        )

    def take(self, text: str | None = None, kind: str | None = None) -> Token:
        tok = self.peek()
        if (text is not None and tok.text != text) or (kind is not None and tok.kind != kind):
            raise self.fail(tok)
        if tok.kind == "end":
            raise self.fail(tok)
        self.pos += 1
        return tok

    def accept(self, text: str) -> bool:
        if self.peek().text == text and self.peek().kind != "string":
            self.pos += 1
            return True
        return False

    def document(self) -> list[Operation]:
        operations: list[Operation] = []
        while self.peek().kind != "end":
            operations.append(self.operation())
        if not operations:
            raise self.fail(self.peek())
        return operations

    def operation(self) -> Operation:
        tok = self.peek()
        if tok.text == "{":
            return Operation("query", None, selections=self.selection_set())
        if tok.text == "fragment":
            raise QueryFailure(
                "Named fragments are not supported by the emulator", tok.line, tok.column
            )
        kind = self.take(kind="name").text
        if kind not in ("query", "mutation", "subscription"):
            raise self.fail(tok)
        name = self.take(kind="name").text if self.peek().kind == "name" else None
        op = Operation(kind, name)
        if self.accept("("):
            while not self.accept(")"):
                self.take("$")
                var = self.take(kind="name").text
                self.take(":")
                var_type = self.type_ref()
                default = self.value() if self.accept("=") else None
                op.variables[var] = (var_type, default)
        if self.peek().text == "@":
            raise QueryFailure("Directives are not supported by the emulator", tok.line, tok.column)
        op.selections = self.selection_set()
        return op

    def type_ref(self) -> str:
        if self.accept("["):
            inner = self.type_ref()
            self.take("]")
            text = f"[{inner}]"
        else:
            text = self.take(kind="name").text
        return text + "!" if self.accept("!") else text

    def selection_set(self) -> list[FieldNode | FragmentNode]:
        self.take("{")
        selections: list[FieldNode | FragmentNode] = []
        while not self.accept("}"):
            selections.append(self.selection())
        if not selections:
            raise self.fail(self.tokens[self.pos - 1])
        return selections

    def selection(self) -> FieldNode | FragmentNode:
        tok = self.peek()
        if self.accept("..."):
            condition = None
            if self.peek().text == "on":
                self.take("on")
                condition = self.take(kind="name").text
            elif self.peek().kind == "name":
                raise QueryFailure(
                    "Named fragments are not supported by the emulator", tok.line, tok.column
                )
            return FragmentNode(condition, self.selection_set())
        name = self.take(kind="name")
        alias, field_name = name.text, name.text
        if self.accept(":"):
            field_name = self.take(kind="name").text
        args: dict[str, object] = {}
        if self.accept("("):
            while not self.accept(")"):
                arg = self.take(kind="name").text
                self.take(":")
                args[arg] = self.value()
        if self.peek().text == "@":
            raise QueryFailure("Directives are not supported by the emulator", tok.line, tok.column)
        selections = self.selection_set() if self.peek().text == "{" else None
        return FieldNode(alias, field_name, args, selections, name.line, name.column)

    def value(self) -> object:
        tok = self.peek()
        if self.accept("$"):
            return Var(self.take(kind="name").text)
        if tok.kind == "string":
            self.pos += 1
            return cast("str", json.loads(tok.text))
        if tok.kind == "number":
            self.pos += 1
            return float(tok.text) if any(c in tok.text for c in ".eE") else int(tok.text)
        if tok.kind == "name":
            self.pos += 1
            return {"true": True, "false": False, "null": None}.get(tok.text, tok.text)
        if self.accept("["):
            items: list[object] = []
            while not self.accept("]"):
                items.append(self.value())
            return items
        if self.accept("{"):
            fields: dict[str, object] = {}
            while not self.accept("}"):
                key = self.take(kind="name").text
                self.take(":")
                fields[key] = self.value()
            return fields
        raise self.fail(tok)
