"""The GitHub credentials a loaded configuration describes, in the facade's terms.

Settings validates that exactly one way to authenticate is configured; this module turns
it into a value the GitHub facade can use. The App key file is read here, at the moment
credentials are needed, and secrets stay in ``SecretStr`` so no repr or log shows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from pydantic import SecretStr
from pydantic_core import PydanticCustomError

if TYPE_CHECKING:
    from agent_loop_common.settings._model import Settings

__all__ = ["GitHubCredentials", "check_github_credentials", "github_credentials"]


@dataclass(frozen=True)
class GitHubCredentials:
    """How the agents authenticate to GitHub.

    Attributes:
        kind: ``"token"`` (a bot account's token) or ``"app"`` (a GitHub App installation).
        api_url: REST API base URL (``GITHUB_API_URL``).
        token: The token, for ``kind="token"``.
        app_id: The App id, for ``kind="app"`` (an int when it is numeric).
        private_key: The App's PEM private key, for ``kind="app"``.
        installation_id: The installation to act as; ``None`` looks it up by repository.
    """

    kind: Literal["token", "app"]
    api_url: str
    token: SecretStr | None = None
    app_id: int | str | None = None
    private_key: SecretStr | None = None
    installation_id: int | None = None


def github_credentials(settings: Settings) -> GitHubCredentials:
    """Credentials from validated settings; an App wins over a token when both are set."""
    if settings.github_app_id is not None:
        if settings.github_app_private_key is not None:
            key = settings.github_app_private_key
        else:
            assert settings.github_app_private_key_path is not None  # checked at load time
            key = SecretStr(settings.github_app_private_key_path.read_text(encoding="utf-8"))
        app_id = settings.github_app_id
        return GitHubCredentials(
            kind="app",
            api_url=settings.github_api_url,
            app_id=int(app_id) if app_id.isdigit() else app_id,
            private_key=key,
            installation_id=settings.github_app_installation_id,
        )
    assert settings.github_token is not None  # checked at load time
    return GitHubCredentials(
        kind="token", api_url=settings.github_api_url, token=settings.github_token
    )


def check_github_credentials(values: Mapping[str, Any]) -> None:
    """Exactly one usable way to authenticate, named by its variables when it is not.

    Raises ``PydanticCustomError`` of type ``github_credentials``: its message names the
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
