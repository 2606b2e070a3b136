"""What a full idle tick leaves for the next tick to prove that nothing changed. Pure.

A builder or reviewer tick that found nothing to do decided so from GitHub's answers,
the settings, the memory its own role writes, and the clock. `IdleProof` records what a
later tick needs to show that decision still holds without taking it again:

- `reads`: every GitHub request the decision made, each a polled read with the `ETag`
  it ended on. Conditional requests that all answer 304 (free: GitHub does not bill
  them) show GitHub would answer every one of them as before. A tick that made any other
  request (a write, a GraphQL query, a read outside the ETag cache) leaves no proof.
- `settings`: a fingerprint of the settings; any changed setting (labels, limits, trust
  rule, branch prefix) means the decision must be taken again.
- `recheck_at`: when a time-based rule could change the decision (a claim expiring, a
  back-off ending); the selection lowers it (`Runtime.depends_on_time`), and it is never
  later than `PROOF_MAX_AGE` after the decision, so a full tick still runs at least that
  often.
- the memory: every tick of the role that is not provably idle (work, a refusal, a
  targeted run, a pause, an error) overwrites the proof with a void one, so a mark or
  back-off it wrote in memory is never outlived by an older proof.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from agent_loop_common.records import Role

__all__ = [
    "PROOF_MAX_AGE",
    "PROVABLY_IDLE_ROLES",
    "VOID_PROOF",
    "IdleProof",
    "ProvenRead",
    "settings_fingerprint",
]

PROOF_FORMAT = 1

PROVABLY_IDLE_ROLES = frozenset({Role.BUILDER, Role.REVIEWER})
"""The roles whose idle ticks leave a proof (the distiller always runs in full)."""

PROOF_MAX_AGE = timedelta(hours=1)
"""How long a proof can stand at most: a full tick runs at least this often."""

VOID_PROOF = "{}"
"""What a tick that is not provably idle writes over the last proof."""


@dataclass(frozen=True, slots=True)
class ProvenRead:
    """One GitHub read of the decision: its URL, final `ETag` and the headers it sent."""

    url: str
    etag: str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class IdleProof:
    """The evidence of one full idle tick (see the module docstring)."""

    role: str
    """The agent that decided (`builder`, `reviewer`)."""
    repo: str
    """The repository (`owner/name`) the decision was about."""
    settings: str
    """`settings_fingerprint` of the settings of the decision."""
    reads: tuple[ProvenRead, ...]
    """Every request the decision made."""
    decided_at: datetime
    """When the full tick decided."""
    recheck_at: datetime
    """From this time on the proof no longer stands."""
    note: str
    """The idle tick's note (`no eligible issue`), repeated by every proven tick."""

    def holds_at(self, now: datetime) -> bool:
        """Whether no time-based rule can have changed the decision by `now`."""
        return self.decided_at <= now < self.recheck_at

    def to_json(self) -> str:
        """The stored form (`from_json` reads it back)."""
        return json.dumps(
            {
                "format": PROOF_FORMAT,
                "role": self.role,
                "repo": self.repo,
                "settings": self.settings,
                "reads": [[r.url, r.etag, [list(h) for h in r.headers]] for r in self.reads],
                "decided_at": self.decided_at.isoformat(),
                "recheck_at": self.recheck_at.isoformat(),
                "note": self.note,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | None) -> IdleProof | None:
        """The proof stored as `text`; `None` for a void, missing or unreadable one.

        Anything unexpected reads as no proof: the tick then simply runs in full.
        """
        try:
            raw: Any = json.loads(text or "")
            data = cast(dict[str, Any], raw)
            if data.get("format") != PROOF_FORMAT:
                return None
            reads = tuple(
                ProvenRead(str(url), str(etag), tuple((str(h), str(v)) for h, v in headers))
                for url, etag, headers in cast(list[Any], data["reads"])
            )
            proof = cls(
                role=str(data["role"]),
                repo=str(data["repo"]),
                settings=str(data["settings"]),
                reads=reads,
                decided_at=datetime.fromisoformat(str(data["decided_at"])),
                recheck_at=datetime.fromisoformat(str(data["recheck_at"])),
                note=str(data["note"]),
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        aware = proof.decided_at.tzinfo is not None and proof.recheck_at.tzinfo is not None
        return proof if reads and aware else None


def settings_fingerprint(dumped: str) -> str:
    """A digest of the settings as `Settings.model_dump_json()` gives them (secrets show
    as stars: a new token that sees other data gets other answers, which the reads
    catch)."""
    return hashlib.sha256(dumped.encode("utf-8")).hexdigest()
