"""Addressing and moving whole stores: the only module that touches `MemoryStore` I/O.

Two ways to open a key, both through the public `MemoryStore` API:

- `open_store`: download the whole key (what `MemoryStore.get_or_create` does), for
  reading or read-modify-write by the key's single writer. A missing key is an empty
  store and is *not* created remotely: readers never write.
- `append_store`: a fresh local store bound to the key, *without* downloading it.
  `save()` uploads only the files written through this handle (it uploads the local
  root, which holds only them) and never deletes remote files, so a writer of a unique
  path pays O(1) I/O whatever the key holds, and concurrent writers of distinct paths
  never lose each other's files.

The remote path is `<root>/agents/memory-store/v0/<org>/<project>/<domain>/<key>`, the
layout `MemoryStore.remote_path_for_key` uses. With an explicit `root` the helpers work
anywhere (inside a task or plain async code; the SDK's own keyed constructors need a
Flyte task context for the root). With `root=None` the SDK resolves it from the
running task (remote deployments, where the root is the bucket).
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import tempfile
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import flyte.storage
from flyte.ai.agents import MemoryStore
from flyte.io import Dir

from agent_loop_common.memory._errors import LocationError
from agent_loop_common.memory._layout import DEFAULT_PREFIX, Keys, repo_prefix

if TYPE_CHECKING:
    from agent_loop_common.settings import Settings

__all__ = ["IoMeter", "MemoryLocation", "append_store", "open_store", "save_store"]

_SEGMENT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# `flyte.storage.exists` takes untyped **kwargs; pin the one signature used here.
_exists = cast(
    Callable[[str], Awaitable[bool]],
    flyte.storage.exists,  # pyright: ignore[reportUnknownMemberType]
)


@dataclass
class IoMeter:
    """Counts what the helpers moved, for benchmarks and run records."""

    downloads: int = 0
    """Keys downloaded (`open_store` of an existing key)."""
    files_in: int = 0
    """Files downloaded (including the SDK's `meta/` sidecars and `messages.json`)."""
    bytes_in: int = 0
    """Bytes downloaded."""
    uploads: int = 0
    """Saves."""
    files_out: int = 0
    """Files uploaded."""
    bytes_out: int = 0
    """Bytes uploaded."""
    exists_checks: int = 0
    """Existence probes of keys."""

    def reset(self) -> None:
        """Zero every counter."""
        for name in self.__dataclass_fields__:
            setattr(self, name, 0)


@dataclass(frozen=True)
class MemoryLocation:
    """Where the loop's memory lives: Flyte org/project/domain, storage root, key prefix."""

    org: str
    """Flyte organization (local mode needs one; any name works)."""
    project: str
    """Flyte project."""
    domain: str
    """Flyte domain."""
    root: str | None = None
    """Storage root: in local mode the `raw_data_path` given to `flyte.with_runcontext`;
    `None` to resolve it from the running Flyte task (needed on a cluster)."""
    prefix: str = DEFAULT_PREFIX
    """Prefix of every key, so several loops can share one project."""
    meter: IoMeter = field(default_factory=IoMeter, compare=False, repr=False)
    """I/O counters of every helper call made with this location."""

    def __post_init__(self) -> None:
        for name in ("org", "project", "domain"):
            if not _SEGMENT_RE.match(getattr(self, name)):
                raise LocationError(f"{name} must be one path segment: {getattr(self, name)!r}")
        if self.root is not None:
            parts = self.root.rstrip("/").split("/")
            # The SDK strips a trailing `rd/<x>` or `raw_data/<x>` from the context's raw
            # data path; an explicit root shaped like that would address other stores
            # than the SDK's own keyed constructors in the same task.
            if len(parts) >= 2 and parts[-2] in ("rd", "raw_data"):
                raise LocationError(f"root must not end in rd/<x> or raw_data/<x>: {self.root}")
        Keys(self.prefix)

    @classmethod
    def from_settings(cls, settings: Settings, root: str | None = None) -> MemoryLocation:
        """Where the memory stores live: the Flyte org/project/domain and key prefix set.

        With `AGENT_LOOP_REPOS` and a repository chosen (`Settings.for_repo`), that
        repository's own namespace (`repo_prefix`); with `AGENT_LOOP_REPO` the prefix
        itself, so a one-repository deployment keeps the layout it always had.

        Args:
            root: Storage root; in local mode the `raw_data_path` given to
                `flyte.with_runcontext`. `None`: resolved from the running task.
        """
        prefix = settings.memory_key_prefix
        if settings.many_repos and settings.repo:
            prefix = repo_prefix(prefix, settings.repo)
        return cls(
            org=settings.flyte_org,
            project=settings.flyte_project,
            domain=settings.flyte_domain,
            root=root,
            prefix=prefix,
        )

    @classmethod
    def shared_from_settings(
        cls, settings: Settings, root: str | None = None
    ) -> MemoryLocation | None:
        """With `AGENT_LOOP_REPOS`: the bare-prefix location the repositories share (the
        general lessons, the turns of the fair rotation); `None` with `AGENT_LOOP_REPO`."""
        if not settings.many_repos:
            return None
        return cls.from_settings(settings.model_copy(update={"repo": ""}), root)

    @property
    def keys(self) -> Keys:
        """Key names under this location's prefix."""
        return Keys(self.prefix)

    def remote_path(self, key: str) -> str:
        """The durable path of a key (the same one `MemoryStore.remote_path_for_key` gives)."""
        if self.root is None:
            return MemoryStore.remote_path_for_key(
                key=key, org=self.org, project=self.project, domain=self.domain
            )
        if not _SEGMENT_RE.match(key):
            raise LocationError(f"key must be one path segment: {key!r}")
        parts = ("agents", "memory-store", "v0", self.org, self.project, self.domain, key)
        return "/".join([self.root.rstrip("/"), *parts])


def _tree_size(root: pathlib.Path) -> tuple[int, int]:
    files = size = 0
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            files += 1
            size += os.path.getsize(os.path.join(dirpath, name))
    return files, size


async def open_store(
    location: MemoryLocation, key: str, *, read_only_prefixes: tuple[str, ...] = ()
) -> MemoryStore:
    """Download a whole key into a fresh local store (empty if the key does not exist)."""
    remote = location.remote_path(key)
    location.meter.exists_checks += 1
    if not (await _exists(f"{remote}/messages.json") or await _exists(remote)):
        return MemoryStore(
            key=key, remote_path=remote, read_only_prefixes=read_only_prefixes, audit=False
        )
    local = pathlib.Path(tempfile.mkdtemp(prefix="agent_loop_mem_"))
    await Dir.from_existing_remote(remote).download(local_path=str(local))
    files, size = _tree_size(local)
    location.meter.downloads += 1
    location.meter.files_in += files
    location.meter.bytes_in += size
    store = MemoryStore(
        key=key,
        root=local,
        remote_path=remote,
        read_only_prefixes=read_only_prefixes,
        audit=False,
    )
    weakref.finalize(store, shutil.rmtree, local, True)
    return store


def append_store(location: MemoryLocation, key: str) -> MemoryStore:
    """A local store bound to `key` that uploads only what is written through it."""
    return MemoryStore(key=key, remote_path=location.remote_path(key), audit=False)


async def save_store(location: MemoryLocation, store: MemoryStore) -> None:
    """`store.save()`, counted. Uploads the store's whole local root."""
    await store.save.aio()
    # Measured after the save: it flushes `messages.json` into the root, then uploads it all.
    files, size = _tree_size(pathlib.Path(str(store.root)))
    location.meter.uploads += 1
    location.meter.files_out += files
    location.meter.bytes_out += size
