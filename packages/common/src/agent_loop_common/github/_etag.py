"""Conditional requests for polled reads: an idle poll costs 304s, which GitHub does not bill.

`ETagCache` keeps, per URL, the last `ETag` and body (and the `Link` header, so a
paginated listing answered 304 still walks its next pages). `ETagTransport` sends
`If-None-Match` and turns a 304 back into the cached 200, so githubkit parses as usual
and never knows. The cache survives runs through `dump()`/`load()` (the memory helper
stores it in MemoryStore); `changed` tells the caller whether saving is worth it.

`ReadLog` keeps what a run asked: each polled read with the `ETag` it ended on, and every
other request. A run whose requests were all polled reads can later be re-checked with
conditional requests alone (`agent_loop_common.runtime.fast_idle_tick`): all 304 means
GitHub would answer it exactly as before.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, cast

import httpx

from agent_loop_common.github._routes import Router

_FORMAT = 1


@dataclass(frozen=True)
class _Entry:
    etag: str
    body: str
    link: str | None

    @property
    def size(self) -> int:
        return len(self.body) + len(self.etag) + len(self.link or "")


class ETagCache:
    """Bounded LRU of `url -> (ETag, body, Link)`, serializable to a small JSON dict."""

    def __init__(self, *, max_entries: int = 256, max_bytes: int = 2_000_000) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("max_entries and max_bytes must be positive")
        self.max_entries = max_entries
        """Most URLs kept; the least recently used go first."""
        self.max_bytes = max_bytes
        """Most characters of bodies kept in total (a larger single body is not cached)."""
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0
        self._changed = False

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def changed(self) -> bool:
        """Whether entries were added, replaced or evicted since load or `mark_saved()`."""
        return self._changed

    def mark_saved(self) -> None:
        """Call after persisting `dump()`: `changed` goes back to False."""
        self._changed = False

    def get(self, url: str) -> tuple[str, str, str | None] | None:
        """`(etag, body, link)` for `url`, refreshing its recency; None when unknown."""
        entry = self._entries.get(url)
        if entry is None:
            return None
        self._entries.move_to_end(url)
        return entry.etag, entry.body, entry.link

    def put(self, url: str, etag: str, body: str, link: str | None = None) -> None:
        """Remember a 200 answer; evicts least recently used entries beyond the bounds."""
        entry = _Entry(etag, body, link)
        old = self._entries.get(url)
        if old == entry:
            self._entries.move_to_end(url)
            return
        self._drop(url)
        if entry.size > self.max_bytes:
            return
        self._entries[url] = entry
        self._bytes += entry.size
        self._changed = True
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            self._drop(next(iter(self._entries)))

    def _drop(self, url: str) -> None:
        entry = self._entries.pop(url, None)
        if entry is not None:
            self._bytes -= entry.size
            self._changed = True

    def dump(self) -> dict[str, Any]:
        """JSON-ready form, least recently used first (`load` restores the order)."""
        return {
            "format": _FORMAT,
            "entries": [[url, e.etag, e.body, e.link] for url, e in self._entries.items()],
        }

    @classmethod
    def load(cls, data: object, *, max_entries: int = 256, max_bytes: int = 2_000_000) -> ETagCache:
        """Rebuild from `dump()` output; anything unreadable yields an empty cache.

        A cache is an optimisation: a corrupt or foreign file must cost requests, never
        a failed run.
        """
        cache = cls(max_entries=max_entries, max_bytes=max_bytes)
        if not isinstance(data, dict):
            return cache
        raw = cast("dict[str, Any]", data)
        entries: Any = raw.get("entries")
        if raw.get("format") != _FORMAT or not isinstance(entries, list):
            return cache
        for item in cast("list[Any]", entries):
            if not isinstance(item, list) or len(cast("list[Any]", item)) != 4:
                continue
            url, etag, body, link = cast("list[Any]", item)
            if (
                isinstance(url, str)
                and isinstance(etag, str)
                and isinstance(body, str)
                and (link is None or isinstance(link, str))
            ):
                cache.put(url, etag, body, link)
        cache.mark_saved()
        return cache


_DROP_HEADERS = ("content-encoding", "content-length", "transfer-encoding")

REREAD_HEADERS = ("accept", "x-github-api-version")
"""Request headers a re-check must repeat: GitHub's answer (and ETag) depends on them."""


@dataclass(frozen=True, slots=True)
class PolledRead:
    """One polled read of a run: where, the `ETag` it ended on, the headers it sent."""

    url: str
    etag: str
    headers: tuple[tuple[str, str], ...] = ()
    """The `REREAD_HEADERS` the request carried, as `(name, value)`."""


@dataclass
class ReadLog:
    """Every request of a run: polled reads with their final `ETag`, and the rest."""

    polled: dict[str, PolledRead] = field(default_factory=dict[str, PolledRead])
    """Polled reads answered 200 with an `ETag` or 304, by URL (the last answer wins)."""
    other: list[str] = field(default_factory=list[str])
    """`METHOD url` of every other request (writes, GraphQL, unpolled or failed reads):
    what no conditional request can re-check."""

    @property
    def only_polled(self) -> bool:
        """Whether conditional requests alone could re-check everything the run read."""
        return not self.other and bool(self.polled)


class ETagTransport(httpx.AsyncBaseTransport):
    """Adds `If-None-Match` to polled reads and serves 304s from the cache."""

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        cache: ETagCache,
        router: Router,
        log: ReadLog | None = None,
    ) -> None:
        self._inner = inner
        self._cache = cache
        self._router = router
        self.log = log if log is not None else ReadLog()
        """What this transport's requests were (see `ReadLog`)."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        key = str(request.url)
        polled = self._router.is_polled(request.method, self._router.route(request))
        if polled:
            response = await self._polled(request, key)
        else:
            response = await self._inner.handle_async_request(request)
        etag = response.headers.get("etag")
        if polled and response.status_code == 200 and etag:
            headers = tuple((h, request.headers[h]) for h in REREAD_HEADERS if h in request.headers)
            self.log.polled[key] = PolledRead(key, etag, headers)
        else:
            self.log.polled.pop(key, None)
            self.log.other.append(f"{request.method} {key}")
        return response

    async def _polled(self, request: httpx.Request, key: str) -> httpx.Response:
        """A polled read (`key`: its URL): conditional, a 304 served from the cache."""
        cached = self._cache.get(key)
        if cached is not None and "if-none-match" not in request.headers:
            request.headers["If-None-Match"] = cached[0]
        response = await self._inner.handle_async_request(request)
        if response.status_code == 304 and cached is not None:
            await response.aclose()
            etag, body, link = cached
            headers = {k: v for k, v in response.headers.items() if k not in _DROP_HEADERS}
            headers.update({"content-type": "application/json; charset=utf-8", "etag": etag})
            if link is not None:
                headers["link"] = link
            return httpx.Response(
                200,
                headers=headers,
                content=body.encode(),
                extensions={**response.extensions, "agent_loop_not_modified": True},
                request=request,
            )
        etag = response.headers.get("etag")
        if response.status_code != 200 or etag is None:
            return response
        content = await response.aread()
        self._cache.put(key, etag, content.decode("utf-8", "replace"), response.headers.get("link"))
        headers = {k: v for k, v in response.headers.items() if k not in _DROP_HEADERS}
        return httpx.Response(
            200,
            headers=headers,
            content=content,
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        """No-op: the facade closes the transport it created, once."""
