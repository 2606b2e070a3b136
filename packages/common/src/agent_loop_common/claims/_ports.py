"""The GitHub facade methods the claim protocol needs, as structural types.

`Claimer` takes any object with these methods, so it depends on the shape of
`agent_loop_common.github.GitHub` rather than on its class, and the pure modules never
import the facade at all. Positional parameters are positional-only here so the facade is
free to name them (`n`, `number`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from agent_loop_common.claims._atomic import RefsAPI
from agent_loop_common.claims._state import CommentLike, UserLike

__all__ = ["ClaimsGitHub", "CommentWithId", "IssueLike", "RepositoryLike"]


class CommentWithId(CommentLike, Protocol):
    @property
    def id(self) -> int: ...


class IssueLike(Protocol):
    @property
    def updated_at(self) -> datetime: ...


class RepositoryLike(Protocol):
    @property
    def default_branch(self) -> str: ...


class ClaimsGitHub(RefsAPI, Protocol):
    """The GitHub facade methods the claim protocol uses (`agent_loop_common.github.GitHub` fits)."""

    async def viewer(self) -> UserLike: ...
    async def repository(self) -> RepositoryLike: ...
    async def get_issue(self, number: int, /) -> IssueLike: ...
    async def list_issue_comments(self, number: int, /) -> Sequence[CommentWithId]: ...
    async def create_issue_comment(self, number: int, body: str, /) -> CommentWithId: ...
    async def update_issue_comment(self, comment_id: int, body: str, /) -> CommentWithId: ...
    async def delete_issue_comment(self, comment_id: int, /) -> None: ...
    async def matching_refs(self, prefix: str, /) -> list[tuple[str, str]]: ...
