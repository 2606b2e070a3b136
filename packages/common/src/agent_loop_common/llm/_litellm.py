"""The only place that touches litellm: a lazy import and narrow, typed accessors.

`import litellm` costs about 10 s on a small machine, so it never happens when this
package is imported, and a tick that finds no work never pays it. A tick that does
calls `prefetch_litellm` once it has selected work: the import then runs in a
background thread while the tick claims and reads GitHub, and the first model call
joins it (`load_litellm`) instead of starting it. litellm also fetches catalogs on its own
unless told not to: its price table at import, Anthropic's beta headers on first use.
A tick should make no request beyond GitHub and the model provider, so the bundled
copies are the default: `offline_environment` says which of litellm's variables to set
before the import, and the user opts back in with `AGENT_LOOP_LITELLM_REMOTE_CATALOGS`
(or decides by setting litellm's variables themselves). litellm is largely untyped;
each accessor here casts its result at the boundary and turns litellm's "I do not know
this model" exceptions into `None`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping
from types import ModuleType
from typing import Any, cast

from agent_loop_common.llm import _quiet

__all__ = [
    "LITELLM_OFFLINE_VARIABLES",
    "REMOTE_CATALOGS_VARIABLE",
    "acompletion",
    "estimate_cost",
    "explicit_cache_markers",
    "load_litellm",
    "loaded",
    "model_output_limit",
    "offline_environment",
    "offline_providers",
    "prefetch_litellm",
    "provider_supports",
]

REMOTE_CATALOGS_VARIABLE = "AGENT_LOOP_LITELLM_REMOTE_CATALOGS"
"""Opt-in (`Settings.litellm_remote_catalogs`): let litellm fetch its catalogs itself."""

LITELLM_OFFLINE_VARIABLES: Mapping[str, str] = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_OFFLINE_MODE": "true",
}
"""litellm's switches to its bundled price table and other bundled catalogs."""

_TRUE = frozenset({"1", "true", "t", "yes", "y", "on"})


def offline_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables to set before importing litellm so that it fetches nothing itself.

    Empty when the user opted in (`AGENT_LOOP_LITELLM_REMOTE_CATALOGS` true) or set
    either of litellm's own variables: their choice stands as they made it.
    """
    if environ.get(REMOTE_CATALOGS_VARIABLE, "").strip().lower() in _TRUE:
        return {}
    if any(name in environ for name in LITELLM_OFFLINE_VARIABLES):
        return {}
    return dict(LITELLM_OFFLINE_VARIABLES)


_prefetch: threading.Thread | None = None
_prefetch_lock = threading.Lock()


def _import_litellm() -> ModuleType:
    if "litellm" not in sys.modules:
        os.environ.update(offline_environment(os.environ))
        _quiet.before_import()
    module = importlib.import_module("litellm")
    _quiet.after_import(module)
    return module


def _import_quietly() -> None:
    # A failure is not lost: the first model call imports again and raises it there.
    with contextlib.suppress(Exception):
        _import_litellm()


def prefetch_litellm() -> None:
    """Start importing litellm in a background thread, once; return at once.

    For a tick that has selected work: its claim, GitHub reads and memory reads overlap
    the import instead of preceding it. Nothing happens if litellm is already imported
    or being imported. A failed import is not reported here: the first model call
    imports again and raises it where it belongs.
    """
    global _prefetch
    with _prefetch_lock:
        if _prefetch is not None or "litellm" in sys.modules:
            return
        _prefetch = threading.Thread(target=_import_quietly, name="litellm-import", daemon=True)
        _prefetch.start()


def load_litellm() -> ModuleType:
    """Import litellm (once), offline by default, its logs routed through ours (`_quiet`).

    Joins an import `prefetch_litellm` started, so the module is set up exactly once.
    """
    with _prefetch_lock:
        running = _prefetch
    if running is not None and running is not threading.current_thread():
        running.join()
    return _import_litellm()


async def loaded() -> ModuleType:
    """`load_litellm` without holding up the event loop: an import still under way (the
    prefetch's, seconds) is waited for in a worker thread, so the run's other work (the
    tests' baseline, a claim's heartbeat) goes on meanwhile."""
    with _prefetch_lock:
        running = _prefetch is not None and _prefetch.is_alive()
    if "litellm" in sys.modules and not running:
        return load_litellm()
    return await asyncio.to_thread(load_litellm)


async def acompletion(**kwargs: Any) -> object:
    """`litellm.acompletion(**kwargs)`: the response is a `ModelResponse`."""
    call = cast("Callable[..., Awaitable[object]]", load_litellm().acompletion)
    return await call(**kwargs)


def model_output_limit(model: str) -> int | None:
    """The most output tokens `model` accepts per response, or `None` if litellm does not know."""
    litellm = load_litellm()
    try:
        info = cast("Mapping[str, Any]", litellm.get_model_info(model))
    except Exception:  # litellm raises bare Exception subclasses for unmapped models
        return None
    for key in ("max_output_tokens", "max_tokens"):
        value = info.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None


def provider_supports(model: str, param: str) -> bool | None:
    """Whether litellm maps the OpenAI parameter `param` for `model`'s provider.

    `None` when litellm has no parameter list for the provider (custom providers):
    callers then pass the parameter and let the provider decide.
    """
    litellm = load_litellm()
    try:
        _, provider, _, _ = cast(
            "tuple[str, str, object, object]", litellm.get_llm_provider(model=model)
        )
        params = cast(
            "list[str] | None",
            litellm.get_supported_openai_params(model=model, custom_llm_provider=provider),
        )
    except Exception:
        return None
    return None if params is None else param in params


_MARKER_PROVIDERS = frozenset({"anthropic", "bedrock", "vertex_ai", "azure_ai"})
"""Where litellm passes Anthropic's `cache_control` through: Claude on these providers."""


def explicit_cache_markers(model: str) -> bool:
    """Whether `model` takes `cache_control` breakpoints (Claude on Anthropic, Bedrock,
    Vertex AI, Azure AI), as litellm decides it for its own `cache_control_injection_points`.

    False for providers that cache a repeated prefix on their own (OpenAI, DeepSeek,
    Gemini) and for models litellm does not know: a marker there is at best ignored.
    """
    litellm = load_litellm()
    try:
        from litellm.llms.anthropic.common_utils import (  # noqa: TID251  # the one litellm module
            supports_anthropic_cache_control,
        )
    except ImportError:  # an older litellm: the same rule from its public helpers
        try:
            _, provider, _, _ = cast(
                "tuple[str, str, object, object]", litellm.get_llm_provider(model=model)
            )
            return (
                provider in _MARKER_PROVIDERS
                and "claude" in model.lower()
                and bool(litellm.supports_prompt_caching(model=model))
            )
        except Exception:
            return False
    try:
        return bool(supports_anthropic_cache_control(model, None))
    except Exception:
        return False


def estimate_cost(response: object) -> float | None:
    """litellm's cost estimate for one response, or `None` when the model is not priced."""
    litellm = load_litellm()
    try:
        cost = litellm.completion_cost(completion_response=response)
    except Exception:  # unpriced model: litellm raises rather than returning 0
        return None
    return float(cost) if isinstance(cost, int | float) else None


def offline_providers() -> frozenset[str]:
    """Provider prefixes served in-process by a registered litellm `CustomLLM`.

    Only looked up when litellm is already imported: a provider can only have been
    registered by code that imported it, so an unimported litellm means there are none.
    """
    litellm = sys.modules.get("litellm")
    if litellm is None:
        return frozenset()
    entries = cast(
        "list[Mapping[str, object]]", getattr(litellm, "custom_provider_map", None) or []
    )
    return frozenset(str(entry.get("provider")) for entry in entries if entry.get("provider"))
