"""Typed JSON documents inside a store, with the records' versioning rule.

Same major, any minor: read, ignoring unknown fields. Newer major: `NewerSchemaError`,
because these documents have a single writer that would otherwise rewrite (downgrade)
what a newer version of itself wrote. Corrupt (not JSON, or not the model): read as
absent and reported (`report_problem`), so one bad document never stops every run; its
writer sets the bad bytes aside under `quarantine/` before writing a good one.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from flyte.ai.agents import MemoryStore
from pydantic import BaseModel, ValidationError

from agent_loop_common.memory._errors import NewerSchemaError, StoredSchemaError
from agent_loop_common.memory._problems import report_problem
from agent_loop_common.records import KNOWN_MAJORS, major_of

__all__ = ["QUARANTINE_PREFIX", "read_doc", "write_doc"]

QUARANTINE_PREFIX = "quarantine/"
"""Where a corrupt document's bytes are kept when its owner writes a good one."""

M = TypeVar("M", bound=BaseModel)


async def read_doc(
    store: MemoryStore, path: str, model: type[M], *, seen: dict[str, str] | None = None
) -> M | None:
    """Read `path` as `model`; `None` when the file does not exist or is corrupt.

    `seen`: the caller's record of the good documents it read (path -> text), which lets
    `write_doc` skip checking a document it replaces when it is still exactly that.

    Raises:
        NewerSchemaError: A newer major version wrote it (never downgrade it).
    """
    text = await store.read_text.aio(path, default="")
    if not text.strip():
        return None
    try:
        doc = _parse(store.key, path, text, model)
    except NewerSchemaError:
        raise
    except StoredSchemaError as exc:
        report_problem(f"memory document {exc} is corrupt; it was ignored (kept, set aside)")
        return None
    if seen is not None:
        seen[path] = text
    return doc


def _parse(key: str, path: str, text: str, model: type[M]) -> M:
    """The document as `model`, parsed and validated in one pass (`model_validate_json`:
    no intermediate Python objects, which matters for the larger documents such as the
    lesson-effect state); the raw JSON is only looked at again to say why it failed, or
    for the version of a model without a `schema_version` field."""
    try:
        doc = model.model_validate_json(text)
    except ValidationError as exc:
        _check_version(key, path, _loads(key, path, text))
        raise StoredSchemaError(key, path, _first_line(str(exc))) from exc
    version = getattr(doc, "schema_version", None)
    if version is None:
        _check_version(key, path, _loads(key, path, text))
    elif isinstance(version, str) and major_of(version) not in KNOWN_MAJORS:
        raise NewerSchemaError(key, path, f"unknown schema_version {version}")
    return doc


def _loads(key: str, path: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise StoredSchemaError(key, path, f"not JSON: {exc}") from exc


def _check_version(key: str, path: str, loaded: Any) -> None:
    """Raise `NewerSchemaError` when a newer major version wrote the document."""
    if isinstance(loaded, dict):
        version = cast(dict[str, Any], loaded).get("schema_version")
        if isinstance(version, str) and major_of(version) not in KNOWN_MAJORS:
            raise NewerSchemaError(key, path, f"unknown schema_version {version}")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


async def write_doc(
    store: MemoryStore,
    path: str,
    doc: BaseModel,
    *,
    actor: str,
    indent: int | None = 2,
    seen: dict[str, str] | None = None,
) -> None:
    """Write `doc` as indented JSON (readable in the store, diffable in reviews);
    `indent=None` for machine state nobody reads by hand (half the bytes to parse).

    A corrupt document already at `path` is first copied to `quarantine/<path>.<time>`,
    so what it held is never lost. A document this pass read as good (`seen`, filled by
    `read_doc`) and still unchanged is not parsed again.
    """
    old = await store.read_text.aio(path, default="")
    if old.strip() and (seen is None or seen.get(path) != old):
        try:
            _parse(store.key, path, old, type(doc))
        except NewerSchemaError:
            raise
        except StoredSchemaError:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
            aside = f"{QUARANTINE_PREFIX}{path}.{stamp}"
            await store.write_text.aio(aside, old, actor=actor)
            report_problem(f"memory document {store.key}:{path} was corrupt: set aside as {aside}")
    text = doc.model_dump_json(indent=indent)
    await store.write_text.aio(path, text, actor=actor)
    if seen is not None:
        seen[path] = text
