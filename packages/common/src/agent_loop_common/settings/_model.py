"""Every knob of agent-loop, one environment variable each, in one pydantic-settings model.

The names in the GitHub ecosystem (`GITHUB_TOKEN`, `GITHUB_API_URL`, `GITHUB_APP_*`)
are kept as they are so the same variables work in Actions, Flyte secrets and a shell;
every other knob is `AGENT_LOOP_<FIELD>`. The docstring under each field is its
documentation: `docs/configuration.md` is rendered from it and a test keeps the two in
step. Load with `agent_loop_common.settings.load_settings`, which turns validation
errors into one readable message naming each variable.
"""

from __future__ import annotations

import ipaddress
import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Literal, Self, cast

import annotated_types
from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from agent_loop_common.settings._auth import check_github_credentials
from agent_loop_common.settings._rules import (
    MIN_CLAIM_TTL_MINUTES,
    WEBHOOK_BUFFER_DEFAULT,
    parse_rate_reserve,
    split_command,
)
from agent_loop_common.settings._secrets import credential_in

__all__ = [
    "ENV_PREFIX",
    "SETTING_FLOORS",
    "Permission",
    "Settings",
    "allowed_range",
    "field_bounds",
]

ENV_PREFIX = "AGENT_LOOP_"
"""Prefix of every agent-loop variable except the GitHub ones."""

Permission = Literal["triage", "write", "maintain", "admin"]
"""Repository roles that can be trusted, weakest first (GitHub's own ordering)."""

_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_NAME = r"[A-Za-z0-9._-]{1,100}"
_REPO_RE = re.compile(rf"^{_OWNER}/{_NAME}$")
_CRON_FIELD = re.compile(r"^[A-Za-z0-9*/,?-]+$")


def normalize_cron(value: str) -> str:
    """A 5-field cron expression with single spaces; `ValueError` for anything else."""
    fields = value.split()
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        raise ValueError("expected a 5-field cron expression such as '*/5 * * * *'")
    return " ".join(fields)


def _refuse_credentials(url: str, where_instead: str) -> None:
    """Refuse a URL setting that carries a credential, without repeating the value.

    Raises `PydanticCustomError` of type `credentials_in_url`, whose input the settings
    error never shows.
    """
    found = credential_in(url)
    if found is not None:
        raise PydanticCustomError(
            "credentials_in_url",
            "the URL carries a credential ({found}), and a plain setting travels as a "
            "plain environment variable and into the deploy spec. Give the URL without "
            "it and put {where}",
            {"found": found, "where": where_instead},
        )


SETTING_FLOORS: dict[str, str] = {
    "llm_retry_cap_seconds": "llm_retry_base_seconds",
    "backoff_cap_minutes": "backoff_base_minutes",
    "max_staged_total_bytes": "max_staged_file_bytes",
    "webhook_buffer_bytes_per_source": "webhook_max_body_bytes",
    "webhook_buffer_bytes": "webhook_buffer_bytes_per_source",
}
"""Settings that must be at least another one (a cap and its base, a total and its part):
field -> the field it must be at least."""


def _alias(name: str) -> AliasChoices:
    # An unprefixed variable; populate_by_name keeps Settings(field=...) working in code.
    return AliasChoices(name)


class Settings(BaseSettings):
    """agent-loop configuration, read from the environment."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        extra="ignore",
        frozen=True,
        populate_by_name=True,
        validate_default=True,
    )

    # ------------------------------------------------------------ repository and GitHub
    repos: Annotated[tuple[str, ...], NoDecode] = ()
    """Comma-separated repositories the agents work on, each `owner/name` or `owner/*` (every repository of that owner the token or App installation can access, listed through the API at each tick), e.g. `octo-org/api,octo-org/web` or `octo-org/*` (with a GitHub App, `owner/*` needs `GITHUB_APP_INSTALLATION_ID`). Each repository keeps its own claims, back-offs, ETag cache and memory namespace; work is taken round-robin across repositories, oldest first within each. Set this or `AGENT_LOOP_REPO`, not both."""
    repo: str = ""
    """Target repository as `owner/name`, e.g. `octo-org/hello-world`. The one-repository form: set this or `AGENT_LOOP_REPOS`, not both."""
    github_token: SecretStr | None = Field(default=None, validation_alias=_alias("GITHUB_TOKEN"))
    """Token the agents act with (a bot account's fine-grained token or PAT). Needs contents, issues and pull requests read/write on the repository. Use this or the GitHub App variables."""
    github_app_id: str | None = Field(default=None, validation_alias=_alias("GITHUB_APP_ID"))
    """GitHub App id (or client id). When set, the agents act as the App and `GITHUB_TOKEN` is ignored."""
    github_app_private_key: SecretStr | None = Field(
        default=None, validation_alias=_alias("GITHUB_APP_PRIVATE_KEY")
    )
    """The App's PEM private key itself (literal `\\n` sequences are turned into newlines). Use this or `GITHUB_APP_PRIVATE_KEY_PATH`."""
    github_app_private_key_path: Path | None = Field(
        default=None, validation_alias=_alias("GITHUB_APP_PRIVATE_KEY_PATH")
    )
    """Path of a file holding the App's PEM private key."""
    github_app_installation_id: int | None = Field(
        default=None, validation_alias=_alias("GITHUB_APP_INSTALLATION_ID"), gt=0
    )
    """The App installation to act as; empty: looked up from the repository (one request)."""
    github_api_url: str = Field(
        default="https://api.github.com", validation_alias=_alias("GITHUB_API_URL")
    )
    """REST API base URL; for GitHub Enterprise Server use `https://HOST/api/v3`."""
    github_timeout_seconds: float = Field(default=30.0, ge=1, le=600)
    """Timeout of one GitHub request attempt in seconds, the whole response body included (githubkit has none by default); retries of failed reads come on top."""
    rate_limit_reserve: str = "10%"
    """Share of the token's hourly GitHub rate limit (`10%`, from `0%` to `90%`) or number of requests (`500`) that ticks leave unspent: once GitHub reports no more than this left, a builder or reviewer tick claims nothing new and ends `paused` (no error, no back-off; `agent-loop status` shows it), and the first tick after the limit resets works again. Runs already holding a claim finish. `0`: no reserve."""

    # ------------------------------------------------------------ identity and trust
    bot_login: str | None = None
    """GitHub login the agents act as (`name[bot]` for an App); empty: asked from GitHub at start. Claims and agent PRs count only when written by this identity."""
    deployment_id: str = Field(
        default="default", pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=40
    )
    """Name of this deployment (lowercase letters, digits, single dashes), written into claim markers (`agent=`) so people and logs can tell two deployments on one repository apart."""
    trusted_min_permission: Permission = "write"
    """Least repository permission (`triage`, `write`, `maintain`, `admin`) whose issues, comments and reviews are worked on and shown to a model."""
    trusted_label: str | None = None
    """Optional opt-in label: an issue or PR from anyone else is worked on once a trusted person applies this label. Empty: no opt-in."""
    branch_prefix: str = "agent-loop/"
    """Prefix of every branch the agents push; with the agents' identity it marks their PRs."""

    # ------------------------------------------------------------ model
    model: str = "anthropic/claude-sonnet-4-6"
    """litellm model string for the builder, reviewer and distiller agents, e.g. `anthropic/claude-sonnet-4-6`, `openai/gpt-5`, or `openai/<name>` with `AGENT_LOOP_API_BASE`. The provider's key comes from its usual variable (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, ...)."""
    verifier_model: str = ""
    """litellm model string for the verifier sub-agent; empty: the same as `AGENT_LOOP_MODEL`."""
    api_base: str | None = None
    """Base URL of an OpenAI-compatible server (vLLM, Ollama, a LiteLLM proxy), e.g. `http://localhost:8000/v1`. A URL carrying a credential (`user:key@host`, `?api_key=`) is refused: this is a plain setting, so the key goes in the provider's key variable, a secret."""
    max_output_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    """Output tokens per model response; empty: a generous 32,000, or 8,192 for models litellm does not know. Always clamped to the model's published limit."""
    llm_timeout_seconds: float = Field(default=600.0, ge=1, le=3600)
    """Timeout of one model request in seconds."""
    llm_max_attempts: int = Field(default=4, ge=1, le=20)
    """Requests per model call, the first included, on transient errors (rate limit, overload, 5xx, timeouts). Auth, bad-request and context-window errors are never retried."""
    llm_retry_base_seconds: float = Field(default=2.0, ge=0, le=600)
    """Wait before the first model retry; doubled on each further retry (with jitter)."""
    llm_retry_cap_seconds: float = Field(default=60.0, ge=0, le=3600)
    """Longest wait between model retries, even when the provider's `Retry-After` asks for more; at least `AGENT_LOOP_LLM_RETRY_BASE_SECONDS`."""
    litellm_remote_catalogs: bool = False
    """Let litellm download its price table and other catalogs (Anthropic's beta headers) itself. Off: the copies bundled with the installed litellm are used (`LITELLM_LOCAL_MODEL_COST_MAP` and `LITELLM_OFFLINE_MODE` are set before litellm is imported, unless you set either yourself), so a run makes no request beyond GitHub and the model provider."""
    prompt_cache: bool = True
    """Mark prompt-cache breakpoints (the system prompt, the task, the conversation so far) on every request to a model that takes them (Claude on Anthropic, Bedrock, Vertex AI, Azure AI), so each turn reads the conversation so far from the provider's cache at about a tenth of the input price. `off` sends no marker; providers that cache on their own (OpenAI, DeepSeek, Gemini) are not affected either way."""
    keep_turns: int = Field(default=2, ge=0, le=1_000)
    """Agent turns whose tool results are always sent in full. Older results stay whole until they add up to about 10,000 tokens, then are all replaced in the prompt by a one-line note saying what each was and how to read it again (`[elided: read_file(path='src/x.py') returned 240 lines ...]`), so the prompt stays short and its cached prefix stays the same for several turns. 0: keep everything."""

    # ------------------------------------------------------------ limits and budgets
    builder_parallel: int = Field(default=1, ge=1, le=16)
    """Issues one builder tick claims and works at once, each as its own Flyte action with its own claim, budget and run record."""
    reviewer_parallel: int = Field(default=1, ge=1, le=16)
    """Pull requests one reviewer tick claims and works at once, each as its own Flyte action with its own claim, budget and run record."""
    builder_max_turns: int = Field(default=40, ge=1, le=500)
    """Most model turns of one builder agent attempt."""
    reviewer_max_turns: int = Field(default=40, ge=1, le=500)
    """Most model turns of one reviewer agent attempt."""
    verifier_max_turns: int = Field(default=12, ge=1, le=200)
    """Most model turns of one verifier check."""
    distiller_max_turns: int = Field(default=20, ge=1, le=200)
    """Most model turns of the distiller's lesson-writing agent."""
    reviewer_max_check_fixes: int = Field(default=3, ge=0, le=100)
    """Most reviewer attempts per pull request at fixing its failing checks (CI check runs and statuses); after that the reviewer says on the PR that it stopped, and only a person's feedback or push brings it back. 0: never act on failing checks."""
    max_tries: int = Field(default=3, ge=1, le=10)
    """Attempts per run in total (the first plus retries after a verifier rejection, each with the verifier's feedback)."""
    max_tokens_per_run: int = Field(default=4_000_000, ge=0, le=1_000_000_000)
    """Token budget of one run (prompt plus completion, all calls, verifier included); the run stops with outcome `budget_exceeded` when it is used up. 0: no limit."""
    max_cost_usd_per_run: float = Field(default=10.0, ge=0, le=10_000)
    """Estimated-cost budget of one run in US dollars (litellm's price table; unpriced models count 0, so keep a token budget for them). 0: no limit."""
    claim_ttl_minutes: int = Field(default=30, ge=MIN_CLAIM_TTL_MINUTES, le=1440)
    """How long a claim on an issue or PR lasts before another run may take it over (longer than twice the claims' one-minute clock-skew margin)."""
    backoff_base_minutes: int = Field(default=15, ge=1, le=10_080)
    """Rest of a target after its first failed run; doubled after each further failure."""
    backoff_cap_minutes: int = Field(default=1440, ge=1, le=43_200)
    """Longest rest of a failing target (it is retried this often until a human steps in); at least `AGENT_LOOP_BACKOFF_BASE_MINUTES`."""

    # ------------------------------------------------------------ staging
    protected_paths: Annotated[tuple[str, ...], NoDecode] = ()
    """Comma-separated globs the agents may never change, e.g. `**/*.pem,deploy/**`. Paths are protected as trees: a path that matches, lies under or contains a match is refused, so a directory cannot be replaced by a file. Always protected as well: all of `.github/` and `.gitlab/`, `CODEOWNERS`, and CI configuration unless `AGENT_LOOP_ALLOW_WORKFLOW_CHANGES` is true."""
    allow_workflow_changes: bool = False
    """Let the agents change CI pipeline definitions: `.github/workflows/`, `.github/actions/` and other CI systems' files (`.gitlab-ci.yml`, `.circleci/`, `Jenkinsfile`, `azure-pipelines.yml`, `.buildkite/`, `.travis.yml`, `bitbucket-pipelines.yml`). Off: CI runs with the repository's secrets. The rest of `.github/` (`CODEOWNERS`, `dependabot.yml`, templates) stays protected either way."""
    protect_instruction_files: bool = False
    """Refuse any change by the agents to their own instruction files (`AGENTS.md` at any depth, `CLAUDE.md`, `.github/copilot-instructions.md`). Off: such a change is allowed, but called out to the verifier and at the top of the pull request body as a change to the agents' own instructions."""
    max_staged_files: int = Field(default=40, ge=1, le=1000)
    """Most paths one change may touch (writes and deletions together)."""
    max_staged_file_bytes: int = Field(default=256_000, ge=1, le=10_000_000)
    """Largest size of one staged file in bytes (UTF-8)."""
    max_staged_total_bytes: int = Field(default=2_000_000, ge=1, le=100_000_000)
    """Largest size of all staged file contents of one change together; at least `AGENT_LOOP_MAX_STAGED_FILE_BYTES`."""
    max_staged_issues: int = Field(default=12, ge=1, le=50)
    """Most sub-issues one decomposition may open."""
    max_decomposition_depth: int = Field(default=1, ge=0, le=5)
    """How deep specifications may be split: 1 lets a specification become sub-issues that are then implemented, never split again; 0 never decomposes."""

    # ------------------------------------------------------------ schedules
    builder_schedule: str = "*/5 * * * *"
    """Cron schedule (5 fields, UTC) of the builder."""
    reviewer_schedule: str = "*/5 * * * *"
    """Cron schedule (5 fields, UTC) of the reviewer."""
    distiller_schedule: str = "*/10 * * * *"
    """Cron schedule (5 fields, UTC) of the distiller."""
    reuse_idle_minutes: int = Field(default=30, ge=0, le=1440)
    """On a cluster: how long each agent's container stays warm after a tick, waiting for the next (Flyte reusable containers, `flyte.ReusePolicy`). A tick in a warm container pays no container start and no imports (the model library alone takes seconds); keep it longer than the agent's schedule interval and every tick but the first is warm. Needs a backend that runs reusable containers (Union); the image then also installs `unionai-reuse`. 0: a fresh container for every tick, the choice for a Flyte backend without them. Read at deploy time, like the schedules."""

    # ------------------------------------------------------------ events (gateway)
    webhook_secret: SecretStr | None = None
    """Secret GitHub signs webhook deliveries with (the App's or the repository webhook's "Secret"). Needed by the gateway (`agent-loop serve`, `agent-loop deploy gateway`) only; the agents never read it."""
    webhook_max_body_bytes: int = Field(default=262_144, ge=1_000, le=100_000_000)
    """Largest webhook delivery the gateway reads, in bytes (256 KiB: GitHub's issue, comment, review and pull request payloads are a few to a few tens of kB); a bigger one is refused with 413 before its body is read. Raise it for one event with `AGENT_LOOP_WEBHOOK_MAX_BODY_BYTES_BY_EVENT`."""
    webhook_coalesce_seconds: float = Field(default=1.0, ge=0, le=60)
    """Deliveries for one issue or pull request within this many seconds start a single run (one action on GitHub often sends several events)."""
    webhook_dedup_size: int = Field(default=10_000, ge=100, le=10_000_000)
    """How many recent deliveries the gateway remembers (by `X-GitHub-Delivery` and by body) to refuse a replay."""
    webhook_read_timeout_seconds: float = Field(default=10.0, ge=1, le=300)
    """How long the gateway waits for a delivery's request head, and again for its body; a slower connection is dropped (head) or answered 408 (body). GitHub sends a delivery whole and at once, and gives up itself after ten seconds."""
    webhook_max_connections: int = Field(default=1024, ge=1, le=100_000)
    """Most connections the gateway serves at once; past it a new request is answered 503 at once (GitHub records the failed delivery, the agents' cron picks the work up). Each costs at most 64 KiB of read buffer: the bodies it receives count against `AGENT_LOOP_WEBHOOK_BUFFER_BYTES` instead."""
    webhook_max_connections_per_source: int = Field(default=128, ge=1, le=100_000)
    """Most connections one client address (an IPv6 /64) may hold open at the gateway; more are closed as they open, so one address cannot take the connections. Connections from `AGENT_LOOP_WEBHOOK_TRUSTED_PROXIES` are not counted this way (their clients are told apart by `X-Forwarded-For`)."""
    webhook_buffer_bytes_per_source: int = Field(
        default=8 * 1024 * 1024, ge=1_000, le=10_000_000_000
    )
    """Delivery bytes the gateway holds at once for one client address (an IPv6 /64), reserved by each request's `Content-Length` before its body is read; past it a request is answered 429 at once, unread, so one address cannot take the whole `AGENT_LOOP_WEBHOOK_BUFFER_BYTES`."""
    webhook_buffer_bytes: int = Field(default=WEBHOOK_BUFFER_DEFAULT, ge=1_000, le=10_000_000_000)
    """Delivery bytes the gateway holds at once, in all (the bodies being received; reserved by each request's `Content-Length` before its body is read); past it a request is answered 503 at once, unread. The default is an eighth of the deployed gateway's memory (512 MiB), whatever the number of connections."""
    webhook_max_body_bytes_by_event: Annotated[tuple[str, ...], NoDecode] = ()
    """`event=bytes` pairs, comma-separated, raising (or lowering) `AGENT_LOOP_WEBHOOK_MAX_BODY_BYTES` for one `X-GitHub-Event`, e.g. `pull_request=1000000`. Each must fit `AGENT_LOOP_WEBHOOK_BUFFER_BYTES_PER_SOURCE`."""
    webhook_trusted_proxies: Annotated[tuple[str, ...], NoDecode] = ()
    """Addresses or networks (`10.0.0.0/8`, `*` for any) of the proxies in front of the gateway, comma-separated: from them `X-Forwarded-For` names the client, for the per-source limits and the logs. Empty: nobody's `X-Forwarded-For` is believed, and the connecting address is the client (behind an ingress, every delivery would then count as one source)."""

    # ------------------------------------------------------------ memory and local mode
    home: Path = Path(".agent-loop")
    """Folder for local state: Flyte local-mode runs and the memory stores when running on a laptop."""
    memory_key_prefix: str = Field(default="agent-loop", pattern=r"^[a-z0-9][a-z0-9-]{0,40}$")
    """Prefix of every MemoryStore key (lowercase letters, digits, dashes); give each loop sharing a Flyte project its own."""
    keep_reports: int = Field(default=50, ge=1, le=10_000)
    """Reports of local ticks kept in `<AGENT_LOOP_HOME>/reports/` (one HTML file per tick, newest kept); older ones are deleted."""
    digest_token_budget: int = Field(default=4_000, ge=100, le=200_000)
    """Most tokens of the context digest (lessons and recent history) shown to the builder and reviewer."""
    share_lessons_from: Annotated[tuple[str, ...], NoDecode] = ()
    """Comma-separated repositories (`owner/name`) whose lessons marked general are shown to the runs of the other repositories of `AGENT_LOOP_REPOS`; default none (each repository learns only from itself). A private repository's lessons never reach a public repository, listed or not."""
    lesson_holdout: float = Field(default=0.2, ge=0.0, le=0.5)
    """Probability each applicable lesson is held out of a builder or reviewer run, so the distiller can measure what the lesson does (shown vs held out). The draw is a hash of the run id and the lesson id, recorded in the run's record, so a replay draws the same. A proven lesson is held out at a quarter of this rate, so decay is still noticed. 0 turns measurement off (every applicable lesson is shown, no lesson's effect is decided)."""
    compliance_judgments: int = Field(default=5, ge=0, le=100)
    """Most model calls per distiller tick that judge whether a run acted on a lesson which names no command, file or API its trace could show (one call per lesson and run, never bought twice, spent on the lessons closest to a decision). A reply that is not exactly `true` or `false` counts as unknown. 0 turns these judgments off (such lessons then have no compliance)."""
    lesson_replay: bool = False
    """Let the distiller prove new lessons by replay (`on`/`off`): each lesson still proving is replayed on up to `AGENT_LOOP_LESSON_REPLAY_MAX_INSTANCES` mined instances of the repository (`agent-loop eval mine`), once with it and once without, by calling the eval's deployed task by name; the pairs are kept on the lesson as replay evidence, apart from its live runs, and their sign test's e-value multiplies the live one. Costs builder runs: bounded by `AGENT_LOOP_LESSON_REPLAY_MODEL_CALLS`. See `docs/learning.md`."""
    lesson_replay_max_instances: int = Field(default=10, ge=1, le=200)
    """Most mined instances one lesson is replayed on (pairs that count); an instance whose pair cannot count (the lesson did not reach the prompt, a build failed) is tried once and not again, at most twice this many in all."""
    lesson_replay_model_calls: int = Field(default=200, ge=1, le=100_000)
    """Model calls a distiller tick may spend on lesson replays (both builds of every pair, verifier included): a pair starts only while the tick has spent fewer, so the pair in flight may end above it."""
    lesson_replay_instances: Path | None = None
    """The instances file lessons are replayed on (JSON lines, `agent-loop eval mine`'s format); empty: `<AGENT_LOOP_HOME>/eval/<owner>__<name>/instances.jsonl`, where `eval mine` writes them. On a cluster it must be a path the distiller's container can read."""
    lessons_pr: bool = False
    """Let the distiller keep one pull request (from its own branch, never the default branch) that writes the proven lessons, each with its evidence line, into a marked section of `AGENT_LOOP_LESSONS_FILE`. Once merged they are the repository's own instructions, read from the base branch; a trusted person's edit or deletion of a line there flows back into memory (the lesson reworded or retired, recorded as theirs). See `docs/memory.md`."""
    lessons_file: Literal["AGENTS.md", ".agent-loop/lessons.md"] = "AGENTS.md"
    """The file whose marked section (`<!-- agent-loop:lessons:start -->` ... `end`) the lessons pull request writes; both are read by the agents from the base branch."""
    record_retention_days: int = Field(default=30, ge=1, le=3650)
    """Raw run records older than this are no longer read by the distiller (aged out); their aggregates are kept."""
    flyte_org: str = "local"
    """Flyte organization used in local mode (MemoryStore keys are scoped by it)."""
    flyte_project: str = "agent-loop"
    """Flyte project used in local mode."""
    flyte_domain: str = "development"
    """Flyte domain used in local mode."""
    flyte_config: Path | None = None
    """Flyte config file of `--remote` runs (the CLI's `--config`); empty: where the `flyte` CLI looks (`FLYTECTL_CONFIG`, `./.flyte/config.yaml`, `~/.flyte/config.yaml`). A remote run without a config naming a cluster stops before it starts; `infra/flyte/remote.yaml` is the template."""
    memory_root: str = ""
    """Storage root of a deployment's memory, read by `agent-loop status --remote`: the location the cluster's tasks write data to (e.g. `s3://my-bucket/data`); the memory lives under `<root>/agents/memory-store/v0/<org>/<project>/<domain>/`. The deployed agents find their own root; this is for reading it from elsewhere."""

    # ------------------------------------------------------------ sandbox and tests
    sandbox: Literal["auto", "bwrap", "docker", "flyte", "off"] = "auto"
    """Where the repository's tests run: `auto` (bubblewrap when it works here, else Docker), `bwrap`, `docker`, `flyte` (a task of its own on the cluster, for deployed agents) or `off` (no tests run; pull requests open as drafts saying so). See `docs/sandbox.md`."""
    sandbox_image: str = "python:3.11-slim"
    """Container image of the `docker` and `flyte` sandboxes; it must hold what the tests need, or the setup command must install it."""
    sandbox_readonly_paths: Annotated[tuple[str, ...], NoDecode] = ()
    """Comma-separated absolute host paths the `bwrap` sandbox may read, e.g. a toolchain under `/opt`. Home folders, `AGENT_LOOP_HOME` and key files are refused even when listed here."""
    test_command: str | None = None
    """The command that runs the repository's tests, e.g. `python -m pytest -q --junitxml=$SANDBOX_JUNIT` (no shell: one program and its arguments; `$SANDBOX_JUNIT` is the only variable). Empty: detected from the base commit (`AGENTS.md`, `pyproject.toml`, `package.json`, `go.mod`, `Cargo.toml`, `Makefile`)."""
    setup_command: str | None = None
    """Optional command run before the tests on the same copy of the tree, with the network on (installing dependencies), e.g. `uv sync --frozen`. Same syntax as the test command."""
    pip_options: str | None = None
    """Extra arguments for `pip install` in the default Python setup (a Python repository with no setup or test command configured gets a private environment in the copy, see `docs/sandbox.md`), e.g. `--index-url https://mirror.example/simple` behind a mirror, or `--no-index --find-links wheels` for a wheelhouse in the repository. Same syntax as the test command."""
    test_junit_report: bool = True
    """Append `--junitxml=$SANDBOX_JUNIT` to a pytest test command that names no JUnit report of its own, so every test's outcome (the counts and the fail-to-pass tests) is known for set commands too. `false` leaves the report option out (pytest commands still get the sandbox's guard plugin, `-p $SANDBOX_PYTEST_GUARD`: see `docs/sandbox.md`)."""
    max_test_runs: int = Field(default=5, ge=1, le=50)
    """Most test runs an agent may start in one try (its `run_tests` tool); the baseline and the final check do not count."""
    sandbox_timeout_seconds: float = Field(default=600.0, ge=1, le=86_400)
    """Wall-time limit of one command in the sandbox (setup and tests each); CPU time per process is limited to the same."""
    sandbox_memory_mb: int = Field(default=4096, ge=64, le=1_048_576)
    """Memory of one command in megabytes: the address space of each process with `bwrap`, the container's memory with `docker` and `flyte`."""
    sandbox_max_processes: int = Field(default=256, ge=8, le=65_536)
    """Most processes and threads at once in the sandbox (a fork bomb stops there)."""
    sandbox_max_file_mb: int = Field(default=256, ge=1, le=1_048_576)
    """Largest file a command in the sandbox may write, in megabytes."""
    sandbox_require_cgroup: bool | None = None
    """Refuse to run tests in `bwrap` without a control group bounding the whole sandbox (memory and processes): the run stops before it claims anything, saying why. `false` runs with per-process limits (up to `AGENT_LOOP_SANDBOX_MEMORY_MB` x `AGENT_LOOP_SANDBOX_MAX_PROCESSES` in total) and every result and pull request says so. Empty: on in a deployed agent (a Flyte task on a cluster), off elsewhere. A container's `/sys/fs/cgroup` is read-only by default (Docker, Kubernetes); see `docs/sandbox.md`."""

    # ------------------------------------------------------------ logging
    log_format: Literal["console", "json"] = "console"
    """`console` for people, `json` for log pipelines (one object per line)."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Least severe log level written."""

    # ------------------------------------------------------------ validators
    @field_validator("repo")
    @classmethod
    def _check_one_repo(cls, value: str, info: ValidationInfo) -> str:
        # On the later field (`repos` is declared first), so the problem is reported
        # next to any other bad variable.
        value = value.strip()
        listed = bool(info.data.get("repos"))
        if listed and value:
            raise PydanticCustomError(
                "one_repo_setting",
                "set AGENT_LOOP_REPO (one repository) or AGENT_LOOP_REPOS (a list), not both",
            )
        if not value and not listed:
            raise PydanticCustomError("missing", "Field required")
        return cls._check_repo(value) if value else value

    @classmethod
    def _check_repo(cls, value: str) -> str:
        """`owner/name`, stripped; `ValueError` for anything else."""
        value = value.strip()
        if value.count("/") == 1 and value.split("/")[1] in {".", ".."}:
            raise ValueError("the repository name cannot be '.' or '..'")
        if not _REPO_RE.match(value):
            raise ValueError("expected owner/name such as octo-org/hello-world")
        return value

    @field_validator("rate_limit_reserve")
    @classmethod
    def _check_rate_limit_reserve(cls, value: str) -> str:
        percent, count = parse_rate_reserve(value)
        return str(count) if count is not None else f"{percent:g}%"

    @field_validator("repos")
    @classmethod
    def _check_repos(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        seen: dict[str, str] = {}
        for spec in value:
            owner, _, name = spec.partition("/")
            try:
                if name != "*":
                    cls._check_repo(spec)
                elif not re.match(rf"^{_OWNER}$", owner):
                    raise ValueError("expected owner/name or owner/*")
                if spec.lower() in seen:
                    raise ValueError("listed twice")
            except ValueError as exc:
                # The entry alone is named: the whole list would hide which one is wrong.
                raise PydanticCustomError(
                    "list_entry",
                    "entry {entry} is invalid: {why}",
                    {"entry": repr(spec), "why": str(exc)},
                ) from None
            seen[spec.lower()] = spec
        return value

    @field_validator("github_api_url")
    @classmethod
    def _check_api_url(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("expected an http(s) URL such as https://api.github.com")
        _refuse_credentials(value, "the token in GITHUB_TOKEN (or use the GitHub App variables)")
        return value

    @field_validator("api_base")
    @classmethod
    def _check_api_base(cls, value: str | None) -> str | None:
        if value is not None:
            _refuse_credentials(
                value,
                "the key in a secret: the provider's key variable, e.g. OPENAI_API_KEY for "
                "`openai/...` models (AGENT_LOOP_MODEL_KEY_ENV names another), which "
                "deploy injects as a Flyte secret",
            )
        return value

    @field_validator("branch_prefix")
    @classmethod
    def _check_branch_prefix(cls, value: str) -> str:
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._/-]*/$", value) or ".." in value or "//" in value:
            raise ValueError("expected a git-safe prefix ending in '/', such as agent-loop/")
        return value

    @field_validator("builder_schedule", "reviewer_schedule", "distiller_schedule")
    @classmethod
    def _check_cron(cls, value: str) -> str:
        return normalize_cron(value)

    @field_validator("share_lessons_from")
    @classmethod
    def _check_share_from(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for spec in value:
            cls._check_repo(spec)
        return value

    @field_validator(
        "repos",
        "protected_paths",
        "sandbox_readonly_paths",
        "share_lessons_from",
        "webhook_max_body_bytes_by_event",
        "webhook_trusted_proxies",
        mode="before",
    )
    @classmethod
    def _split_lists(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(p.strip() for p in re.split(r"[,\n]", value) if p.strip())
        return value

    @field_validator("webhook_max_body_bytes_by_event")
    @classmethod
    def _check_event_caps(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        top = info.data.get("webhook_buffer_bytes_per_source")
        for pair in value:
            event, sep, number = pair.partition("=")
            if (
                not sep
                or not re.fullmatch(r"[a-z_]+", event.strip())
                or not number.strip().isdigit()
            ):
                raise ValueError(f"expected event=bytes pairs (pull_request=1000000), got {pair!r}")
            size = int(number)
            if size < 1_000 or (isinstance(top, int) and size > top):
                raise ValueError(
                    f"{event.strip()}: {size} bytes must be from 1000 to "
                    f"AGENT_LOOP_WEBHOOK_BUFFER_BYTES_PER_SOURCE ({top})"
                )
        return value

    @field_validator("webhook_trusted_proxies")
    @classmethod
    def _check_proxies(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            if entry != "*":
                try:
                    ipaddress.ip_network(entry, strict=False)
                except ValueError:
                    raise ValueError(
                        f"expected addresses or networks (10.0.0.0/8) or *, got {entry!r}"
                    ) from None
        return value

    @field_validator("sandbox_readonly_paths")
    @classmethod
    def _check_readonly_paths(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        relative = [p for p in value if not p.startswith("/")]
        if relative:
            raise ValueError(f"expected absolute paths, got {', '.join(relative)}")
        return value

    @field_validator("test_command", "setup_command", "pip_options")
    @classmethod
    def _check_command(cls, value: str | None) -> str | None:
        if value is None:
            return None
        split_command(value, what="the command")
        return value

    @field_validator(
        "trusted_label",
        "bot_login",
        "api_base",
        "github_app_id",
        "test_command",
        "setup_command",
        "pip_options",
        "flyte_config",
        "lesson_replay_instances",
        mode="before",
    )
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("github_app_private_key", mode="before")
    @classmethod
    def _unescape_key(cls, value: object) -> object:
        # One-line env vars often carry a PEM key with literal "\n" separators.
        if isinstance(value, str) and "\\n" in value and "\n" not in value:
            return value.replace("\\n", "\n")
        return value

    @field_validator("github_app_installation_id")
    @classmethod
    def _check_credentials(cls, value: int | None, info: ValidationInfo) -> int | None:
        # A field validator (not a model validator) so that a missing token is reported
        # together with any other bad variable; the auth fields are declared before this one.
        check_github_credentials({**info.data, "github_app_installation_id": value})
        return value

    @field_validator(
        "llm_retry_cap_seconds",
        "backoff_cap_minutes",
        "max_staged_total_bytes",
        "webhook_buffer_bytes_per_source",
        "webhook_buffer_bytes",
    )
    @classmethod
    def _check_at_least_its_floor(cls, value: float, info: ValidationInfo) -> float:
        # A field validator on the later field (not a model validator), so the problem is
        # reported on its variable, with the allowed range, next to any other bad one.
        field = info.field_name or ""
        floor_field = SETTING_FLOORS[field]
        floor = info.data.get(floor_field)
        if isinstance(floor, int | float) and value < floor:
            _, top = field_bounds(field)
            raise PydanticCustomError(
                "at_least_setting",
                "must be at least {floor_variable} ({floor}): allowed {floor} to {top}",
                {
                    "floor_variable": f"{ENV_PREFIX}{floor_field.upper()}",
                    "floor": floor,
                    "top": top,
                },
            )
        return value

    @model_validator(mode="after")
    def _check_cross_fields(self) -> Self:
        if not self.verifier_model.strip():
            object.__setattr__(self, "verifier_model", self.model)
        return self

    # ------------------------------------------------------------ derived values
    @property
    def webhook_body_caps(self) -> dict[str, int]:
        """`AGENT_LOOP_WEBHOOK_MAX_BODY_BYTES_BY_EVENT` read: event -> the largest body the
        gateway reads for it (the first pair naming an event wins); any other event has
        `AGENT_LOOP_WEBHOOK_MAX_BODY_BYTES`."""
        caps: dict[str, int] = {}
        for pair in self.webhook_max_body_bytes_by_event:
            name, _, number = pair.partition("=")
            caps.setdefault(name.strip(), int(number))
        return caps

    @property
    def many_repos(self) -> bool:
        """Configured with `AGENT_LOOP_REPOS` (each repository has its own memory namespace)."""
        return bool(self.repos)

    def for_repo(self, repo: str) -> Settings:
        """These settings acting on one repository of `AGENT_LOOP_REPOS` (`repo` set).

        The list stays, so the copy still knows its memory lives in that repository's
        namespace (`MemoryLocation.from_settings`).
        """
        return self.model_copy(update={"repo": self._check_repo(repo)})

    def parallel(self, role: Literal["builder", "reviewer", "distiller"]) -> int:
        """Targets one tick of `role` works at once (the distiller always one pass)."""
        return {"builder": self.builder_parallel, "reviewer": self.reviewer_parallel}.get(role, 1)

    @property
    def owner(self) -> str:
        """The repository owner (user or organization)."""
        return self.repo.split("/", 1)[0]

    @property
    def repo_name(self) -> str:
        """The repository name without its owner."""
        return self.repo.split("/", 1)[1]

    @property
    def eval_instances(self) -> Path:
        """The repository's mined instances file: `AGENT_LOOP_LESSON_REPLAY_INSTANCES`, or
        `<AGENT_LOOP_HOME>/eval/<owner>__<name>/instances.jsonl` (`agent-loop eval
        mine`'s default, as SWE-bench names a repository's instances `owner__name-N`)."""
        if self.lesson_replay_instances is not None:
            return self.lesson_replay_instances
        return self.home / "eval" / f"{self.owner}__{self.repo_name}" / "instances.jsonl"

    @property
    def claim_ttl(self) -> timedelta:
        """`AGENT_LOOP_CLAIM_TTL_MINUTES` as a duration."""
        return timedelta(minutes=self.claim_ttl_minutes)

    def max_turns(self, role: Literal["builder", "reviewer", "verifier", "distiller"]) -> int:
        """The turn limit of one agent role."""
        return {
            "builder": self.builder_max_turns,
            "reviewer": self.reviewer_max_turns,
            "verifier": self.verifier_max_turns,
            "distiller": self.distiller_max_turns,
        }[role]


def field_bounds(field_name: str) -> tuple[float | None, float | None]:
    """The documented least and greatest value of a numeric setting (`None`: unbounded).

    Read from the field's own constraints, so the docs, the load-time message and the
    tests that run a tick at each bound cannot disagree with the check.
    """
    low: float | None = None
    high: float | None = None
    for item in Settings.model_fields[field_name].metadata:
        if isinstance(item, annotated_types.Ge):
            low = cast("float", item.ge)
        elif isinstance(item, annotated_types.Gt):
            low = cast("float", item.gt)
        elif isinstance(item, annotated_types.Le):
            high = cast("float", item.le)
        elif isinstance(item, annotated_types.Lt):
            high = cast("float", item.lt)
    return low, high


def allowed_range(field_name: str) -> str:
    """`3 to 1440` for a bounded numeric setting; empty for any other."""
    low, high = field_bounds(field_name)
    if low is None or high is None:
        return ""
    return f"{low} to {high}"
