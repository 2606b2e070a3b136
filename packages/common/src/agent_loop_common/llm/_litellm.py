"""The only place that touches litellm: a lazy import and narrow, typed accessors.

``import litellm`` costs about 10 s on a small machine and, without
``LITELLM_LOCAL_MODEL_COST_MAP=True``, fetches a price table from the network, so it
happens on the first model call, never when this package is imported. litellm is largely
untyped; each accessor here casts its result at the boundary and turns litellm's "I do
not know this model" exceptions into ``None``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Awaitable, Callable, Mapping
from types import ModuleType
from typing import Any, cast

from agent_loop_common.llm import _quiet

__all__ = [
    "acompletion",
    "estimate_cost",
    "load_litellm",
    "model_output_limit",
    "offline_providers",
    "provider_supports",
]


def load_litellm() -> ModuleType:
    """Import litellm (once), its logs routed through ours and its prints silenced."""
    if "litellm" not in sys.modules:
        _quiet.before_import()
    module = importlib.import_module("litellm")
    _quiet.after_import(module)
    return module


async def acompletion(**kwargs: Any) -> object:
    """``litellm.acompletion(**kwargs)``: the response is a ``ModelResponse``."""
    call = cast("Callable[..., Awaitable[object]]", load_litellm().acompletion)
    return await call(**kwargs)


def model_output_limit(model: str) -> int | None:
    """The most output tokens ``model`` accepts per response, or ``None`` if litellm does not know."""
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
    """Whether litellm maps the OpenAI parameter ``param`` for ``model``'s provider.

    ``None`` when litellm has no parameter list for the provider (custom providers):
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


def estimate_cost(response: object) -> float | None:
    """litellm's cost estimate for one response, or ``None`` when the model is not priced."""
    litellm = load_litellm()
    try:
        cost = litellm.completion_cost(completion_response=response)
    except Exception:  # unpriced model: litellm raises rather than returning 0
        return None
    return float(cost) if isinstance(cost, int | float) else None


def offline_providers() -> frozenset[str]:
    """Provider prefixes served in-process by a registered litellm ``CustomLLM``.

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
