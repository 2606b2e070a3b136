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
from agent_loop_common.settings._outside import OUTSIDE_THE_MODEL

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
