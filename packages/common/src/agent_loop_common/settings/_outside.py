"""The `AGENT_LOOP_*` variables read outside `Settings`, documented beside the settings.

Kept apart from the table's rendering so that loading the settings can tell a known
variable from a misspelt one (`unknown_variable_problems`) without importing the docs.
"""

from __future__ import annotations

__all__ = ["OUTSIDE_THE_MODEL"]

OUTSIDE_THE_MODEL: tuple[tuple[str, str, str], ...] = (
    (
        "AGENT_LOOP_GITHUB_AUTH",
        "`app` with `GITHUB_APP_ID`, else `token`",
        "How a deployed agent authenticates to GitHub, read at deploy time: `token` injects the Flyte secret `github-token` as `GITHUB_TOKEN`; `app` injects `github-app-id` and `github-app-private-key` as `GITHUB_APP_ID` and `GITHUB_APP_PRIVATE_KEY` (see docs/deploy.md).",
    ),
    (
        "AGENT_LOOP_MODEL_KEY_ENV",
        "(the provider's, e.g. `ANTHROPIC_API_KEY`)",
        "The variable holding the model's key, when it is not the provider's usual one (e.g. `VLLM_KEY` for a local OpenAI-compatible server); `none`: the model needs no key. A deploy injects it from the Flyte secret named after it.",
    ),
    (
        "AGENT_LOOP_ALLOW_MODEL_REQUESTS",
        "`1`",
        "`0` refuses every call to a real model (the tests and the offline demo set it).",
    ),
    (
        "AGENT_LOOP_LITELLM_REMOTE_CATALOGS",
        "`false`",
        "`true` lets the model library download its price and model catalogs at import; by default it uses the copies it ships (no network at import).",
    ),
)
"""Variables read outside `Settings` (before settings load, or only at deploy time), with
their default and meaning: documented in the same table, so every variable is."""
