"""The local memory's files, read and written without Flyte (the idle tick's lean path).

Flyte's local mode keeps each `MemoryStore` key as a folder,
`<root>/agents/memory-store/v0/<org>/<project>/<domain>/<key>/` (the layout
`MemoryLocation.remote_path` names), holding per entry the file itself and a sidecar
`meta/<path, URL-quoted>.json` (sha256, time, writer, reason, bytes), plus the key's
`messages.json` transcript (`[]` for ours). `LocalKey` reads and writes exactly that, so
a tick that proves itself idle never imports Flyte, and what it writes the SDK reads
back (and the other way round; `tests` hold both directions). Writes replace each file
atomically (a temporary file, then a rename): a reader sees the old or the new file,
never half of one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, cast
from urllib.parse import quote

__all__ = ["LocalKey"]

_INTERNAL = ("meta", "audit", "versions", "messages.json")


@dataclass(frozen=True, slots=True)
class LocalKey:
    """One key of the local memory layout (a folder), without the SDK."""

    folder: Path
    """`<root>/agents/memory-store/v0/<org>/<project>/<domain>/<key>`."""

    @classmethod
    def at(cls, root: Path, *, org: str, project: str, domain: str, key: str) -> LocalKey:
        """The key's folder under a local storage root (`local_raw_data_path`)."""
        for part in (org, project, domain, key):
            if not part or "/" in part or part in (".", ".."):
                raise ValueError(f"not one path segment: {part!r}")
        return cls(root / "agents" / "memory-store" / "v0" / org / project / domain / key)

    def read_text(self, path: str) -> str | None:
        """The entry's text, or `None` when it does not exist."""
        try:
            return self._file(path).read_text("utf-8")
        except FileNotFoundError:
            return None

    def write_text(self, path: str, text: str, *, actor: str, reason: str = "") -> None:
        """Write the entry and its sidecar as `MemoryStore.write_text` then `save()` do."""
        target = self._file(path)
        data = text.encode("utf-8")
        entry = PurePosixPath(path).as_posix()
        meta: dict[str, str | int] = {
            "path": entry,
            "sha256": hashlib.sha256(data).hexdigest(),
            "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "updated_by": actor,
            "reason": reason,
            "bytes": len(data),
        }
        _replace(target, data)
        _replace(
            self._meta(entry),
            json.dumps(meta, indent=2).encode("utf-8"),
        )
        messages = self.folder / "messages.json"
        if not messages.exists():
            _replace(messages, b"[]")

    def sha256(self, path: str) -> str:
        """The entry's sha256 as its sidecar records it ('' when there is none)."""
        try:
            loaded: Any = json.loads(self._meta(PurePosixPath(path).as_posix()).read_text("utf-8"))
        except (FileNotFoundError, ValueError):
            return ""
        value: Any = (
            cast(dict[str, Any], loaded).get("sha256") if isinstance(loaded, dict) else None
        )
        return value if isinstance(value, str) else ""

    def _meta(self, entry: str) -> Path:
        return self.folder / "meta" / f"{quote(entry, safe='')}.json"

    def _file(self, path: str) -> Path:
        parts = PurePosixPath(path).parts
        if not parts or path.startswith("/") or ".." in parts or parts[0] in _INTERNAL:
            raise ValueError(f"not an entry path of a memory key: {path!r}")
        return self.folder.joinpath(*parts)


def _replace(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
