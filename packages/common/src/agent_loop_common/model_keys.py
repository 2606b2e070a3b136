"""Which provider a litellm model string names, and which key variable it needs.

Known without importing litellm (about 6 s): a tick checks its model before claiming
anything, and an idle tick must stay cheap. Providers outside this table are asked of
litellm itself, once, when the check runs. Deploys read the same table to know which
key to inject as a secret, so this module imports nothing of the package at import.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, cast

__all__ = [
    "KEYLESS_PROVIDERS",
    "KEY_ENV_OVERRIDE",
    "NO_KEY",
    "PROVIDER_KEYS",
    "key_env",
    "key_override",
    "key_variable",
    "model_problems",
    "provider_of",
    "remember_model_keys",
]

PROVIDER_KEYS: dict[str, str] = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "cohere": "COHERE_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "xai": "XAI_API_KEY",
    "perplexity": "PERPLEXITYAI_API_KEY",
}
"""The key variable of common providers (litellm reads the same names)."""

KEYLESS_PROVIDERS = frozenset({"ollama", "ollama_chat", "hosted_vllm", "lm_studio", "llamafile"})
"""Local servers that take no key."""

KEY_ENV_OVERRIDE = "AGENT_LOOP_MODEL_KEY_ENV"
"""Names the model key's variable explicitly (`none`: the model needs no key)."""


NO_KEY = "no-key"
"""What a keyless server is sent as its key: OpenAI's client refuses to call without one
("Missing credentials"), and a server that wants none ignores it."""


def key_override(environ: Mapping[str, str] | None = None) -> str | None:
    """The key to pass the model library with `AGENT_LOOP_MODEL_KEY_ENV`, or `None`.

    The library reads only the provider's own variable (`OPENAI_API_KEY`), so the
    variable the override names is read here and passed as the call's key; `none`
    passes `NO_KEY`. Without the override, `None`: the library finds the provider's key.
    An override naming an unset variable gives `None` too (the preflight names it).
    """
    env = os.environ if environ is None else environ
    override = env.get(KEY_ENV_OVERRIDE, "").strip()
    if not override:
        return None
    if override.lower() == "none":
        return NO_KEY
    return env.get(override, "").strip() or None


def remember_model_keys(models: Iterable[str], environ: Mapping[str, str] | None = None) -> None:
    """Add the model keys this process holds to the live secrets redaction looks for.

    Every provider variable of the table, `models`' own variables and the one
    `AGENT_LOOP_MODEL_KEY_ENV` names: a key with no fixed shape (Mistral's, a proxy's)
    is caught only as a live secret.
    """
    from agent_loop_common.redaction import LIVE_SECRETS

    env = os.environ if environ is None else environ
    names = {*PROVIDER_KEYS.values(), *(key_env(m) for m in models if m.strip())}
    override = env.get(KEY_ENV_OVERRIDE, "").strip()
    if override and override.lower() != "none":
        names.add(override)
    for name in sorted(names):
        LIVE_SECRETS.add(env.get(name))


def provider_of(model: str) -> str:
    """The provider prefix of `model` (`anthropic/claude-...` -> `anthropic`).

    A bare model name is litellm's inference from the family: `gpt-*`, `o1`... are
    OpenAI's, `gemini-*` Google's, anything else Anthropic's.
    """
    provider, sep, rest = model.partition("/")
    if sep and rest:
        return provider
    if model.startswith(("gpt", "o1", "o3", "o4")):
        return "openai"
    return "gemini" if model.startswith("gemini") else "anthropic"


def key_env(model: str) -> str:
    """The variable holding `model`'s key: the table's, else `<PROVIDER>_API_KEY`."""
    provider = provider_of(model)
    return PROVIDER_KEYS.get(provider, f"{provider.upper().replace('-', '_')}_API_KEY")


def key_variable(model: str, environ: Mapping[str, str] | None = None) -> str:
    """The variable an operator sets for `model`'s key: the one `AGENT_LOOP_MODEL_KEY_ENV`
    names, else the provider's (`OPENAI_API_KEY`); empty when the model takes none."""
    env = os.environ if environ is None else environ
    override = env.get(KEY_ENV_OVERRIDE, "").strip()
    if override:
        return "" if override.lower() == "none" else override
    if provider_of(model) in KEYLESS_PROVIDERS:
        return ""
    return key_env(model)


def model_problems(
    model: str, *, variable: str, environ: Mapping[str, str] | None = None
) -> list[str]:
    """Why `model` cannot be called from this environment (empty: it looks usable).

    Checks, without a network call, that litellm knows the provider and that the
    provider's key variable is set.

    Args:
        model: The litellm model string.
        variable: The setting that named it (`AGENT_LOOP_MODEL`), for the message.
        environ: The environment to check (default: the process's).
    """
    env = os.environ if environ is None else environ
    override = env.get(KEY_ENV_OVERRIDE, "").strip()
    if override:
        if override.lower() == "none" or env.get(override, "").strip():
            return []
        return [f"{override}: not set. {KEY_ENV_OVERRIDE} names it as the key of {model!r}."]
    provider = provider_of(model)
    if provider in KEYLESS_PROVIDERS:
        return []
    if provider in PROVIDER_KEYS:
        key = PROVIDER_KEYS[provider]
        if env.get(key, "").strip():
            return []
        return [
            f"{key}: not set. It is the key of provider {provider!r}, which {variable}="
            f"{model!r} uses; set it (or choose another model)."
        ]
    return _litellm_problems(model, variable=variable)


def _litellm_problems(model: str, *, variable: str) -> list[str]:
    """Ask litellm about a provider outside the table (imports litellm)."""
    from agent_loop_common.llm import load_litellm

    litellm = load_litellm()
    try:
        litellm.get_llm_provider(model=model)
    except Exception:
        return [
            f"{variable}: {model!r} names no provider litellm knows. Write it as "
            "'provider/model', e.g. 'anthropic/claude-sonnet-4-6' or 'openai/gpt-5'."
        ]
    try:
        checked = cast("Mapping[str, Any]", litellm.validate_environment(model=model))
    except Exception:
        return []  # litellm could not tell: the first call will say
    missing = [str(k) for k in cast("list[object]", checked.get("missing_keys") or [])]
    if not missing:
        return []
    return [
        f"{', '.join(missing)}: not set. {variable}={model!r} needs "
        f"{'it' if len(missing) == 1 else 'them'}."
    ]
