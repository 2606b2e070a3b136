"""Credentials the facade accepts: a token, or a GitHub App installation.

For an App, githubkit's `AppInstallationAuthStrategy` signs a JWT, exchanges it for an
installation token at `{base_url}app/installations/{id}/access_tokens` (so GHES works),
caches the token and fetches a new one a minute before it expires. The facade gives
each client its own token cache: githubkit's default cache is process-global and keyed
by app id alone, which would hand one server's token to another.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from githubkit import AppAuthStrategy, AppInstallationAuthStrategy, TokenAuthStrategy


@dataclass(frozen=True)
class TokenAuth:
    """A personal access token, fine-grained token or installation token."""

    token: str = field(repr=False)

    def __post_init__(self) -> None:
        if not self.token.strip():
            raise ValueError("TokenAuth needs a non-empty token")

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
