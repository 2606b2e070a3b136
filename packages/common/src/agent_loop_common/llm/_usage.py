"""Token and cost accounting for one pipeline run, and the run's budget.

One `UsageMeter` is created per pipeline run and shared by every `call_llm` the
run makes (the main agent and the verifier), so the figures the pipeline copies onto the
run record are the whole run's. Budgets are checked *before* each call: a call that starts
under budget may overshoot it by one response, and the next call is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_loop_common.llm._errors import BudgetExceeded, LLMError

if TYPE_CHECKING:
    from agent_loop_common.settings import Settings

__all__ = ["Budget", "ModelUsage", "UsageMeter"]


@dataclass(frozen=True)
class Budget:
    """Per-run limits; `None` means no limit of that kind.

    Attributes:
        max_tokens: Prompt plus completion tokens summed over every call of the run.
            Each turn resends the whole conversation, so this grows faster than the
            transcript: it is what the provider bills.
        max_cost_usd: Estimated cost in US dollars (litellm's price table). Calls whose
            price is unknown count as zero, so set `max_tokens` too for such models.
    """

    max_tokens: int | None = None
    max_cost_usd: float | None = None

    def __post_init__(self) -> None:
        if self.max_tokens is not None and self.max_tokens <= 0:
            raise ValueError(f"Budget.max_tokens must be positive or None, got {self.max_tokens}")
        if self.max_cost_usd is not None and self.max_cost_usd <= 0:
            raise ValueError(
                f"Budget.max_cost_usd must be positive or None, got {self.max_cost_usd}"
            )

    @classmethod
    def from_settings(cls, settings: Settings) -> Budget:
        """The per-run token and cost budget (`AGENT_LOOP_MAX_TOKENS_PER_RUN`,
        `AGENT_LOOP_MAX_COST_USD_PER_RUN`; 0 is no limit)."""
        return cls(
            max_tokens=settings.max_tokens_per_run or None,
            max_cost_usd=settings.max_cost_usd_per_run or None,
        )

    def exceeded_by(self, usage: UsageMeter) -> str | None:
        """The reason this budget is used up by `usage`, or `None` while it is not."""
        if self.max_tokens is not None and usage.total_tokens >= self.max_tokens:
            return f"{usage.total_tokens} tokens used, limit {self.max_tokens} (AGENT_LOOP_MAX_TOKENS_PER_RUN)"
        if self.max_cost_usd is not None and usage.cost_usd >= self.max_cost_usd:
            return (
                f"estimated cost ${usage.cost_usd:.4f}, limit ${self.max_cost_usd:.2f} "
                "(AGENT_LOOP_MAX_COST_USD_PER_RUN)"
            )
        return None


@dataclass
class ModelUsage:
    """Usage of one model within a run (the agent and the verifier may use different ones)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    cost_usd: float = 0.0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass
class UsageMeter:
    """Mutable usage totals of one run; the pipeline copies them onto its run record.

    Attributes:
        prompt_tokens: Input tokens over all successful calls, the cached ones included
            (what litellm reports as `prompt_tokens` for every provider).
        completion_tokens: Output tokens over all successful calls.
        cache_read_tokens: Of `prompt_tokens`, those read from the provider's prompt
            cache (billed at about a tenth of the input price).
        cache_write_tokens: Of `prompt_tokens`, those written to the provider's prompt
            cache (Anthropic bills them at 1.25x the input price; 0 where the provider
            caches on its own).
        llm_calls: Successful calls (a call retried three times counts once).
        retries: Failed attempts that were retried.
        cost_usd: Estimated cost in US dollars of the priced calls.
        unpriced_calls: Calls whose cost litellm could not estimate (custom or local
            models): when non-zero, `cost_usd` is a lower bound.
        exceeded: Set to the reason when a call was refused for budget, so the pipeline
            records outcome `budget_exceeded`; `None` otherwise.
        by_model: The same figures split by model string.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    llm_calls: int = 0
    retries: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    exceeded: str | None = None
    by_model: dict[str, ModelUsage] = field(default_factory=dict[str, ModelUsage])
    failure: LLMError | None = None
    """The last model call that failed for good (kept: the Agent loop keeps only text)."""

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost_known(self) -> bool:
        """True when every call was priced, so `cost_usd` is a full estimate."""
        return self.unpriced_calls == 0

    def ensure_within(self, budget: Budget | None) -> None:
        """Raise `BudgetExceeded` if the run was stopped or `budget` is used up.

        Called before every model call (the real one and test doubles alike); the first
        refusal stores its reason on `exceeded`, and later calls repeat it.
        """
        if self.exceeded is not None:
            raise BudgetExceeded(self.exceeded)
        if budget is not None and (reason := budget.exceeded_by(self)) is not None:
            self.exceeded = reason
            raise BudgetExceeded(reason)

    def record(
        self,
        model: str,
        *,
        prompt_tokens: int,
        completion_tokens: int,
        cost_usd: float | None,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> None:
        """Add one successful call; `cost_usd=None` means the price is unknown.

        The cache figures are parts of `prompt_tokens` (litellm counts them in), each
        clamped to it so a provider's odd report cannot make the shares exceed 1.
        """
        read = max(0, min(cache_read_tokens, prompt_tokens))
        write = max(0, min(cache_write_tokens, prompt_tokens - read))
        per_model = self.by_model.setdefault(model, ModelUsage())
        for target in (self, per_model):
            target.prompt_tokens += prompt_tokens
            target.completion_tokens += completion_tokens
            target.cache_read_tokens += read
            target.cache_write_tokens += write
            target.llm_calls += 1
            target.cost_usd += cost_usd or 0.0
        if cost_usd is None:
            self.unpriced_calls += 1

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready figures, for a run record or a log line."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "llm_calls": self.llm_calls,
            "retries": self.retries,
            "cost_usd": round(self.cost_usd, 6),
            "cost_known": self.cost_known,
            "unpriced_calls": self.unpriced_calls,
            "exceeded": self.exceeded,
            "by_model": {
                name: {
                    "prompt_tokens": u.prompt_tokens,
                    "completion_tokens": u.completion_tokens,
                    "cache_read_tokens": u.cache_read_tokens,
                    "cache_write_tokens": u.cache_write_tokens,
                    "llm_calls": u.llm_calls,
                    "cost_usd": round(u.cost_usd, 6),
                }
                for name, u in self.by_model.items()
            },
        }
