"""Before a tick claims anything, one cheap request proves the model endpoint answers
and takes the key.

`preflight_model` checks without a network call that the provider is known and its key
variable set. That could not see a wrong `AGENT_LOOP_API_BASE` or a refused key: such a
tick claimed its issue, ran the base tests, retried the model four times and ended with
"InternalServerError: Connection error.", naming no setting. `probe_model` asks the
endpoint's model list instead (`GET <api_base>/models` for an OpenAI-compatible server,
the provider's own listing for the providers in `PROVIDER_MODEL_LISTS`): no tokens, no
cost, no model library. Only an answer that proves a setting wrong fails the run:

- no answer (connection refused, a name that does not resolve, a timeout): names
  `AGENT_LOOP_API_BASE` (or the route to the provider);
- 401 or 403: names the key variable (`OPENAI_API_KEY`, or the one
  `AGENT_LOOP_MODEL_KEY_ENV` names).

Anything else (a 404 from a server without a model list, a 5xx) passes: the first model
call will say more. A provider with no listing here is not asked (its first call is the
check). Each answer is kept for the process (`PROBE_TTL_SECONDS`; a failure for less),
so a gateway or a many-slot tick asks once. A failure is a `ModelUnavailable`, a
`ConfigError`: the run ends `preflight_failed` with nothing claimed.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httpx
import structlog

from agent_loop_common.llm import model_requests_allowed
from agent_loop_common.model_keys import NO_KEY, key_override, key_variable, provider_of
from agent_loop_common.redaction import redact_secrets
from agent_loop_common.runtime._models import installed_model
from agent_loop_common.settings import ConfigError, Settings

__all__ = [
    "PROBE_TTL_SECONDS",
    "PROVIDER_MODEL_LISTS",
    "ModelUnavailable",
    "forget_probes",
    "probe_model",
]

_log = structlog.get_logger(__name__)

PROBE_TTL_SECONDS = 300.0
"""How long a process trusts an endpoint that answered (a failure: a fifth of it)."""

PROVIDER_MODEL_LISTS: dict[str, str] = {
    "openai": "https://api.openai.com/v1/models",
    "anthropic": "https://api.anthropic.com/v1/models",
    "mistral": "https://api.mistral.ai/v1/models",
    "groq": "https://api.groq.com/openai/v1/models",
    "deepseek": "https://api.deepseek.com/models",
    "xai": "https://api.x.ai/v1/models",
    "together_ai": "https://api.together.xyz/v1/models",
    "fireworks_ai": "https://api.fireworks.ai/inference/v1/models",
    "gemini": "https://generativelanguage.googleapis.com/v1beta/models",
}
"""Each provider's model listing (no tokens spent), asked when no api base is set."""

_TIMEOUT_SECONDS = 10.0


class ModelUnavailable(ConfigError):
    """The model endpoint did not answer, or refused the key, before anything was claimed."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.args = ("; ".join(self.problems),)


@dataclass(frozen=True, slots=True)
class _Probe:
    model: str
    url: str
    headers: dict[str, str]
    key_variable: str
    api_base: str | None


_answers: dict[str, tuple[float, str]] = {}
"""Probe fingerprint -> (when asked, the problem or "" for an endpoint that answered)."""


def forget_probes() -> None:
    """Forget every kept answer (tests; a long-running process after a setting changed)."""
    _answers.clear()


async def probe_model(
    settings: Settings,
    *,
    environ: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Raise `ModelUnavailable` when a configured model's endpoint does not answer or
    refuses the key (see the module's docstring). An in-process model is not asked, nor
    any while `AGENT_LOOP_ALLOW_MODEL_REQUESTS=0`."""
    env = os.environ if environ is None else environ
    if installed_model() is not None or not model_requests_allowed(env):
        return  # an in-process model; or requests are off (tests): the call would say so
    models = dict.fromkeys((settings.model, settings.verifier_model or settings.model))
    problems: list[str] = []
    for model in models:
        probe = _probe_for(model, settings.api_base, env)
        if probe is None:
            continue
        problem = await _asked(probe, transport, clock)
        if problem and problem not in problems:
            problems.append(problem)
    if problems:
        raise ModelUnavailable(problems)


def _probe_for(model: str, api_base: str | None, env: Mapping[str, str]) -> _Probe | None:
    provider = provider_of(model)
    variable = key_variable(model, env)
    key = key_override(env)
    if key is None and variable:
        key = env.get(variable, "").strip() or None
    if api_base:
        base = api_base.rstrip("/")
        if provider == "anthropic":  # litellm posts to <api_base>/v1/messages
            url = f"{base.removesuffix('/v1')}/v1/models"
        else:
            url = f"{base}/models"
    else:
        known = PROVIDER_MODEL_LISTS.get(provider)
        if known is None:
            return None
        url = known
    headers: dict[str, str] = {}
    if key and key != NO_KEY:
        if provider == "anthropic":
            headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
        elif provider == "gemini" and not api_base:
            headers = {"x-goog-api-key": key}
        else:
            headers = {"Authorization": f"Bearer {key}"}
    return _Probe(model, url, headers, variable, api_base)


async def _asked(
    probe: _Probe, transport: httpx.AsyncBaseTransport | None, clock: Callable[[], float]
) -> str:
    """The probe's problem (empty: fine), asked once per `PROBE_TTL_SECONDS`."""
    secret = "\0".join(f"{k}={v}" for k, v in sorted(probe.headers.items()))
    fingerprint = hashlib.sha256(f"{probe.url}\0{secret}".encode()).hexdigest()
    now = clock()
    kept = _answers.get(fingerprint)
    if kept is not None:
        asked_at, problem = kept
        ttl = PROBE_TTL_SECONDS if not problem else PROBE_TTL_SECONDS / 5
        if now - asked_at < ttl:
            return problem
    problem = await _ask(probe, transport)
    _answers[fingerprint] = (now, problem)
    return problem


async def _ask(probe: _Probe, transport: httpx.AsyncBaseTransport | None) -> str:
    started = time.perf_counter()
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT_SECONDS, transport=transport) as client:
            response = await client.get(probe.url, headers=probe.headers)
    except httpx.HTTPError as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        _log.warning("model.unreachable", model=probe.model, url=probe.url, error=reason)
        if probe.api_base:
            return (
                f"AGENT_LOOP_API_BASE={probe.api_base}: the model server does not answer "
                f"(GET {probe.url}: {type(exc).__name__}: {reason}). Start it, or set "
                "AGENT_LOOP_API_BASE to its OpenAI-compatible base (e.g. "
                "http://127.0.0.1:8000/v1)."
            )
        return (
            f"AGENT_LOOP_MODEL={probe.model!r}: its provider does not answer (GET "
            f"{probe.url}: {type(exc).__name__}: {reason}). Check the route to it "
            "(network, HTTPS_PROXY), or set AGENT_LOOP_API_BASE to a proxy."
        )
    _log.info(
        "model.probed",
        model=probe.model,
        url=probe.url,
        status=response.status_code,
        ms=int((time.perf_counter() - started) * 1000),
    )
    if response.status_code not in (401, 403):
        return ""
    said = _said(response, _key_of(probe))
    if probe.key_variable:
        return (
            f"{probe.key_variable}: the key was refused (GET {probe.url} answered "
            f"{response.status_code}{said}). Set a valid key for {probe.model!r}"
            + (
                " (AGENT_LOOP_MODEL_KEY_ENV names the variable holding it)."
                if probe.key_variable != key_variable(probe.model, {})
                else ", or name another variable with AGENT_LOOP_MODEL_KEY_ENV."
            )
        )
    return (
        f"AGENT_LOOP_MODEL_KEY_ENV: {probe.url} answered {response.status_code}{said}: the "
        f"server wants a key; name the variable holding it in AGENT_LOOP_MODEL_KEY_ENV."
    )


def _key_of(probe: _Probe) -> str:
    for name, value in probe.headers.items():
        if name == "Authorization":
            return value.removeprefix("Bearer ")
        if name in ("x-api-key", "x-goog-api-key"):
            return value
    return ""


def _said(response: httpx.Response, key: str = "") -> str:
    """What the server said, shortly, with any key in it redacted (a server may echo the
    key it refused)."""
    text = " ".join(response.text.split())
    if key:
        text = text.replace(key, "[redacted]")
    text = redact_secrets(text)[:160]
    return f": {text!r}" if text else ""
