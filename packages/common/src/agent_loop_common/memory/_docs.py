"""Typed JSON documents inside a store, with the records' versioning rule.

Same major, any minor: read, ignoring unknown fields. Newer major: `NewerSchemaError`,
because these documents have a single writer that would otherwise rewrite (downgrade)
what a newer version of itself wrote.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar, cast

from flyte.ai.agents import MemoryStore
from pydantic import BaseModel, ValidationError

from agent_loop_common.memory._errors import NewerSchemaError, StoredSchemaError
from agent_loop_common.records import KNOWN_MAJORS, major_of

__all__ = ["read_doc", "write_doc"]

M = TypeVar("M", bound=BaseModel)


async def read_doc(store: MemoryStore, path: str, model: type[M]) -> M | None:
    """Read `path` as `model`; `None` when the file does not exist."""
    text = await store.read_text.aio(path, default="")
    if not text.strip():
        return None
    try:
        loaded: Any = json.loads(text)
    except ValueError as exc:
        raise StoredSchemaError(store.key, path, f"not JSON: {exc}") from exc
    if isinstance(loaded, dict):
        version = cast(dict[str, Any], loaded).get("schema_version")
        if isinstance(version, str) and major_of(version) not in KNOWN_MAJORS:
            raise NewerSchemaError(store.key, path, f"unknown schema_version {version}")
    try:
        return model.model_validate(loaded)
    except ValidationError as exc:
        raise StoredSchemaError(store.key, path, str(exc)) from exc


async def write_doc(store: MemoryStore, path: str, doc: BaseModel, *, actor: str) -> None:
    """Write `doc` as indented JSON (readable in the store, diffable in reviews)."""
    await store.write_text.aio(path, doc.model_dump_json(indent=2), actor=actor)
