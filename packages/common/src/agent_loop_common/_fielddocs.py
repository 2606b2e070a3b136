"""The docstring under each field of a class, read from its source when someone asks.

The models keep a docstring under every field (the house style), but they do not ask
pydantic to copy them into `FieldInfo.description` (`use_attribute_docstrings`): that
reads and parses each model's source file with `inspect` at import, a tenth of a second
on every tick for text that only the settings table, a configuration error's message and
the distiller's report show. Those readers call `field_docs` instead.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
from functools import cache

__all__ = ["field_docs"]


@cache
def field_docs(cls: type) -> dict[str, str]:
    """`field name -> docstring` of `cls` and its bases (a subclass's docstring wins).

    A field's docstring is the string literal right after its annotated assignment, as
    PEP 257 and pydantic's `use_attribute_docstrings` read it. Classes whose source is not
    available (built-ins, a frozen install without sources) contribute nothing.
    """
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        docs.update(_own_docs(klass))
    return docs


def _own_docs(klass: type) -> dict[str, str]:
    try:
        source = textwrap.dedent(inspect.getsource(klass))
    except (OSError, TypeError):
        return {}
    tree = ast.parse(source)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    body: list[ast.stmt] = classes[0].body if classes else []
    docs: dict[str, str] = {}
    for stmt, after in itertools.pairwise(body):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[stmt.target.id] = inspect.cleandoc(after.value.value)
    return docs
