"""Marker grammar: render and parse the invisible HTML comments that carry claim state.

Two markers live inside short human-readable GitHub comments (and, for dibs, inside the
commit messages of the claim ref):

```
<!-- agent-loop:dibs v1 op=claim kind=issue agent=<deployment> role=builder run=<run-id> until=2026-12-02T11:26:00Z -->
<!-- agent-loop:backoff v1 attempts=3 until=2026-12-02T12:00:00Z run=<run-id> -->
```

Grammar (strict): `<!--`, `agent-loop:<name>`, `v<N>`, then exactly the fields of
that marker as `key=value` separated by whitespace, each once, then `-->`. Values use a
small character set without spaces or `--` so a value can never close the HTML comment;
times are UTC with second precision and a `Z`. Rendering refuses values outside the
grammar (`InvalidMarker`); that is a programming error.

Reading is tolerant: anything that looks like one of our markers but breaks the grammar,
or carries a version this code does not know, is logged and skipped, never raised. A
comment on a public issue is untrusted input; a typo in one must not wedge the target.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Literal

import structlog

from agent_loop_common.claims._errors import InvalidMarker
from agent_loop_common.claims._runid import is_run_id
from agent_loop_common.records import TargetKind

__all__ = [
    "BackoffMarker",
    "DibsMarker",
    "Op",
    "format_time",
    "parse_backoff",
    "parse_dibs",
    "parse_time",
    "render_backoff",
    "render_dibs",
    "safe_text",
]

_log = structlog.get_logger(__name__)

Op = Literal["claim", "extend", "release"]
# What a claim is on: `TargetKind` (issue, pr, repo), the records' own name for it.

_OPS: Final = ("claim", "extend", "release")
_KINDS: Final = ("issue", "pr", "repo")
_VERSION: Final = "v1"
_CANDIDATE = re.compile(r"<!--\s*agent-loop:(dibs|backoff)\b(.*?)-->", re.DOTALL)
_AGENT = re.compile(r"\A(?!.*--)[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,99}\Z")
_ROLE = re.compile(r"\A(?!.*--)[a-z][a-z0-9_-]{0,39}\Z")
_TIME = re.compile(r"\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\Z")
_ATTEMPTS = re.compile(r"\A[1-9]\d{0,4}\Z")
_TIME_FORMAT: Final = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True, slots=True)
class DibsMarker:
    """One claim event: a run claims, extends (heartbeat) or releases a target."""

    op: Op
    """`claim` takes the target, `extend` moves `until` on, `release` frees it."""
    kind: TargetKind
    """What is claimed: an issue, a pull request, or a repository-level target."""
    agent: str
    """The deployment that wrote it (for humans and logs; identity comes from the author)."""
    role: str
    """The agent role, e.g. `builder`, `reviewer`, `distiller`."""
    run: str
    """The run id of the claiming run; claims are re-entrant only for this run."""
    until: datetime
    """Claim/extend: when the claim expires. Release: when it was released."""


@dataclass(frozen=True, slots=True)
class BackoffMarker:
    """A failed attempt on a target: do not try again before `until`."""

    attempts: int
    """Failed attempts so far, counting this one (1 for the first failure)."""
    until: datetime
    """The target is not eligible for another attempt before this time."""
    run: str
    """The run whose failure this records."""


def format_time(moment: datetime) -> str:
    """Render an aware datetime as `YYYY-MM-DDTHH:MM:SSZ` in UTC (seconds truncated)."""
    if moment.tzinfo is None:
        raise InvalidMarker("marker times must be timezone-aware")
    return moment.astimezone(UTC).strftime(_TIME_FORMAT)


def parse_time(text: str) -> datetime | None:
    """Parse `YYYY-MM-DDTHH:MM:SSZ`; `None` when it is not exactly that."""
    if not _TIME.match(text):
        return None
    try:
        return datetime.strptime(text, _TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def _check(ok: bool, what: str, value: object) -> None:
    if not ok:
        raise InvalidMarker(f"cannot render marker: invalid {what} {value!r}")


def render_dibs(marker: DibsMarker) -> str:
    """Render a dibs marker as its HTML comment.

    Raises:
        InvalidMarker: a field is outside the grammar.
    """
    _check(marker.op in _OPS, "op", marker.op)
    _check(marker.kind in _KINDS, "kind", marker.kind)
    _check(bool(_AGENT.match(marker.agent)), "agent", marker.agent)
    _check(bool(_ROLE.match(marker.role)), "role", marker.role)
    _check(is_run_id(marker.run), "run", marker.run)
    return (
        f"<!-- agent-loop:dibs {_VERSION} op={marker.op} kind={marker.kind} "
        f"agent={marker.agent} role={marker.role} run={marker.run} "
        f"until={format_time(marker.until)} -->"
    )


def render_backoff(marker: BackoffMarker) -> str:
    """Render a backoff marker as its HTML comment.

    Raises:
        InvalidMarker: a field is outside the grammar.
    """
    _check(_ATTEMPTS.match(str(marker.attempts)) is not None, "attempts", marker.attempts)
    _check(is_run_id(marker.run), "run", marker.run)
    return (
        f"<!-- agent-loop:backoff {_VERSION} attempts={marker.attempts} "
        f"until={format_time(marker.until)} run={marker.run} -->"
    )


def _fields(name: str, inner: str, keys: tuple[str, ...], where: str) -> dict[str, str] | None:
    """Split the inside of a candidate marker into exactly `keys`; log and drop otherwise."""
    tokens = inner.split()
    if not tokens or tokens[0] != _VERSION:
        version = tokens[0] if tokens else ""
        reason = "unknown version" if re.fullmatch(r"v\d+", version) else "missing version"
        _log.warning(
            "claims.marker_ignored", marker=name, reason=reason, version=version, where=where
        )
        return None
    fields: dict[str, str] = {}
    for token in tokens[1:]:
        key, sep, value = token.partition("=")
        if not sep or key not in keys or key in fields or not value:
            _log.warning(
                "claims.marker_ignored", marker=name, reason=f"bad field {token!r}", where=where
            )
            return None
        fields[key] = value
    missing = [key for key in keys if key not in fields]
    if missing:
        _log.warning(
            "claims.marker_ignored", marker=name, reason=f"missing {','.join(missing)}", where=where
        )
        return None
    return fields


def _dibs(fields: dict[str, str], where: str) -> DibsMarker | None:
    op, kind, agent, role, run = (fields[k] for k in ("op", "kind", "agent", "role", "run"))
    until = parse_time(fields["until"])
    problems = [
        name
        for name, ok in (
            ("op", op in _OPS),
            ("kind", kind in _KINDS),
            ("agent", bool(_AGENT.match(agent))),
            ("role", bool(_ROLE.match(role))),
            ("run", is_run_id(run)),
            ("until", until is not None),
        )
        if not ok
    ]
    if problems or until is None or op not in _OPS or kind not in _KINDS:
        _log.warning("claims.marker_ignored", marker="dibs", reason=f"bad {problems}", where=where)
        return None
    return DibsMarker(op=op, kind=TargetKind(kind), agent=agent, role=role, run=run, until=until)


def _backoff(fields: dict[str, str], where: str) -> BackoffMarker | None:
    until = parse_time(fields["until"])
    attempts = fields["attempts"]
    if until is None or not _ATTEMPTS.match(attempts) or not is_run_id(fields["run"]):
        _log.warning("claims.marker_ignored", marker="backoff", reason="bad value", where=where)
        return None
    return BackoffMarker(attempts=int(attempts), until=until, run=fields["run"])


def parse_dibs(text: str, *, where: str = "") -> list[DibsMarker]:
    """Return the valid dibs markers in `text`, in order; log and skip the rest.

    Args:
        text: a comment body or commit message.
        where: names the source in log lines (e.g. `"issue 4 comment 17"`).
    """
    found: list[DibsMarker] = []
    for match in _CANDIDATE.finditer(text):
        if match.group(1) != "dibs":
            continue
        keys = ("op", "kind", "agent", "role", "run", "until")
        fields = _fields("dibs", match.group(2), keys, where)
        marker = None if fields is None else _dibs(fields, where)
        if marker is not None:
            found.append(marker)
    return found


def parse_backoff(text: str, *, where: str = "") -> list[BackoffMarker]:
    """Return the valid backoff markers in `text`, in order; log and skip the rest."""
    found: list[BackoffMarker] = []
    for match in _CANDIDATE.finditer(text):
        if match.group(1) != "backoff":
            continue
        fields = _fields("backoff", match.group(2), ("attempts", "until", "run"), where)
        marker = None if fields is None else _backoff(fields, where)
        if marker is not None:
            found.append(marker)
    return found


def safe_text(text: str) -> str:
    """Neutralise HTML comment openers in human text placed next to a marker.

    Notes and failure reasons may quote model output or error messages; written by the
    agents' own identity, a `<!-- agent-loop:dibs ... -->` inside them would count as a
    real marker. Escaping `<!--` keeps them readable and inert.
    """
    return text.replace("<!--", "&lt;!--").replace("-->", "--&gt;")
