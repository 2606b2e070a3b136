"""Render the settings reference table that `docs/configuration.md` embeds.

The docstrings under the fields are the single source; a test checks that the committed
document contains exactly this rendering, so the docs cannot drift from the code.
Regenerate with `uv run --frozen python -m agent_loop_common.settings --update
docs/configuration.md`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic_core import PydanticUndefined

from agent_loop_common.settings._load import env_var_name, field_meaning
from agent_loop_common.settings._model import Settings, allowed_range

__all__ = [
    "OUTSIDE_THE_MODEL",
    "TABLE_END",
    "TABLE_START",
    "render_settings_table",
    "update_document",
]

TABLE_START = "<!-- settings-table:start (generated from agent_loop_common.settings) -->"
TABLE_END = "<!-- settings-table:end -->"

# Section headings, keyed by the first field of each section (fields keep model order).
_SECTIONS = {
    "repos": "Repository and GitHub",
    "bot_login": "Identity and trust",
    "model": "Model",
    "builder_max_turns": "Limits and budgets",
    "protected_paths": "Staging",
    "builder_schedule": "Schedules",
    "webhook_secret": "Events (gateway)",
    "home": "Memory and local mode",
    "sandbox": "Sandbox and tests",
    "log_format": "Logging",
}


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


def _default(name: str) -> str:
    info = Settings.model_fields[name]
    value = info.default
    if value is PydanticUndefined:
        return "**required**"
    if value is None or value in ("", ()):
        return "(empty)"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    return f"`{value}`"


def render_settings_table() -> str:
    """The Markdown reference: one table per section, every variable with default and meaning."""
    lines: list[str] = [TABLE_START]
    for name in Settings.model_fields:
        if name in _SECTIONS:
            lines += [
                "",
                f"### {_SECTIONS[name]}",
                "",
                "| Variable | Default | Meaning |",
                "|---|---|---|",
            ]
        meaning = field_meaning(name).replace("|", "\\|").replace("\n", " ")
        allowed = allowed_range(name)
        if allowed:
            meaning += f" Allowed: {allowed}."
        lines.append(f"| `{env_var_name(name)}` | {_default(name)} | {meaning} |")
    lines += [
        "",
        "### Read before the settings load, or at deploy time",
        "",
        "| Variable | Default | Meaning |",
        "|---|---|---|",
    ]
    lines += [
        f"| `{name}` | {default} | {meaning} |" for name, default, meaning in OUTSIDE_THE_MODEL
    ]
    lines += ["", TABLE_END]
    return "\n".join(lines)


def update_document(path: Path) -> bool:
    """Replace the generated block in `path`; returns True when the file changed."""
    text = path.read_text(encoding="utf-8")
    start, end = text.index(TABLE_START), text.index(TABLE_END) + len(TABLE_END)
    updated = text[:start] + render_settings_table() + text[end:]
    if updated == text:
        return False
    path.write_text(updated, encoding="utf-8")
    return True
