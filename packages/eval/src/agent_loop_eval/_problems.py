"""What is wrong with a file a person gave, or one of its lines, said in one line.

pydantic's own message of a failed validation is several lines per field, each with a
link to its documentation: on a terminal, for one bad line of an instances, predictions
or results file, that buries the one thing to fix. `validation_line` says it the way the
CLI says everything else: the missing fields by name, then the first few other problems.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

__all__ = ["read_text", "validation_line"]

_SHOWN = 3


def validation_line(exc: ValidationError) -> str:
    """`missing field(s) a, b; c: <why>` for a failed validation, in one line."""
    missing: list[str] = []
    others: list[str] = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        if error["type"] == "missing":
            missing.append(where)
        elif not where:  # the whole item: a list, a number, a string where an object goes
            others.append(f"not a JSON object ({error['msg'].lower()})")
        else:
            others.append(f"{where}: {error['msg'].lower()}")
    parts = [f"missing field(s) {', '.join(missing)}"] if missing else []
    parts += others[:_SHOWN]
    if len(others) > _SHOWN:
        parts.append(f"and {len(others) - _SHOWN} more")
    return "; ".join(parts) or str(exc).splitlines()[0]


def read_text(path: Path, what: str) -> str:
    """`path`'s text (UTF-8; a byte-order mark, as some editors write, is dropped).

    Raises:
        ValueError: It is not UTF-8 text (`<path>: not UTF-8 text; <what>`).
        OSError: It cannot be read.
    """
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start} is not); {what}") from None
