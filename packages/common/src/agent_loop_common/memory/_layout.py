"""Where everything lives in memory: store keys, paths inside them, time buckets. Pure.

Every key has one writer role; see `docs/memory.md` for the table. Keys are sized so
that what a run downloads (`get` = whole key) or uploads (`save` = whole local root)
does not grow with total history:

| key                                   | writer     | holds                               |
|---------------------------------------|------------|-------------------------------------|
| `<prefix>-context`                    | distiller  | `context/digest.md`, `context/lessons.json` |
| `<prefix>-ledger`                     | distiller  | `ledger/ingest.json`, `ledger/effects.json` |
| `<prefix>-runs-<YYYYMMDDHH>`          | every run  | `runs/<run_id>.json` (one per run)  |
| `<prefix>-idle-<role>-<YYYYMMDD>`     | that role  | `idle/count.json`                   |
| `<prefix>-rollups-<YYYYMM>`           | distiller  | `days/<YYYY-MM-DD>.json`            |
| `<prefix>-grades-<YYYYMM>`            | distiller  | `grades/pr-<n>.json`                |
| `<prefix>-etags-<role>`               | that role  | `etags/cache.json`                  |
| `<prefix>-idleproof-<role>`           | that role  | `idle/proof.json` (the idle fast path) |
| `<prefix>-reviewed-pr-<n>`            | reviewer   | `reviewed/head.json`                |
| `<prefix>-turns-<role>`               | that role  | `turns/served.json` (many repos)    |
| `<prefix>-general`                    | distiller  | `general/<namespace>.json` (many repos) |
| `<prefix>-lessons-retired`            | distiller  | `retired/<lesson id>.json` (one per lesson) |
| `<prefix>-lessons-operator`           | operator   | `ops/<time>-<lesson id>.json` (CLI edits) |

With `AGENT_LOOP_REPOS` every repository has its own namespace: the keys above under
`repo_prefix(prefix, repo)`; only the turns (which repository a role served last) and
the general lessons (each repository's distiller writes its own file) stay under the
bare prefix.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from agent_loop_common.records import Role, Target

__all__ = [
    "AGENT_READ_ONLY_PREFIXES",
    "DEFAULT_PREFIX",
    "DIGEST_PATH",
    "EFFECTS_PATH",
    "ETAG_PATH",
    "IDLE_PATH",
    "IDLE_PROOF_PATH",
    "LEDGER_PATH",
    "LESSONS_PATH",
    "REVIEWED_PATH",
    "RUNS_DIR",
    "TURNS_PATH",
    "Keys",
    "bucket_of",
    "bucket_start",
    "buckets_between",
    "general_path",
    "grade_path",
    "lesson_file_name",
    "month_of",
    "repo_prefix",
    "rollup_path",
    "run_path",
]

DEFAULT_PREFIX = "agent-loop"
DIGEST_PATH = "context/digest.md"
LESSONS_PATH = "context/lessons.json"
AGENT_READ_ONLY_PREFIXES: tuple[str, ...] = ("context/",)
"""Builder and reviewer open the context key with these read-only: only the distiller
writes lessons and the digest."""
LEDGER_PATH = "ledger/ingest.json"
EFFECTS_PATH = "ledger/effects.json"
"""The distiller's lesson-effect state (fixed size per lesson; never read by the agents)."""
RUNS_DIR = "runs"
IDLE_PATH = "idle/count.json"
ETAG_PATH = "etags/cache.json"
IDLE_PROOF_PATH = "idle/proof.json"
"""The last full tick's idle decision and what it rested on (`runtime.IdleProof`)."""
REVIEWED_PATH = "reviewed/head.json"
TURNS_PATH = "turns/served.json"

_BUCKET_FORMAT = "%Y%m%d%H"
_BUCKET_RE = re.compile(r"^\d{10}$")
_PREFIX_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,80}$")
_SLUG_CHARS = 24


def repo_prefix(prefix: str, repo: str) -> str:
    """The key prefix of one repository's namespace: `<prefix>-<slug>-<hash>`.

    Readable (the slug is the lowercased `owner-name`, cut short) and unique (the hash
    of the lowercased full name tells `a-b/c` from `a/b-c`; GitHub names are
    case-insensitive). Only `AGENT_LOOP_REPOS` uses it: a deployment configured with
    `AGENT_LOOP_REPO` keeps its keys under the bare prefix.
    """
    full = repo.strip().lower()
    slug = re.sub(r"[^a-z0-9]+", "-", full).strip("-")[:_SLUG_CHARS].strip("-")
    digest = hashlib.sha256(full.encode()).hexdigest()[:8]
    return f"{prefix}-{slug}-{digest}"


def lesson_file_name(lesson_id: str) -> str:
    """A lesson id as one path segment (`owner/name#L-1a2b` -> `owner~name~L-1a2b`)."""
    return re.sub(r"[^A-Za-z0-9._-]", "~", lesson_id).lstrip(".") or "~"


def general_path(namespace: str) -> str:
    """Path of one repository's general lessons in the general key (its namespace)."""
    return f"general/{namespace}.json"


def run_path(run_id: str) -> str:
    """Path of a run record inside its bucket key (unique per run: no two writers meet)."""
    return f"{RUNS_DIR}/{run_id}.json"


def rollup_path(day: date) -> str:
    """Path of one day's rollup inside its month's rollups key."""
    return f"days/{day.isoformat()}.json"


def grade_path(target: Target) -> str:
    """Path of one PR's grade inside its month's grades key."""
    return f"grades/{target.ref}.json"


def bucket_of(moment: datetime) -> str:
    """The hourly bucket id (`YYYYMMDDHH`, UTC) a record written at `moment` goes to."""
    return moment.astimezone(UTC).strftime(_BUCKET_FORMAT)


def bucket_start(bucket: str) -> datetime:
    """The first instant of a bucket."""
    if not _BUCKET_RE.match(bucket):
        raise ValueError(f"not a bucket id: {bucket!r}")
    return datetime.strptime(bucket, _BUCKET_FORMAT).replace(tzinfo=UTC)


def buckets_between(first: str, last: str) -> list[str]:
    """Every bucket id from `first` to `last`, both included (empty if `first > last`)."""
    out: list[str] = []
    moment, end = bucket_start(first), bucket_start(last)
    while moment <= end:
        out.append(bucket_of(moment))
        moment += timedelta(hours=1)
    return out


def month_of(day: date) -> str:
    """`YYYYMM` of a day: the suffix of monthly keys."""
    return f"{day.year:04d}{day.month:02d}"


@dataclass(frozen=True, slots=True)
class Keys:
    """Store key names under one prefix (one prefix per loop; several loops can share a
    Flyte project by using different prefixes)."""

    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        if not _PREFIX_RE.match(self.prefix):
            raise ValueError(f"memory prefix must match {_PREFIX_RE.pattern}: {self.prefix!r}")

    @property
    def context(self) -> str:
        """Digest and lessons: read by every agent run, written by the distiller."""
        return f"{self.prefix}-context"

    @property
    def ledger(self) -> str:
        """The distiller's ingest ledger."""
        return f"{self.prefix}-ledger"

    def runs(self, bucket: str) -> str:
        """Run records written during one UTC hour."""
        bucket_start(bucket)
        return f"{self.prefix}-runs-{bucket}"

    def idle(self, role: Role, day: date) -> str:
        """The idle-run counter of one role for one UTC day."""
        return f"{self.prefix}-idle-{role.value}-{day:%Y%m%d}"

    def rollups(self, month: str) -> str:
        """Daily rollups of one month (`YYYYMM`)."""
        return f"{self.prefix}-rollups-{month}"

    def grades(self, month: str) -> str:
        """Grades of the PRs opened in one month (`YYYYMM`)."""
        return f"{self.prefix}-grades-{month}"

    def etags(self, role: Role) -> str:
        """One role's GitHub conditional-request cache."""
        return f"{self.prefix}-etags-{role.value}"

    def idle_proof(self, role: Role) -> str:
        """One role's proof that its last full tick was idle (read by the lean path)."""
        return f"{self.prefix}-idleproof-{role.value}"

    def turns(self, role: Role) -> str:
        """When each repository was last served by one role (fair rotation, many repos)."""
        return f"{self.prefix}-turns-{role.value}"

    @property
    def general(self) -> str:
        """Lessons the distillers marked general, one file per repository namespace."""
        return f"{self.prefix}-general"

    @property
    def lessons_retired(self) -> str:
        """Retired and superseded lessons, one file each, never rewritten (append only)."""
        return f"{self.prefix}-lessons-retired"

    @property
    def lessons_operator(self) -> str:
        """The operator's edits (`agent-loop lessons retire|pin`), one file each, which
        the distiller applies at every tick (it is the context's only writer)."""
        return f"{self.prefix}-lessons-operator"

    def reviewed(self, pr_number: int) -> str:
        """The reviewer's "reviewed head" mark for one PR."""
        return f"{self.prefix}-reviewed-pr-{pr_number}"
