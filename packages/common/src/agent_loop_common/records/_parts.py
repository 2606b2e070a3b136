"""The value objects a `RunRecord` is made of.

Every model here ignores unknown fields (`extra="ignore"`) so that a reader of schema
1.0 can read a record written by a 1.9 writer: minor versions only ever *add* optional
fields. New enum members or changed meanings need a major bump (see `_versioning`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt

__all__ = [
    "Attempt",
    "GitHubUsage",
    "Links",
    "Outcome",
    "Role",
    "Target",
    "TargetKind",
    "TestEvidence",
    "TraceStep",
    "Usage",
]

_TOLERANT = ConfigDict(extra="ignore", frozen=True)


class Role(StrEnum):
    """Which agent wrote a record (and which role owns a piece of memory)."""

    BUILDER = "builder"
    REVIEWER = "reviewer"
    DISTILLER = "distiller"


class TargetKind(StrEnum):
    """What a run worked on."""

    ISSUE = "issue"
    PR = "pr"
    REPO = "repo"


class Outcome(StrEnum):
    """How a run ended. `SUCCESS_OUTCOMES` and `IDLE_OUTCOMES` in `metrics` classify them."""

    OPENED_PR = "opened_pr"
    """Builder: the verified change was committed and a pull request opened."""
    OPENED_ISSUES = "opened_issues"
    """Builder: the issue was decomposed into verified sub-issues."""
    PUSHED_FIX = "pushed_fix"
    """Reviewer: a verified fix was pushed to the agent PR's branch."""
    REVIEWED_CLEAN = "reviewed_clean"
    """Reviewer: the PR head was reviewed and needed no change."""
    COMMENTED = "commented"
    """Reviewer: replied to feedback without pushing code."""
    DISTILLED = "distilled"
    """Distiller: ingested records and refreshed lessons and digest."""
    SKIPPED = "skipped"
    """The run claimed a target, then found nothing to do (already done, not trusted)."""
    BACKED_OFF = "backed_off"
    """The run stopped because the target is in back-off after earlier failures."""
    REJECTED = "rejected"
    """Every try failed verification; nothing was written to GitHub."""
    ERROR = "error"
    """An unexpected error ended the run (see `RunRecord.error`)."""
    CONFLICT = "conflict"
    """Someone else pushed to the branch during the run; the compare-and-swap refused."""
    LOST_CLAIM = "lost_claim"
    """The claim expired or was taken over before the run could apply its work."""
    BUDGET_EXCEEDED = "budget_exceeded"
    """A per-run token or cost budget stopped the loop."""
    INTERRUPTED = "interrupted"
    """The operator stopped the run (SIGINT, SIGTERM) at a safe point; its claim was
    released (schema 2.0). Neither a success nor the agent's error: it is left out of
    the success, error and verification rates."""
    PREFLIGHT_FAILED = "preflight_failed"
    """The run never reached its target (schema 2.0): the repository, the token, the
    requested issue or PR, the model endpoint or the sandbox failed before anything was
    claimed. Counted apart, never in the rates (`RunRecord.error` says what to fix)."""


class Target(BaseModel):
    """The issue, pull request or repository a run worked on."""

    model_config = _TOLERANT

    kind: TargetKind
    """Issue, pull request, or the repository as a whole (distiller)."""
    number: NonNegativeInt | None = None
    """Issue or PR number; `None` for `kind="repo"`."""
    title: str = ""
    """Title at the time of the run, for humans reading reports."""
    url: str = ""
    """HTML URL of the issue or PR (empty for the repository)."""
    created_at: AwareDatetime | None = None
    """When the issue or PR was created on GitHub: the start of "time from issue to PR"."""

    @property
    def ref(self) -> str:
        """A stable short name (`issue-12`, `pr-7`, `repo`) used in paths and grade keys."""
        return self.kind.value if self.number is None else f"{self.kind.value}-{self.number}"


class Attempt(BaseModel):
    """One try at the work: what was staged and what the verifier said about it."""

    model_config = _TOLERANT

    number: int = Field(ge=1)
    """1-based try number; try 1 verifying is "first-try verification"."""
    verified: bool
    """The strict verifier's verdict on this try."""
    notes: str = ""
    """The verifier's feedback (fed to the next try) or why the try stopped."""
    staged_paths: list[str] = Field(default_factory=list[str])
    """Files (or `issue:<title>` entries) staged in this try."""
    tokens: NonNegativeInt = 0
    """Model tokens (in + out) spent on this try, including the verifier."""
    tests: str = ""
    """The tests' verdict on this try's change (1.2), e.g. `failed: 1 failed, 2 passed
    (base: 3 passed)`; empty when no tests were checked (a decomposition, nothing
    submitted)."""


class TestEvidence(BaseModel):
    """What the repository's tests said about the run's change (1.2).

    Written by the pipeline from the sandbox's results, never by a model: the command
    and where it came from, the backend, the runs on the base and on the change, and
    the tests the change made pass or broke. A run that checked several tries keeps the
    last one checked (the accepted one, when a try was accepted).
    """

    __test__ = False  # not a pytest test class
    model_config = _TOLERANT

    command: str = ""
    """The test command (arguments joined by spaces); empty when none was found."""
    source: str = ""
    """Where the command came from: `setting`, `AGENTS.md`, `pyproject.toml`, ..."""
    setup: str = ""
    """The setup command run before the tests (`AGENT_LOOP_SETUP_COMMAND`), if any."""
    backend: str = ""
    """The sandbox that ran the tests (`bwrap`, `docker`, `flyte`, `plain-subprocess (not
    isolated)`), or `off`."""
    isolated: bool = True
    """False when the tests ran without isolation (the demo's plain subprocess) or not at all."""
    status: Literal["passed", "failed", "tampered", "no_evidence", "not_run"] = "not_run"
    """The hard rules' verdict on the change: `passed`, `failed`, `tampered` (schema 2.0:
    the change's code reaches into the test runner, so what the tests reported cannot be
    trusted; `tampered` says why), `no_evidence` (the tests ran but prove nothing about
    the change: the same failure on the base, zero tests, a runner or setup error,
    evidence that disagrees with itself on the base; `summary` says which), or `not_run`
    (the sandbox is off, or no test command was found). Only `passed` is a test pass."""
    summary: str = ""
    """One line for people, e.g. `12 passed (base: 11 passed)`, or why no tests ran."""
    base: str = ""
    """The run on the base commit, e.g. `exit 0: 11 passed (1.2 s)`."""
    after: str = ""
    """The run on the changed tree, e.g. `exit 0: 12 passed (1.3 s)`."""
    fail_to_pass: list[str] = Field(default_factory=list[str])
    """Tests that failed on (or were absent from) the base and pass with the change."""
    regressions: list[str] = Field(default_factory=list[str])
    """Tests that passed on the base and fail with the change."""
    failing: list[str] = Field(default_factory=list[str])
    """Every test failing with the change."""
    tamper_flags: list[str] = Field(default_factory=list[str])
    """Ways the change weakens the tests (`path: detail`): deleted or skipped tests,
    fewer test definitions, edited test configuration, code that touches how results
    are reported (`atexit`, `os._exit`, pytest internals, the report path)."""
    inconsistent: list[str] = Field(default_factory=list[str])
    """How the change's run contradicted itself (exit status, printed summary, JUnit
    report); such a try is rejected as inconsistent evidence."""
    not_shown_fixed: list[str] = Field(default_factory=list[str])
    """Tests that failed on the base and are absent from the change's results
    (deselected, deleted, renamed): nothing shows them fixed (schema 2.0)."""
    tampered: list[str] = Field(default_factory=list[str])
    """Why the status is `tampered`: what the scan of the change found (`path: shape`)
    and what the pytest guard found in the run (`pytest guard: ...`) (schema 2.0)."""
    guard_failing: list[str] = Field(default_factory=list[str])
    """The tests the pytest guard saw fail when pytest made their reports, in a
    `tampered` run (the reported outcomes are not to be believed) (schema 2.0)."""
    runs: NonNegativeInt = 0
    """Commands run in the sandbox by the run: baselines, checks of tries, `run_tests`."""
    per_process_limits: bool = False
    """No control group bounded the sandbox as a whole: the memory and process limits held
    per process only (`AGENT_LOOP_SANDBOX_REQUIRE_CGROUP` off on a host without one)."""
    oom_kills: NonNegativeInt = 0
    """Processes the kernel's OOM killer killed in the change's run (its setup included),
    read from the sandbox's control group after every run; any makes the run fail."""


class Usage(BaseModel):
    """Model usage of a whole run, captured by the model call."""

    model_config = _TOLERANT

    tokens_in: NonNegativeInt = 0
    """Prompt tokens over every model call of the run, those read from or written to the
    provider's prompt cache included."""
    tokens_out: NonNegativeInt = 0
    """Completion tokens over every model call of the run."""
    llm_calls: NonNegativeInt = 0
    """Number of model calls (agent turns plus verifier turns)."""
    cost_usd: NonNegativeFloat = 0.0
    """Estimated cost from litellm's price map (0 when the model is not priced), as
    billed: cached reads and cache writes at the model's own prices for them."""
    tokens_cache_read: NonNegativeInt = 0
    """Of `tokens_in`, read from the provider's prompt cache (schema 2.2; 0 before)."""
    tokens_cache_write: NonNegativeInt = 0
    """Of `tokens_in`, written to the provider's prompt cache (schema 2.2; 0 before)."""

    @property
    def tokens(self) -> int:
        """Tokens in plus out."""
        return self.tokens_in + self.tokens_out

    @property
    def cached_share(self) -> float | None:
        """`tokens_cache_read / tokens_in`; `None` for a run that sent no prompt."""
        return self.tokens_cache_read / self.tokens_in if self.tokens_in else None


class GitHubUsage(BaseModel):
    """GitHub API traffic of a run, as counted by the GitHub facade."""

    model_config = _TOLERANT

    requests: NonNegativeInt = 0
    """Every HTTP request sent, including conditional ones."""
    not_modified: NonNegativeInt = 0
    """Requests answered 304 (free against the primary rate limit)."""
    by_route: dict[str, NonNegativeInt] = Field(default_factory=dict[str, NonNegativeInt])
    """Requests per route template, e.g. `GET /repos/{owner}/{repo}/issues`."""


class TraceStep(BaseModel):
    """One step of the agent loop, built from the Agent's progress events."""

    model_config = _TOLERANT

    tool: str
    """Tool name (or `llm` for a model turn)."""
    args: str
    """Short rendering of the arguments (truncated by the producer)."""
    ok: bool
    """Whether the step succeeded."""
    ms: NonNegativeInt
    """Wall time of the step in milliseconds."""
    error: str = ""
    """Error text when `ok` is false."""
    agent: str = ""
    """Who took the step (2.3): the run's role (`builder`, `reviewer`, `distiller`) or
    `verifier`; empty in older records."""


class Links(BaseModel):
    """What the run created on GitHub."""

    model_config = _TOLERANT

    pr_url: str = ""
    """The pull request opened (builder) or updated (reviewer)."""
    issue_urls: list[str] = Field(default_factory=list[str])
    """Sub-issues opened by a decomposition."""
