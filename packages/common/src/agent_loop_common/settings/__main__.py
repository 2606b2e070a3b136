"""`python -m agent_loop_common.settings [--update FILE]`: print or refresh the reference table."""

from __future__ import annotations

import argparse
from pathlib import Path

from agent_loop_common.settings._docs import render_settings_table, update_document


def main() -> None:
    """Print the settings table, or rewrite its generated block in a Markdown file."""
    parser = argparse.ArgumentParser(prog="python -m agent_loop_common.settings")
    parser.add_argument(
        "--update", type=Path, help="Markdown file whose generated table to refresh"
    )
    args = parser.parse_args()
    target: Path | None = args.update
    if target is None:
        print(render_settings_table())
    else:
        changed = update_document(target)
        print(f"{target}: {'updated' if changed else 'already up to date'}")


if __name__ == "__main__":
    main()
