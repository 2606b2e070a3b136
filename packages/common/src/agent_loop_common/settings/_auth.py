"""GitHub credentials: checked when settings load.

Settings validates that exactly one way to authenticate is configured; the GitHub facade
builds its `TokenAuth` or `AppAuth` from them (`agent_loop_common.github.github_auth`),
reading the App key file at the moment credentials are needed, not at load time.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from pydantic import SecretStr
from pydantic_core import PydanticCustomError

__all__ = ["check_github_credentials"]


def check_github_credentials(values: Mapping[str, Any]) -> None:
    """Exactly one usable way to authenticate, named by its variables when it is not.

    Raises `PydanticCustomError` of type `github_credentials`: its message names the
    variables itself, so the error report shows it as it is.
    """
    token = values.get("github_token")
    app_id = values.get("github_app_id")
    key_text = values.get("github_app_private_key")
    key_path = values.get("github_app_private_key_path")
    installation = values.get("github_app_installation_id")

    def fail(message: str) -> NoReturn:
        raise PydanticCustomError("github_credentials", "{detail}", {"detail": message})

    if app_id is None:
        stray = [
            name
            for name, value in (
                ("GITHUB_APP_PRIVATE_KEY", key_text),
                ("GITHUB_APP_PRIVATE_KEY_PATH", key_path),
                ("GITHUB_APP_INSTALLATION_ID", installation),
            )
            if value is not None
        ]
        if stray:
            fail(f"{', '.join(stray)} set but GITHUB_APP_ID is not: set GITHUB_APP_ID too")
        if not isinstance(token, SecretStr) or not token.get_secret_value().strip():
            fail(
                "GitHub credentials missing: set GITHUB_TOKEN, or GITHUB_APP_ID with "
                "GITHUB_APP_PRIVATE_KEY (the PEM text) or GITHUB_APP_PRIVATE_KEY_PATH (a file)"
            )
        return
    if key_text is not None and key_path is not None:
        fail("set only one of GITHUB_APP_PRIVATE_KEY and GITHUB_APP_PRIVATE_KEY_PATH")
    if key_text is None and key_path is None:
        fail(
            "GITHUB_APP_ID is set: also set GITHUB_APP_PRIVATE_KEY (the PEM text) or "
            "GITHUB_APP_PRIVATE_KEY_PATH (a file holding it)"
        )
    if isinstance(key_text, SecretStr) and "PRIVATE KEY" not in key_text.get_secret_value():
        fail("GITHUB_APP_PRIVATE_KEY is not a PEM private key (no 'PRIVATE KEY' header)")
    if isinstance(key_path, Path) and not key_path.is_file():
        fail(f"GITHUB_APP_PRIVATE_KEY_PATH: no such file {str(key_path)!r}")
