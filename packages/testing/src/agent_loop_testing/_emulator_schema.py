"""Check a JSON body against GitHub's schema as githubkit models it, strictly.

githubkit parses responses laxly: a misspelt or extra key, a number sent as a string or
a naive timestamp all pass. To keep the emulator honest (and to check any recorded
GitHub payload) this validates in pydantic's strict mode, then walks the JSON next to
the validated model to reject keys the schema does not declare, and requires every
timestamp to be in GitHub's `2026-01-01T00:00:01Z` form.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, cast

from pydantic import BaseModel, TypeAdapter

__all__ = ["SchemaMismatch", "assert_matches_schema"]

_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
_TIME_KEYS = ("_at", "date")


class SchemaMismatch(AssertionError):
    """The JSON does not match the model (strict types, declared keys, timestamps)."""


def _walk(data: object, value: object, path: str, allowed_extra: frozenset[str]) -> None:
    if isinstance(value, BaseModel):
        if not isinstance(data, dict):
            raise SchemaMismatch(f"{path}: expected an object for {type(value).__name__}")
        fields = type(value).model_fields
        by_alias = {(info.alias or name): name for name, info in fields.items()}
        obj = cast("dict[str, object]", data)
        extra = sorted(set(obj) - set(by_alias) - allowed_extra)
        # A schema with additionalProperties becomes a model that allows extra keys.
        if extra and type(value).model_config.get("extra") != "allow":
            raise SchemaMismatch(f"{path}: keys not in {type(value).__name__}: {extra}")
        for key, item in obj.items():
            if key in by_alias:
                _walk(item, getattr(value, by_alias[key]), f"{path}.{key}", frozenset())
    elif isinstance(value, list) and isinstance(data, list):
        for index, (item, model_item) in enumerate(
            zip(cast("list[object]", data), cast("list[object]", value), strict=True)
        ):
            _walk(item, model_item, f"{path}[{index}]", allowed_extra)


def _timestamps(data: object, path: str) -> None:
    if isinstance(data, dict):
        for key, item in cast("dict[str, object]", data).items():
            if isinstance(item, str) and key.endswith(_TIME_KEYS) and not _TIMESTAMP.match(item):
                raise SchemaMismatch(f"{path}.{key}: {item!r} is not GitHub's timestamp form")
            _timestamps(item, f"{path}.{key}")
    elif isinstance(data, list):
        for index, item in enumerate(cast("list[object]", data)):
            _timestamps(item, f"{path}[{index}]")


def assert_matches_schema(model: Any, raw: bytes | str, *, allow_keys: Iterable[str] = ()) -> Any:
    """Validate `raw` JSON against `model` (a githubkit model or a type such as
    `list[Issue]`) in strict mode; returns the parsed value.

    `allow_keys` names top-level keys GitHub sends that the schema omits (its error
    bodies carry `documentation_url` and `status` beyond `ValidationError`).
    """
    try:
        value = TypeAdapter(model).validate_json(raw, strict=True)
    except ValueError as exc:
        raise SchemaMismatch(str(exc)) from exc
    data: object = json.loads(raw)
    _walk(data, value, "$", frozenset(allow_keys))
    _timestamps(data, "$")
    return value
