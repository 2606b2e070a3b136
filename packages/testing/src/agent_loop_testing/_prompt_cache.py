"""`SimulatedPromptCache`: a provider's prompt cache, the way Anthropic documents it.

What it simulates (Anthropic's prompt caching, as documented):

- A request is a sequence of content blocks in prefix order: the tool definitions, the
  system blocks, then each message's blocks. A block carrying `cache_control` is a
  breakpoint: the prefix up to and including it is written to the cache.
- A later request reads the longest cached prefix it starts with, found at the block
  boundaries at most `LOOKBACK_BLOCKS` (20) before each of its breakpoints; a read
  refreshes that entry's time to live (five minutes by default).
- A prefix shorter than `min_tokens` (1,024, the Sonnet and Opus minimum) is neither
  written nor read.
- The usage reports `cache_read_input_tokens` (the prefix read), `cache_creation_input_tokens`
  (from there to the last breakpoint, written now) and `input_tokens` (the rest).

Tokens are counted with a deterministic approximation, not a tokenizer: one token per
four characters (rounded up) of each block's canonical JSON (sorted keys, no spaces),
its `cache_control` left out, so the same block always weighs the same and a marker
moving does not change the count. Real counts differ by a constant factor, which the
shares and ratios the benchmark reports do not depend on.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

__all__ = [
    "CHARS_PER_TOKEN",
    "LOOKBACK_BLOCKS",
    "CacheCharge",
    "SimulatedPromptCache",
    "approx_tokens",
    "request_blocks",
]

CHARS_PER_TOKEN = 4
"""The approximation: characters of canonical JSON per token."""

LOOKBACK_BLOCKS = 20
"""How many block boundaries before a breakpoint are checked for a cached prefix."""


def approx_tokens(block: Mapping[str, Any]) -> int:
    """The approximate tokens of one content block (`cache_control` left out)."""
    return math.ceil(len(_canonical(block)) / CHARS_PER_TOKEN)


def _canonical(block: Mapping[str, Any]) -> str:
    return json.dumps(_unmarked(block), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _unmarked(value: object) -> object:
    if isinstance(value, Mapping):
        fields = cast("Mapping[str, object]", value)
        return {k: _unmarked(v) for k, v in fields.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in cast("list[object]", value)]
    return value


def _marked(value: object) -> bool:
    """Whether a block carries `cache_control`, itself or in a nested block (a tool
    result's text)."""
    if isinstance(value, Mapping):
        fields = cast("Mapping[str, object]", value)
        if fields.get("cache_control") is not None:
            return True
        nested: list[object] = [v for v in fields.values() if isinstance(v, list | Mapping)]
        return any(_marked(v) for v in nested)
    if isinstance(value, list):
        return any(_marked(v) for v in cast("list[object]", value))
    return False


def request_blocks(body: Mapping[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    """A Messages API request's blocks in cache prefix order, each with whether it is a
    breakpoint: the tools, the system blocks, then every message's content blocks (each
    tagged with its message's role, which is part of what a prefix is)."""
    out: list[tuple[dict[str, Any], bool]] = [
        ({"tool": tool}, _marked(tool))
        for tool in cast("list[dict[str, Any]]", body.get("tools") or [])
    ]
    system = body.get("system")
    if isinstance(system, str) and system:
        out.append(({"system": {"type": "text", "text": system}}, False))
    elif isinstance(system, list):
        out.extend(({"system": b}, _marked(b)) for b in cast("list[dict[str, Any]]", system))
    for message in cast("list[dict[str, Any]]", body.get("messages") or []):
        role = str(message.get("role", ""))
        content = message.get("content")
        if isinstance(content, str):
            out.append(({role: {"type": "text", "text": content}}, False))
            continue
        out.extend(({role: b}, _marked(b)) for b in cast("list[dict[str, Any]]", content or []))
    return out


@dataclass(frozen=True)
class CacheCharge:
    """What one request is charged, in the usage fields Anthropic reports."""

    input_tokens: int
    """Tokens after the cached and the written prefix (billed at the input price)."""
    cache_read_input_tokens: int
    """The prefix read from the cache (billed at 0.1x)."""
    cache_creation_input_tokens: int
    """The prefix written to the cache by this request (billed at 1.25x)."""

    @property
    def prompt_tokens(self) -> int:
        """All input tokens of the request."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


@dataclass
class SimulatedPromptCache:
    """One organization's prompt cache (see the module docstring). Thread-safe enough
    for a test server: every request is charged under the server's own event loop."""

    ttl_seconds: float = 300.0
    """How long an entry lives after its last write or read."""
    min_tokens: int = 1_024
    """The shortest prefix that is cached."""
    clock: Callable[[], float] = time.monotonic
    """Seconds, for the time to live (a test passes its own)."""
    _entries: dict[str, float] = field(default_factory=dict[str, float])

    def charge(self, body: Mapping[str, Any]) -> CacheCharge:
        """Charge one request: read the longest cached prefix, write its breakpoints."""
        return self.charge_blocks(request_blocks(body))

    def charge_blocks(self, blocks: Sequence[tuple[Mapping[str, Any], bool]]) -> CacheCharge:
        """`charge` for blocks already in prefix order, each with its breakpoint flag."""
        now = self.clock()
        self._entries = {k: t for k, t in self._entries.items() if t > now}
        keys: list[str] = []
        sums: list[int] = []
        digest = hashlib.sha256()
        total = 0
        for block, _ in blocks:
            digest.update(_canonical(block).encode())
            keys.append(digest.copy().hexdigest())
            total += approx_tokens(block)
            sums.append(total)
        breakpoints = [i for i, (_, marked) in enumerate(blocks) if marked]
        hit = -1
        for point in breakpoints:
            for index in range(point, max(-1, point - LOOKBACK_BLOCKS - 1), -1):
                if index > hit and keys[index] in self._entries:
                    hit = index
                    break
        read = sums[hit] if hit >= 0 else 0
        if hit >= 0:
            self._entries[keys[hit]] = now + self.ttl_seconds
        written_to = hit
        for point in breakpoints:
            if sums[point] >= self.min_tokens:
                self._entries[keys[point]] = now + self.ttl_seconds
                written_to = max(written_to, point)
        write = sums[written_to] - read if written_to > hit else 0
        return CacheCharge(
            input_tokens=total - read - write,
            cache_read_input_tokens=read,
            cache_creation_input_tokens=write,
        )
