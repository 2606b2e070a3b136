"""The gateway's state and its work after a delivery was accepted (never in the request).

For each intent of an accepted delivery, in a background task: the sender's trust
(unless it is a CI result), whether the PR is the agents' own, the commands of the
comment (acknowledged with a reaction, answered with a reply when asked), then the
dispatcher. Just before a run starts, the gate reads the thread's commands once more:
a trusted `/agent-loop stop` keeps every run away until `/agent-loop resume`, the same
rule the agents' scheduled poll applies.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass

import structlog

from agent_loop_common.commands import (
    CommandState,
    ThreadKind,
    command_authors,
    command_state,
    parse_commands,
    render_help,
    render_status,
)
from agent_loop_common.github import Comment, GitHub, NotFound
from agent_loop_common.redaction import LIVE_SECRETS
from agent_loop_common.settings import Settings
from agent_loop_common.trust import comments_edited_by_untrusted
from agent_loop_gateway._budget import BodyBudget
from agent_loop_gateway._clock import Clock
from agent_loop_gateway._dedup import DeliveryMemory
from agent_loop_gateway._dispatch import Dispatcher, Runner
from agent_loop_gateway._events import AgentName, Intent, RouteContext
from agent_loop_gateway._trust import TrustChecker

__all__ = ["Gateway", "GatewayConfig"]

_log = structlog.get_logger(__name__)

_KIND: dict[AgentName, ThreadKind] = {"builder": "issue", "reviewer": "pr"}


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """The settings the gateway reads (all from `Settings`)."""

    repo: str
    secret: bytes
    max_body_bytes: int
    """The body cap of an event without its own (`body_caps`)."""
    read_timeout_seconds: float
    coalesce_seconds: float
    dedup_size: int
    branch_prefix: str
    trusted_label: str | None
    min_permission: str
    bot_login: str | None
    buffer_bytes: int = 64 * 1024 * 1024
    """Body bytes all requests may hold at once (`BodyBudget.total`)."""
    buffer_bytes_per_source: int = 8 * 1024 * 1024
    """Body bytes one client address may hold at once (`BodyBudget.per_source`)."""
    body_caps: tuple[tuple[str, int], ...] = ()
    """`(event, cap)` for the events with a cap of their own."""

    def body_cap(self, event: str) -> int:
        """The largest body read for `event` (`X-GitHub-Event`)."""
        return next((cap for name, cap in self.body_caps if name == event), self.max_body_bytes)

    @classmethod
    def from_settings(cls, settings: Settings) -> GatewayConfig:
        """Raises `ValueError` when `AGENT_LOOP_WEBHOOK_SECRET` is missing or empty, or
        when `AGENT_LOOP_REPOS` is set (the gateway serves one repository for now)."""
        if settings.many_repos:
            raise ValueError(
                "the gateway serves one repository: set AGENT_LOOP_REPO for it (the "
                "scheduled ticks cover every repository of AGENT_LOOP_REPOS)"
            )
        secret = settings.webhook_secret.get_secret_value() if settings.webhook_secret else ""
        LIVE_SECRETS.add(secret)  # never in anything the gateway posts (`redact_secrets`)
        if not secret:
            raise ValueError(
                "AGENT_LOOP_WEBHOOK_SECRET is not set: the gateway verifies every delivery "
                "with the secret configured on the GitHub App or webhook"
            )
        return cls(
            repo=settings.repo,
            secret=secret.encode(),
            max_body_bytes=settings.webhook_max_body_bytes,
            read_timeout_seconds=settings.webhook_read_timeout_seconds,
            coalesce_seconds=settings.webhook_coalesce_seconds,
            dedup_size=settings.webhook_dedup_size,
            branch_prefix=settings.branch_prefix,
            trusted_label=settings.trusted_label,
            min_permission=settings.trusted_min_permission,
            bot_login=settings.bot_login,
            buffer_bytes=settings.webhook_buffer_bytes,
            buffer_bytes_per_source=settings.webhook_buffer_bytes_per_source,
            body_caps=tuple(settings.webhook_body_caps.items()),
        )


@dataclass(frozen=True)
class _EditorTrust:
    """The gateway's `TrustChecker` as the shared last-editor rule asks for it."""

    checker: TrustChecker

    async def trusted(self, login: str) -> bool:
        return await self.checker.is_trusted(login)


class Gateway:
    """Everything behind `POST /webhook`: replay memory, admission, dispatcher, gate."""

    def __init__(
        self,
        config: GatewayConfig,
        *,
        github: GitHub,
        runner: Runner,
        clock: Clock,
        trust: TrustChecker | None = None,
        max_admissions: int = 32,
    ) -> None:
        self.config = config
        self.github = github
        self.clock = clock
        self._trust = trust
        self.memory = DeliveryMemory(clock, size=config.dedup_size)
        self.bodies = BodyBudget(config.buffer_bytes, config.buffer_bytes_per_source)
        """The delivery bytes held right now, in all and per source (`_budget`)."""
        self.dispatcher = Dispatcher(
            runner, clock=clock, window=config.coalesce_seconds, gate=self._gate
        )
        self._login = config.bot_login
        self._login_lock = asyncio.Lock()
        self._admitting: set[asyncio.Task[None]] = set()
        self._limit = asyncio.Semaphore(max_admissions)
        self._agent_pr: dict[int, tuple[float, bool]] = {}
        self._pulls_lock = asyncio.Lock()
        self._heads: tuple[float, dict[str, list[int]]] | None = None
        self._heads_lock = asyncio.Lock()

    # ------------------------------------------------------------------ identity
    async def agent_login(self) -> str:
        """The agents' login (`AGENT_LOOP_BOT_LOGIN`, else asked from GitHub once)."""
        if self._login is None:
            async with self._login_lock:
                if self._login is None:
                    self._login = (await self.github.viewer()).login
        return self._login

    async def route_context(self) -> RouteContext:
        return RouteContext(
            repo=self.config.repo,
            agent_login=await self.agent_login(),
            branch_prefix=self.config.branch_prefix,
            trusted_label=self.config.trusted_label,
        )

    @property
    def trust(self) -> TrustChecker:
        if self._trust is None:
            from agent_loop_gateway._trust import PermissionTrust

            assert self._login is not None, "agent_login() first"
            self._trust = PermissionTrust(
                self.github,
                min_permission=self.config.min_permission,
                agent_login=self._login,
                clock=self.clock,
            )
        return self._trust

    # ------------------------------------------------------------------ admission
    def accept(self, delivery: str, intents: Iterable[Intent]) -> None:
        """Check and dispatch `intents` in the background; returns at once."""
        task = asyncio.get_running_loop().create_task(
            self._admit(delivery, tuple(intents)), name=f"gateway-admit-{delivery}"
        )
        self._admitting.add(task)
        task.add_done_callback(self._admitting.discard)

    @property
    def quiet(self) -> bool:
        """Nothing is being admitted, waiting to run or running (readable from any thread)."""
        return not self._admitting and not self.dispatcher.busy

    async def settle(self) -> None:
        """Wait until every accepted delivery was admitted or refused, and every run ended."""
        while self._admitting:
            await asyncio.gather(*list(self._admitting), return_exceptions=True)
        await self.dispatcher.idle()

    async def aclose(self) -> None:
        for task in list(self._admitting):
            task.cancel()
        await asyncio.gather(*list(self._admitting), return_exceptions=True)
        await self.dispatcher.aclose()
        await self.github.aclose()

    async def _admit(self, delivery: str, intents: tuple[Intent, ...]) -> None:
        async with self._limit:
            for intent in intents:
                try:
                    await self._admit_one(delivery, intent)
                except Exception as exc:
                    _log.warning(
                        "gateway.admit_failed",
                        delivery=delivery,
                        reason=intent.reason,
                        error=f"{type(exc).__name__}: {exc}",
                    )

    def _refuse(self, delivery: str, intent: Intent, why: str) -> None:
        _log.info(
            "gateway.refused",
            delivery=delivery,
            agent=intent.agent,
            target=intent.target,
            reason=intent.reason,
            why=why,
            sender=intent.sender,
        )

    async def _admit_one(self, delivery: str, intent: Intent) -> None:
        if intent.trust == "sender" and not await self.trust.is_trusted(intent.sender):
            self._refuse(delivery, intent, f"@{intent.sender} is not trusted")
            return
        targets: list[int | None] = [intent.target]
        if intent.agent_pr == "lookup" and intent.target is not None:
            if not await self._is_agent_pr(intent.target):
                self._refuse(delivery, intent, f"PR #{intent.target} is not an open agent PR")
                return
        elif intent.agent_pr == "head_sha" and intent.head_sha is not None:
            found = await self._agent_prs_at(intent.head_sha)
            if not found:
                self._refuse(delivery, intent, f"no open agent PR at {intent.head_sha[:12]}")
                return
            targets = list(found)
        if (
            intent.command is not None
            and intent.target is not None
            and not await self._answer_commands(delivery, intent)
        ):
            return
        for target in targets:
            outcome = self.dispatcher.submit(intent.agent, target, delivery)
            _log.info(
                "gateway.dispatched",
                delivery=delivery,
                agent=intent.agent,
                target=target,
                reason=intent.reason,
                outcome=outcome,
            )

    async def _is_agent_pr(self, number: int, ttl: float = 2.0) -> bool:
        """Whether `number` is an open agent PR (one lookup shared for `ttl` seconds, so a
        flood of comments on one PR costs one request)."""
        async with self._pulls_lock:
            now = self.clock.monotonic()
            cached = self._agent_pr.get(number)
            if cached is None or now - cached[0] >= ttl:
                pull = await self.github.get_pull(number)
                login = (await self.agent_login()).casefold()
                mine = (
                    pull.user.login.casefold() == login
                    and pull.head_ref.startswith(self.config.branch_prefix)
                    and pull.state == "open"
                )
                cached = self._agent_pr[number] = (now, mine)
            return cached[1]

    async def _agent_prs_at(self, sha: str, ttl: float = 2.0) -> list[int]:
        """Open agent PRs whose head is `sha` (one listing shared for `ttl` seconds)."""
        async with self._heads_lock:
            now = self.clock.monotonic()
            if self._heads is None or now - self._heads[0] >= ttl:
                login = (await self.agent_login()).casefold()
                heads: dict[str, list[int]] = {}
                for pull in await self.github.list_pulls(state="open"):
                    if pull.user.login.casefold() == login and pull.head_ref.startswith(
                        self.config.branch_prefix
                    ):
                        heads.setdefault(pull.head_sha, []).append(pull.number)
                self._heads = (now, heads)
            return sorted(self._heads[1].get(sha, []))

    # ------------------------------------------------------------------ commands
    async def _thread_state(
        self, number: int, kind: ThreadKind, acknowledged: Iterable[int] = ()
    ) -> tuple[list[Comment], CommandState]:
        comments = await self.github.list_issue_comments(number)
        login = await self.agent_login()
        authors = command_authors(comments, agent_login=login)
        trusted = {a for a in authors if await self.trust.is_trusted(a)}
        # The agents' last-editor rule: a trusted person's command that someone below
        # the trust rule edited last counts for nothing.
        tainted = await comments_edited_by_untrusted(
            self.github,
            _EditorTrust(self.trust),
            [c for c in comments if c.user.login in trusted and parse_commands(c.body)],
        )
        comments = [c for c in comments if c.id not in tainted]
        state = command_state(
            comments,
            trusted=lambda who: who in trusted,
            agent_login=login,
            kind=kind,
            acknowledged=set(acknowledged),
        )
        return comments, state

    async def _answer_commands(self, delivery: str, intent: Intent) -> bool:
        """Acknowledge the comment's commands; True when one asks for a run."""
        command = intent.command
        assert command is not None
        assert intent.target is not None
        login = (await self.agent_login()).casefold()
        try:
            reactions = await self.github.list_reactions(command.comment_id)
        except NotFound:
            self._refuse(delivery, intent, "its comment was deleted before it could be read")
            return False
        done = (
            [command.comment_id] if any(r.user.login.casefold() == login for r in reactions) else []
        )
        comments, state = await self._thread_state(intent.target, command.kind, done)
        mine = [p for p in state.pending if p.comment_id == command.comment_id]
        if not mine:
            self._refuse(delivery, intent, "its commands were already acknowledged (or it is gone)")
            return False
        for pending in mine:
            try:
                await self.github.add_reaction(command.comment_id, pending.reaction)
            except NotFound:
                self._refuse(delivery, intent, "its comment was deleted before it was answered")
                return False
            if pending.reply == "help":
                await self.github.create_issue_comment(
                    intent.target, render_help(pending.command.word)
                )
            elif pending.reply == "status":
                issue = await self.github.get_issue(intent.target)
                text = render_status(
                    comments,
                    kind=command.kind,
                    agent_login=login,
                    state=state,
                    now=self.clock.now(),
                    updated_at=issue.updated_at,
                )
                await self.github.create_issue_comment(intent.target, text)
            _log.info(
                "gateway.command",
                delivery=delivery,
                target=intent.target,
                command=pending.command.word,
                by=pending.author,
                reaction=pending.reaction,
                reply=pending.reply,
            )
        wants = any(p.starts_run for p in mine)
        if wants and state.stopped:
            self._refuse(delivery, intent, f"stopped by @{state.stopped_by}")
            return False
        return wants

    async def _gate(self, agent: AgentName, target: int | None) -> str | None:
        kind = _KIND.get(agent)
        if kind is None or target is None:
            return None
        _, state = await self._thread_state(target, kind)
        if state.stopped:
            return f"stopped by @{state.stopped_by} (until a trusted `/agent-loop resume`)"
        return None
