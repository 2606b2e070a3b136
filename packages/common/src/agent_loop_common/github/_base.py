"""What every group of facade operations shares: the githubkit client and error mapping."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Generator
from contextlib import contextmanager
from typing import Any, TypeVar

import httpx
from githubkit import GitHub as GitHubKit
from githubkit.exception import (
    AuthCredentialError,
    GitHubException,
    RequestError,
    RequestFailed,
    RequestTimeout,
)

from agent_loop_common.github._auth import AppAuth, TokenAuth
from agent_loop_common.github._errors import (
    AuthError,
    GitHubError,
    GitHubUnavailable,
    describe,
    error_for_status,
)

T = TypeVar("T")


def retype(error: GitHubError, cls: type[GitHubError]) -> GitHubError:
    """The same failure as a more specific class (its own hint in the message)."""
    message = describe(
        cls,
        method=error.method,
        url=error.url,
        status=error.status,
        said=error.github_message,
        attempts=error.attempts,
    )
    return cls(
        message,
        method=error.method,
        url=error.url,
        status=error.status,
        github_message=error.github_message,
        attempts=error.attempts,
    )


@contextmanager
def translated() -> Generator[None]:
    """Turn githubkit's exceptions into the facade's typed `GitHubError`s.

    Our transports raise `GitHubError` themselves when retries give up; githubkit wraps
    anything a transport raises in `RequestError`, so it is unwrapped here.
    """
    try:
        yield
    except RequestFailed as exc:
        response = exc.response.raw_response
        request = exc.request
        raise error_for_status(
            response.status_code,
            method=request.method,
            url=str(request.url),
            content=response.content,
        ) from None
    except RequestTimeout as exc:
        raise _unavailable(exc.request.method, str(exc.request.url), repr(exc.exc)) from exc
    except RequestError as exc:  # pyright: ignore[reportUnknownVariableType]
        inner = exc.__cause__  # githubkit raises RequestError(e) from e
        if isinstance(inner, GitHubError):
            raise inner from None
        if isinstance(inner, httpx.RequestError):
            request = inner.request
            raise _unavailable(request.method, str(request.url), repr(inner)) from exc
        raise
    except AuthCredentialError as exc:
        raise AuthError(
            f"GitHub credentials are unusable: {exc}. {AuthError.hint}",
            method="",
            url="",
        ) from exc
    except GitHubException:
        raise


def _unavailable(method: str, url: str, said: str) -> GitHubUnavailable:
    message = describe(GitHubUnavailable, method=method, url=url, status=None, said=said)
    return GitHubUnavailable(message, method=method, url=url, github_message=said)


class Base:
    """Owner/name, paging and the (lazily authenticated) githubkit client."""

    _owner: str
    _name: str
    full_name: str
    _per_page: int
    _archive_timeout: float
    _auth: TokenAuth | AppAuth
    _kit: GitHubKit[Any]
    _installed: GitHubKit[Any] | None
    _lock: asyncio.Lock

    @property
    def per_page(self) -> int:
        """The page size of listings: a listing this long or longer took several requests."""
        return self._per_page

    async def _gh(self) -> GitHubKit[Any]:
        """The client acting as our identity (for an App: its installation, found once)."""
        if self._installed is not None:
            return self._installed
        async with self._lock:
            if self._installed is None:
                auth = self._auth
                if isinstance(auth, TokenAuth):
                    self._installed = self._kit
                else:
                    installation_id = auth.installation_id
                    if installation_id is None:
                        with translated():
                            found = await self._kit.rest.apps.async_get_repo_installation(
                                self._owner, self._name
                            )
                        installation_id = found.parsed_data.id
                    self._installed = self._kit.with_auth(
                        auth.installation_strategy(installation_id)
                    )
        return self._installed

    async def _all(self, paginator: AsyncIterator[T]) -> list[T]:
        """Every item of a githubkit paginator (follows `Link: rel="next"` to the end)."""
        with translated():
            return [item async for item in paginator]
