"""Errors raised by the memory helpers.

```text
AgentMemoryError
├── LocationError      the location (root, org, key) cannot address a store
└── StoredSchemaError  a single-writer document cannot be read
    └── NewerSchemaError  written by a newer major: refuse to overwrite it
```

Run records never raise: `parse_record` classifies them and the ingest pass counts the
ones it cannot read. Documents with one writer (ledger, lessons, rollups) do raise:
rewriting a newer-major ledger with an older distiller would silently downgrade it.
"""

from __future__ import annotations

__all__ = ["AgentMemoryError", "LocationError", "NewerSchemaError", "StoredSchemaError"]


class AgentMemoryError(Exception):
    """Base class of memory helper errors."""


class LocationError(AgentMemoryError, ValueError):
    """The memory location cannot address a store."""


class StoredSchemaError(AgentMemoryError):
    """A stored document does not validate against its model."""

    def __init__(self, key: str, path: str, detail: str) -> None:
        super().__init__(f"{key}:{path}: {detail}")
        self.key = key
        self.path = path


class NewerSchemaError(StoredSchemaError):
    """A stored document has a major version this code does not know."""
