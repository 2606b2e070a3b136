"""Credentials the facade accepts: a token, or a GitHub App installation.

For an App, githubkit's `AppInstallationAuthStrategy` signs a JWT, exchanges it for an
installation token at `{base_url}app/installations/{id}/access_tokens` (so GHES works),
caches the token and fetches a new one a minute before it expires. The facade gives
each client its own token cache: githubkit's default cache is process-global and keyed
by app id alone, which would hand one server's token to another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx
from githubkit import AppAuthStrategy, AppInstallationAuthStrategy, TokenAuthStrategy

from agent_loop_common.redaction import LIVE_SECRETS

if TYPE_CHECKING:
    from agent_loop_common.settings import Settings


@dataclass(frozen=True)
class TokenAuth:
    """A personal access token, fine-grained token or installation token."""

    token: str = field(repr=False)

    def __post_init__(self) -> None:
        if not self.token.strip():
            raise ValueError("TokenAuth needs a non-empty token")
        LIVE_SECRETS.add(self.token)

    def strategy(self) -> TokenAuthStrategy:
        """githubkit's strategy for this token."""
        return TokenAuthStrategy(self.token)


@dataclass(frozen=True)
class AppAuth:
    """A GitHub App acting as one of its installations (the agents' bot identity).

    `installation_id=None` looks up the installation of the facade's repository
    (`GET /repos/{owner}/{repo}/installation`, one request) on first use.
    """

    app_id: int | str
    private_key: str = field(repr=False)
    """The App's PEM private key (RS256)."""
    installation_id: int | None = None

    def __post_init__(self) -> None:
        if "PRIVATE KEY" not in self.private_key:
            raise ValueError("AppAuth.private_key must be a PEM private key")

    def app_strategy(self) -> AppAuthStrategy:
        """Authenticates as the App itself (JWT): for `/app` and installation lookups."""
        return AppAuthStrategy(self.app_id, self.private_key)

    def installation_strategy(self, installation_id: int) -> AppInstallationAuthStrategy:
        """Authenticates as the installation, refreshing its token before expiry."""
        return AppInstallationAuthStrategy(self.app_id, self.private_key, installation_id)


class LiveTokenTransport(httpx.AsyncBaseTransport):
    """Adds the credential each request carries to the live secrets (`LIVE_SECRETS`).

    The one place that sees every token the facade uses: a personal token, and the
    installation tokens (and JWTs) an App mints and renews during a run, which no setting
    holds. From their first use on, redaction looks for them in every text.
    """

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner
        self._seen = ""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        header = request.headers.get("authorization", "")
        if header and header != self._seen:
            self._seen = header
            LIVE_SECRETS.add(header.partition(" ")[2])
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        """No-op: the facade closes the transport it created, once."""


def github_auth(settings: Settings) -> TokenAuth | AppAuth:
    """The credentials for `GitHub(auth=...)` from validated settings; an App wins over a
    token.

    A `TokenAuth`, or an `AppAuth` when `GITHUB_APP_ID` is set. Reads the App's key file
    (`GITHUB_APP_PRIVATE_KEY_PATH`) here, not at load time, so that a settings object can
    be built and shown without touching the key. Both keep their secrets out of `repr`.
    """
    if settings.github_app_id is not None:
        if settings.github_app_private_key is not None:
            key = settings.github_app_private_key.get_secret_value()
        else:
            assert settings.github_app_private_key_path is not None  # checked at load time
            key = settings.github_app_private_key_path.read_text(encoding="utf-8")
        app_id = settings.github_app_id
        return AppAuth(
            app_id=int(app_id) if app_id.isdigit() else app_id,
            private_key=key,
            installation_id=settings.github_app_installation_id,
        )
    assert settings.github_token is not None  # checked at load time
    return TokenAuth(token=settings.github_token.get_secret_value())
