"""An idle tick that proves itself idle before Flyte starts: the lean path of `agent-loop run`.

A scheduled builder or reviewer tick on a quiet repository finds nothing to do, and the
full path pays seconds for it (the agents' machinery, githubkit, Flyte's local mode)
when GitHub answers it with free 304s. `fast_idle_tick` takes the same decision from
the last full tick's `IdleProof` instead, and only when it can show that decision still
holds:

- the proof is this role's and this repository's, taken under the same settings
  (fingerprint), and no time-based rule can have changed it yet (`recheck_at`);
- every GitHub read the decision made answers 304 to its `ETag` now (plain
  `http.client`, the same token and headers, only to the configured API's origin);
- the model the tick would call is still usable (the check `preflight_model` makes).

Then it counts itself idle in the local memory (`LocalKey`, the layout Flyte's
`MemoryStore` reads), keeps a copy of the last idle report as this tick's report, and
returns the same `TickSummary` a full idle tick returns. Anything else (no proof, a
changed setting, one answer that is not 304, a network error, a GitHub App, many
repositories, parallel slots, a corrupt counter) returns `None`: the caller runs the
full tick, which takes the decision again and leaves a fresh proof.

This module imports neither Flyte, githubkit, httpx nor structlog (an import-linter
contract holds it): importing them is most of what an idle tick used to cost.
"""

from __future__ import annotations

import http.client
import os
import shutil
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import ValidationError

from agent_loop_common.memory._idle import IdleCount
from agent_loop_common.memory._layout import IDLE_PATH, IDLE_PROOF_PATH, Keys
from agent_loop_common.memory._local import LocalKey
from agent_loop_common.model_keys import (
    KEY_ENV_OVERRIDE,
    KEYLESS_PROVIDERS,
    PROVIDER_KEYS,
    model_problems,
    provider_of,
)
from agent_loop_common.records import Role
from agent_loop_common.runtime._home import local_raw_data_path
from agent_loop_common.runtime._idle_proof import (
    PROVABLY_IDLE_ROLES,
    IdleProof,
    ProvenRead,
    settings_fingerprint,
)
from agent_loop_common.runtime._reports import prune_reports, report_name, reports_folder
from agent_loop_common.runtime._summary import IDLE, TickSummary
from agent_loop_common.settings import Settings

__all__ = ["fast_idle_tick"]

USER_AGENT = "agent-loop"
"""What the conditional reads call themselves (the facade's default `user_agent`)."""


def fast_idle_tick(
    settings: Settings, role: Role, *, now: datetime | None = None
) -> TickSummary | None:
    """One idle tick of `role` proven without Flyte, or `None`: run the full tick.

    Args:
        settings: The tick's settings (a local, untargeted run).
        role: `Role.BUILDER` or `Role.REVIEWER` (others always return `None`).
        now: The current time (tests); `datetime.now(UTC)` by default.
    """
    token = _token(settings, role)
    if token is None:
        return None
    try:
        return _proven(settings, role, token, now or datetime.now(UTC))
    except (OSError, ValueError):  # an unreadable or unwritable local file: decide in full
        return None


def _proven(settings: Settings, role: Role, token: str, moment: datetime) -> TickSummary | None:
    keys = Keys(settings.memory_key_prefix)
    proof = IdleProof.from_json(_key(settings, keys.idle_proof(role)).read_text(IDLE_PROOF_PATH))
    if (
        proof is None
        or proof.role != role.value
        or proof.repo.lower() != settings.repo.lower()
        or proof.settings != settings_fingerprint(settings.model_dump_json())
        or not proof.holds_at(moment)
        or not unchanged(
            proof.reads,
            base_url=settings.github_api_url,
            token=token,
            timeout=settings.github_timeout_seconds,
        )
    ):
        return None
    day = moment.astimezone(UTC).date()
    if not _count_idle(_key(settings, keys.idle(role, day)), role, moment):
        return None
    summary = TickSummary(role=role, outcome=IDLE, note=proof.note)
    report = _keep_last_report(settings, summary, moment)
    return summary.model_copy(update={"report": str(report)}) if report else summary


def _token(settings: Settings, role: Role) -> str | None:
    """The token of a tick the lean path may take, or `None` when it may not."""
    if (
        role not in PROVABLY_IDLE_ROLES
        or settings.many_repos
        or settings.parallel(role.value) > 1  # pyright: ignore[reportArgumentType]
        or settings.github_app_id is not None  # an App mints its token: a write
        or settings.github_token is None
    ):
        return None
    models = {
        settings.model: "AGENT_LOOP_MODEL",
        settings.verifier_model: "AGENT_LOOP_VERIFIER_MODEL",
    }
    for model, variable in models.items():
        known = provider_of(model) in (*PROVIDER_KEYS, *KEYLESS_PROVIDERS)
        if not (known or os.environ.get(KEY_ENV_OVERRIDE, "").strip()):
            return None  # only litellm (seconds of import) could tell: the full path asks
        if model_problems(model, variable=variable):
            return None  # the full path stops with the message (exit 2)
    return settings.github_token.get_secret_value()


def _key(settings: Settings, key: str) -> LocalKey:
    return LocalKey.at(
        local_raw_data_path(settings),
        org=settings.flyte_org,
        project=settings.flyte_project,
        domain=settings.flyte_domain,
        key=key,
    )


def unchanged(reads: Sequence[ProvenRead], *, base_url: str, token: str, timeout: float) -> bool:
    """Whether GitHub answers every read 304 to its `ETag` (unchanged, and not billed).

    The token goes only to the configured API's origin: a read elsewhere (a proof that
    was tampered with) is refused without a request. One connection per origin, reused.
    """
    base = urlsplit(base_url.rstrip("/") + "/")
    connections: dict[str, http.client.HTTPConnection] = {}
    try:
        for read in reads:
            url = urlsplit(read.url)
            if (url.scheme, url.netloc) != (base.scheme, base.netloc) or not url.path.startswith(
                base.path
            ):
                return False
            connection = connections.get(url.netloc)
            if connection is None:
                connection = connections[url.netloc] = _connect(url.scheme, url.netloc, timeout)
            headers = {
                **dict(read.headers),
                "If-None-Match": read.etag,
                "Authorization": f"Bearer {token}",
                "User-Agent": USER_AGENT,
            }
            connection.request(
                "GET", url.path + (f"?{url.query}" if url.query else ""), headers=headers
            )
            response = connection.getresponse()
            response.read()
            if response.status != 304:
                return False
        return True
    except (OSError, http.client.HTTPException):
        return False
    finally:
        for connection in connections.values():
            connection.close()


def _connect(scheme: str, netloc: str, timeout: float) -> http.client.HTTPConnection:
    if scheme == "https":
        return http.client.HTTPSConnection(netloc, timeout=timeout)
    if scheme == "http":
        return http.client.HTTPConnection(netloc, timeout=timeout)
    raise OSError(f"not an HTTP URL scheme: {scheme}")


def _count_idle(key: LocalKey, role: Role, moment: datetime) -> bool:
    """Add one idle run to today's counter, as `count_idle_run` does; `False` (leave it
    to the full tick, which sets a corrupt document aside) when it cannot be read."""
    text = key.read_text(IDLE_PATH)
    day = moment.astimezone(UTC).date()
    try:
        current = (
            IdleCount.model_validate_json(text)
            if text and text.strip()
            else IdleCount(role=role, day=day)
        )
    except ValidationError:
        return False
    if _major(current.schema_version) != _major(IdleCount(role=role, day=day).schema_version):
        return False
    key.write_text(IDLE_PATH, current.counted(moment).model_dump_json(indent=2), actor=role.value)
    return True


def _major(version: str) -> str:
    return version.partition(".")[0]


def _keep_last_report(settings: Settings, summary: TickSummary, moment: datetime) -> Path | None:
    """This tick's report: a copy of the newest idle report of the role (what a full idle
    tick renders says the same), pruned like every kept report; `None` without one."""
    folder = reports_folder(settings)
    try:
        last = max(
            folder.glob(f"{summary.role.value}-idle-*.html"),
            key=lambda p: (p.stat().st_mtime, p.name),
            default=None,
        )
        if last is None:
            return None
        kept = folder / report_name(summary, moment)
        shutil.copyfile(last, kept)
        prune_reports(folder, keep=settings.keep_reports)
    except OSError:
        return None
    return kept
