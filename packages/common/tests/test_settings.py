"""Settings: variable names, defaults, validation messages, secrets, derived objects, docs."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from agent_loop_common.claims import BackoffPolicy
from agent_loop_common.github import AppAuth, TokenAuth, github_auth
from agent_loop_common.llm import Budget, ModelRetryPolicy
from agent_loop_common.memory import MemoryLocation
from agent_loop_common.sandbox import limits_from_settings
from agent_loop_common.settings import (
    ConfigError,
    Settings,
    env_var_name,
    load_settings,
    render_settings_table,
)
from agent_loop_common.settings._docs import TABLE_END, TABLE_START, update_document
from agent_loop_common.settings._load import field_meaning
from agent_loop_common.staging import StagingPolicy

DOCS = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEsecretkeymaterial\n-----END RSA PRIVATE KEY-----\n"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No variable from the machine running the tests leaks into a test."""
    for name in Settings.model_fields:
        monkeypatch.delenv(env_var_name(name), raising=False)
    return monkeypatch


@pytest.fixture
def minimal_env(clean_env: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    clean_env.setenv("AGENT_LOOP_REPO", "octo-org/hello-world")
    clean_env.setenv("GITHUB_TOKEN", "ghp_supersecret")
    return clean_env


def test_defaults_with_the_minimum_set(minimal_env: pytest.MonkeyPatch) -> None:
    s = load_settings()
    assert (s.repo, s.owner, s.repo_name) == ("octo-org/hello-world", "octo-org", "hello-world")
    assert s.github_api_url == "https://api.github.com"
    assert s.model == "anthropic/claude-sonnet-4-6"
    assert s.verifier_model == s.model
    assert s.api_base is None
    assert s.home == Path(".agent-loop")
    assert (s.max_turns("builder"), s.max_turns("reviewer"), s.max_turns("verifier")) == (
        40,
        40,
        12,
    )
    assert s.max_tries == 3
    assert s.claim_ttl == timedelta(minutes=30)
    assert (s.builder_schedule, s.reviewer_schedule) == ("*/5 * * * *", "*/5 * * * *")
    assert s.distiller_schedule == "*/10 * * * *"
    assert (s.trusted_min_permission, s.trusted_label) == ("write", None)
    assert s.branch_prefix == "agent-loop/"
    assert (s.flyte_org, s.flyte_project, s.flyte_domain) == ("local", "agent-loop", "development")
    assert s.memory_key_prefix == "agent-loop"


# Every variable, a non-default value, and what the field must then hold.
ALL_VARIABLES: list[tuple[str, str, str, object]] = [
    ("AGENT_LOOP_REPO", "me/proj.x", "repo", "me/proj.x"),
    (
        "GITHUB_API_URL",
        "https://ghe.example.com/api/v3/",
        "github_api_url",
        "https://ghe.example.com/api/v3",
    ),
    ("AGENT_LOOP_GITHUB_TIMEOUT_SECONDS", "12.5", "github_timeout_seconds", 12.5),
    ("AGENT_LOOP_RATE_LIMIT_RESERVE", " 5 % ", "rate_limit_reserve", "5%"),
    ("AGENT_LOOP_BOT_LOGIN", "loop-bot[bot]", "bot_login", "loop-bot[bot]"),
    ("AGENT_LOOP_DEPLOYMENT_ID", "staging-2", "deployment_id", "staging-2"),
    ("AGENT_LOOP_TRUSTED_MIN_PERMISSION", "maintain", "trusted_min_permission", "maintain"),
    ("AGENT_LOOP_TRUSTED_LABEL", "agent-ok", "trusted_label", "agent-ok"),
    ("AGENT_LOOP_BRANCH_PREFIX", "bots/loop/", "branch_prefix", "bots/loop/"),
    ("AGENT_LOOP_MODEL", "openai/qwen3", "model", "openai/qwen3"),
    ("AGENT_LOOP_VERIFIER_MODEL", "openai/gpt-5", "verifier_model", "openai/gpt-5"),
    ("AGENT_LOOP_API_BASE", "http://localhost:8000/v1", "api_base", "http://localhost:8000/v1"),
    ("AGENT_LOOP_MAX_OUTPUT_TOKENS", "4096", "max_output_tokens", 4096),
    ("AGENT_LOOP_LLM_TIMEOUT_SECONDS", "120", "llm_timeout_seconds", 120.0),
    ("AGENT_LOOP_LLM_MAX_ATTEMPTS", "2", "llm_max_attempts", 2),
    ("AGENT_LOOP_LLM_RETRY_BASE_SECONDS", "0.5", "llm_retry_base_seconds", 0.5),
    ("AGENT_LOOP_LLM_RETRY_CAP_SECONDS", "9", "llm_retry_cap_seconds", 9.0),
    ("AGENT_LOOP_LITELLM_REMOTE_CATALOGS", "true", "litellm_remote_catalogs", True),
    ("AGENT_LOOP_BUILDER_PARALLEL", "4", "builder_parallel", 4),
    ("AGENT_LOOP_REVIEWER_PARALLEL", "2", "reviewer_parallel", 2),
    ("AGENT_LOOP_BUILDER_MAX_TURNS", "41", "builder_max_turns", 41),
    ("AGENT_LOOP_REVIEWER_MAX_TURNS", "42", "reviewer_max_turns", 42),
    ("AGENT_LOOP_VERIFIER_MAX_TURNS", "13", "verifier_max_turns", 13),
    ("AGENT_LOOP_DISTILLER_MAX_TURNS", "21", "distiller_max_turns", 21),
    ("AGENT_LOOP_REVIEWER_MAX_CHECK_FIXES", "5", "reviewer_max_check_fixes", 5),
    ("AGENT_LOOP_MAX_TRIES", "2", "max_tries", 2),
    ("AGENT_LOOP_MAX_TOKENS_PER_RUN", "500000", "max_tokens_per_run", 500_000),
    ("AGENT_LOOP_MAX_COST_USD_PER_RUN", "2.5", "max_cost_usd_per_run", 2.5),
    ("AGENT_LOOP_CLAIM_TTL_MINUTES", "45", "claim_ttl_minutes", 45),
    ("AGENT_LOOP_BACKOFF_BASE_MINUTES", "5", "backoff_base_minutes", 5),
    ("AGENT_LOOP_BACKOFF_CAP_MINUTES", "60", "backoff_cap_minutes", 60),
    (
        "AGENT_LOOP_PROTECTED_PATHS",
        "**/*.pem, deploy/**",
        "protected_paths",
        ("**/*.pem", "deploy/**"),
    ),
    ("AGENT_LOOP_ALLOW_WORKFLOW_CHANGES", "true", "allow_workflow_changes", True),
    ("AGENT_LOOP_PROTECT_INSTRUCTION_FILES", "true", "protect_instruction_files", True),
    ("AGENT_LOOP_MAX_STAGED_FILES", "10", "max_staged_files", 10),
    ("AGENT_LOOP_MAX_STAGED_FILE_BYTES", "1000", "max_staged_file_bytes", 1000),
    ("AGENT_LOOP_MAX_STAGED_TOTAL_BYTES", "5000", "max_staged_total_bytes", 5000),
    ("AGENT_LOOP_MAX_STAGED_ISSUES", "3", "max_staged_issues", 3),
    ("AGENT_LOOP_MAX_DECOMPOSITION_DEPTH", "2", "max_decomposition_depth", 2),
    ("AGENT_LOOP_BUILDER_SCHEDULE", "0  *  * * 1-5", "builder_schedule", "0 * * * 1-5"),
    ("AGENT_LOOP_REVIEWER_SCHEDULE", "*/2 * * * *", "reviewer_schedule", "*/2 * * * *"),
    ("AGENT_LOOP_DISTILLER_SCHEDULE", "0 3 * * *", "distiller_schedule", "0 3 * * *"),
    ("AGENT_LOOP_REUSE_IDLE_MINUTES", "45", "reuse_idle_minutes", 45),
    ("AGENT_LOOP_WEBHOOK_MAX_BODY_BYTES", "50000", "webhook_max_body_bytes", 50_000),
    ("AGENT_LOOP_WEBHOOK_COALESCE_SECONDS", "0.5", "webhook_coalesce_seconds", 0.5),
    ("AGENT_LOOP_WEBHOOK_DEDUP_SIZE", "500", "webhook_dedup_size", 500),
    ("AGENT_LOOP_WEBHOOK_READ_TIMEOUT_SECONDS", "2.5", "webhook_read_timeout_seconds", 2.5),
    ("AGENT_LOOP_WEBHOOK_MAX_CONNECTIONS", "64", "webhook_max_connections", 64),
    (
        "AGENT_LOOP_WEBHOOK_MAX_CONNECTIONS_PER_SOURCE",
        "16",
        "webhook_max_connections_per_source",
        16,
    ),
    (
        "AGENT_LOOP_WEBHOOK_BUFFER_BYTES_PER_SOURCE",
        "2000000",
        "webhook_buffer_bytes_per_source",
        2_000_000,
    ),
    ("AGENT_LOOP_WEBHOOK_BUFFER_BYTES", "20000000", "webhook_buffer_bytes", 20_000_000),
    (
        "AGENT_LOOP_WEBHOOK_MAX_BODY_BYTES_BY_EVENT",
        "pull_request=1000000, push=2000000",
        "webhook_max_body_bytes_by_event",
        ("pull_request=1000000", "push=2000000"),
    ),
    (
        "AGENT_LOOP_WEBHOOK_TRUSTED_PROXIES",
        "10.0.0.0/8,192.0.2.1",
        "webhook_trusted_proxies",
        ("10.0.0.0/8", "192.0.2.1"),
    ),
    ("AGENT_LOOP_HOME", "/var/lib/agent-loop", "home", Path("/var/lib/agent-loop")),
    ("AGENT_LOOP_MEMORY_KEY_PREFIX", "loop-prod", "memory_key_prefix", "loop-prod"),
    ("AGENT_LOOP_KEEP_REPORTS", "7", "keep_reports", 7),
    ("AGENT_LOOP_DIGEST_TOKEN_BUDGET", "2000", "digest_token_budget", 2000),
    ("AGENT_LOOP_LESSON_HOLDOUT", "0.1", "lesson_holdout", 0.1),
    ("AGENT_LOOP_COMPLIANCE_JUDGMENTS", "2", "compliance_judgments", 2),
    ("AGENT_LOOP_LESSONS_PR", "on", "lessons_pr", True),
    ("AGENT_LOOP_LESSON_REPLAY", "on", "lesson_replay", True),
    ("AGENT_LOOP_LESSON_REPLAY_MAX_INSTANCES", "6", "lesson_replay_max_instances", 6),
    ("AGENT_LOOP_LESSON_REPLAY_MODEL_CALLS", "80", "lesson_replay_model_calls", 80),
    (
        "AGENT_LOOP_LESSON_REPLAY_INSTANCES",
        "/data/instances.jsonl",
        "lesson_replay_instances",
        Path("/data/instances.jsonl"),
    ),
    ("AGENT_LOOP_LESSONS_FILE", ".agent-loop/lessons.md", "lessons_file", ".agent-loop/lessons.md"),
    (
        "AGENT_LOOP_SHARE_LESSONS_FROM",
        "acme/api, acme/web",
        "share_lessons_from",
        ("acme/api", "acme/web"),
    ),
    ("AGENT_LOOP_RECORD_RETENTION_DAYS", "90", "record_retention_days", 90),
    ("AGENT_LOOP_FLYTE_ORG", "acme", "flyte_org", "acme"),
    ("AGENT_LOOP_FLYTE_PROJECT", "loops", "flyte_project", "loops"),
    ("AGENT_LOOP_FLYTE_DOMAIN", "production", "flyte_domain", "production"),
    ("AGENT_LOOP_MEMORY_ROOT", "s3://bucket/data", "memory_root", "s3://bucket/data"),
    (
        "AGENT_LOOP_FLYTE_CONFIG",
        "/etc/flyte/prod.yaml",
        "flyte_config",
        Path("/etc/flyte/prod.yaml"),
    ),
    ("AGENT_LOOP_SANDBOX", "docker", "sandbox", "docker"),
    ("AGENT_LOOP_SANDBOX_IMAGE", "node:22-slim", "sandbox_image", "node:22-slim"),
    (
        "AGENT_LOOP_SANDBOX_READONLY_PATHS",
        "/opt/go, /opt/node",
        "sandbox_readonly_paths",
        ("/opt/go", "/opt/node"),
    ),
    ("AGENT_LOOP_TEST_COMMAND", "make test", "test_command", "make test"),
    ("AGENT_LOOP_SETUP_COMMAND", "uv sync --frozen", "setup_command", "uv sync --frozen"),
    ("AGENT_LOOP_MAX_TEST_RUNS", "3", "max_test_runs", 3),
    ("AGENT_LOOP_TEST_JUNIT_REPORT", "false", "test_junit_report", False),
    (
        "AGENT_LOOP_PIP_OPTIONS",
        "--no-index --find-links wheels",
        "pip_options",
        "--no-index --find-links wheels",
    ),
    ("AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS", "120", "sandbox_timeout_seconds", 120.0),
    ("AGENT_LOOP_SANDBOX_MEMORY_MB", "2048", "sandbox_memory_mb", 2048),
    ("AGENT_LOOP_SANDBOX_MAX_PROCESSES", "128", "sandbox_max_processes", 128),
    ("AGENT_LOOP_SANDBOX_MAX_FILE_MB", "64", "sandbox_max_file_mb", 64),
    ("AGENT_LOOP_SANDBOX_REQUIRE_CGROUP", "true", "sandbox_require_cgroup", True),
    ("AGENT_LOOP_PROMPT_CACHE", "off", "prompt_cache", False),
    ("AGENT_LOOP_KEEP_TURNS", "3", "keep_turns", 3),
    ("AGENT_LOOP_LOG_FORMAT", "json", "log_format", "json"),
    ("AGENT_LOOP_LOG_LEVEL", "DEBUG", "log_level", "DEBUG"),
]


def test_every_variable_is_read_under_its_exact_name(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("GITHUB_TOKEN", "ghp_x")
    for variable, value, _, _ in ALL_VARIABLES:
        clean_env.setenv(variable, value)
    s = load_settings()
    for variable, _, field, expected in ALL_VARIABLES:
        assert getattr(s, field) == expected, variable
        assert env_var_name(field) == variable


def test_the_list_above_covers_every_field() -> None:
    covered = {field for _, _, field, _ in ALL_VARIABLES}
    auth = {
        name
        for name in Settings.model_fields
        if name.startswith("github_app") or name == "github_token"
    }
    secrets = {"webhook_secret"}  # checked below
    repos = {"repos"}  # the other form of AGENT_LOOP_REPO: test_many_repos.py
    assert set(Settings.model_fields) - covered == auth | secrets | repos


def test_the_webhook_secret_is_optional_and_never_shown(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("GITHUB_TOKEN", "ghp_x")
    clean_env.setenv("AGENT_LOOP_REPO", "a/b")
    assert load_settings().webhook_secret is None  # the agents do not need it
    clean_env.setenv("AGENT_LOOP_WEBHOOK_SECRET", "hook-secret-value")
    settings = load_settings()
    assert settings.webhook_secret is not None
    assert settings.webhook_secret.get_secret_value() == "hook-secret-value"
    assert "hook-secret-value" not in repr(settings)


def test_code_can_pass_field_names(clean_env: pytest.MonkeyPatch) -> None:
    s = load_settings(repo="a/b", github_token="t", builder_max_turns=7)
    assert (s.repo, s.builder_max_turns, s.github_token is not None) == ("a/b", 7, True)


def test_env_file_is_read_and_the_environment_wins(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        "AGENT_LOOP_REPO=file/repo\nGITHUB_TOKEN=from-file\nAGENT_LOOP_MAX_TRIES=2\n"
    )
    clean_env.setenv("AGENT_LOOP_MAX_TRIES", "1")
    s = load_settings(env_file=env_file)
    assert (s.repo, s.max_tries) == ("file/repo", 1)


def test_nothing_set_lists_every_problem_at_once(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings()
    message = str(raised.value)
    assert message.splitlines()[0] == "agent-loop configuration is invalid (2 problems):"
    assert (
        "  - AGENT_LOOP_REPO: not set. Target repository as `owner/name`, e.g. `octo-org/hello-world`."
        in message
    )
    assert "GitHub credentials missing: set GITHUB_TOKEN, or GITHUB_APP_ID" in message
    assert message.endswith(
        "Set these environment variables (see docs/configuration.md) and start again."
    )
    assert len(raised.value.problems) == 2


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("AGENT_LOOP_REPO", "hello-world", "'hello-world' is invalid: expected owner/name"),
        ("AGENT_LOOP_REPO", "https://github.com/o/r", "expected owner/name"),
        ("AGENT_LOOP_REPO", "o/..", "cannot be '.' or '..'"),
        (
            "AGENT_LOOP_BUILDER_MAX_TURNS",
            "lots",
            "'lots' is invalid: Input should be a valid integer",
        ),
        ("AGENT_LOOP_VERIFIER_MAX_TURNS", "0", "Input should be greater than or equal to 1"),
        ("AGENT_LOOP_BUILDER_SCHEDULE", "every 5 minutes", "expected a 5-field cron expression"),
        (
            "AGENT_LOOP_TRUSTED_MIN_PERMISSION",
            "read",
            "Input should be 'triage', 'write', 'maintain' or 'admin'",
        ),
        ("AGENT_LOOP_BRANCH_PREFIX", "agent-loop", "ending in '/'"),
        ("AGENT_LOOP_DEPLOYMENT_ID", "Prod--1", "String should match pattern"),
        ("GITHUB_API_URL", "api.github.com", "expected an http(s) URL"),
        ("AGENT_LOOP_LOG_FORMAT", "xml", "Input should be 'console' or 'json'"),
        ("AGENT_LOOP_SHARE_LESSONS_FROM", "acme/api,acme", "expected owner/name"),
    ],
)
def test_invalid_values_name_the_variable_and_its_meaning(
    minimal_env: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    minimal_env.setenv(variable, value)
    with pytest.raises(ConfigError) as raised:
        load_settings()
    (problem,) = raised.value.problems
    assert problem.startswith(f"{variable}: ")
    assert expected in problem
    field = next(n for n in Settings.model_fields if env_var_name(n) == variable)
    assert problem.endswith(" " + field_meaning(field, first_sentence=True))


def test_backoff_cap_below_base_is_rejected(minimal_env: pytest.MonkeyPatch) -> None:
    minimal_env.setenv("AGENT_LOOP_BACKOFF_BASE_MINUTES", "60")
    minimal_env.setenv("AGENT_LOOP_BACKOFF_CAP_MINUTES", "30")
    with pytest.raises(ConfigError) as raised:
        load_settings()
    (problem,) = raised.value.problems
    assert problem.startswith(
        "AGENT_LOOP_BACKOFF_CAP_MINUTES: '30' is invalid: must be at least "
        "AGENT_LOOP_BACKOFF_BASE_MINUTES (60): allowed 60 to 43200."
    )


def test_secrets_never_show(minimal_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    s = load_settings()
    for text in (repr(s), str(s), s.model_dump_json(), repr(github_auth(s))):
        assert "ghp_supersecret" not in text

    minimal_env.setenv("GITHUB_APP_ID", "123")
    minimal_env.setenv("GITHUB_APP_PRIVATE_KEY", "not-a-pem-but-secret-material")
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert "secret-material" not in str(raised.value)
    assert "GITHUB_APP_PRIVATE_KEY is not a PEM private key" in str(raised.value)


def test_token_credentials_for_the_facade(minimal_env: pytest.MonkeyPatch) -> None:
    assert github_auth(load_settings()) == TokenAuth(token="ghp_supersecret")


def test_app_credentials_from_a_key_file_win_over_a_token(
    minimal_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = tmp_path / "app.pem"
    key.write_text(PEM)
    minimal_env.setenv("GITHUB_APP_ID", "4242")
    minimal_env.setenv("GITHUB_APP_PRIVATE_KEY_PATH", str(key))
    minimal_env.setenv("GITHUB_APP_INSTALLATION_ID", "99")
    s = load_settings()
    auth = github_auth(s)
    assert auth == AppAuth(app_id=4242, private_key=PEM, installation_id=99)
    assert "MIIEsecret" not in repr(auth) + repr(s)


def test_app_key_with_escaped_newlines_and_no_installation_id(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("AGENT_LOOP_REPO", "o/r")
    clean_env.setenv("GITHUB_APP_ID", "Iv1.abc")
    clean_env.setenv("GITHUB_APP_PRIVATE_KEY", PEM.replace("\n", "\\n"))
    auth = github_auth(load_settings())
    assert auth == AppAuth(app_id="Iv1.abc", private_key=PEM, installation_id=None)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"GITHUB_APP_ID": "1"}, "GITHUB_APP_ID is set: also set GITHUB_APP_PRIVATE_KEY"),
        (
            {
                "GITHUB_APP_ID": "1",
                "GITHUB_APP_PRIVATE_KEY": PEM,
                "GITHUB_APP_PRIVATE_KEY_PATH": "/k",
            },
            "set only one of",
        ),
        (
            {"GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY_PATH": "/nonexistent/key.pem"},
            "no such file '/nonexistent/key.pem'",
        ),
        (
            {"GITHUB_APP_PRIVATE_KEY": PEM, "GITHUB_APP_INSTALLATION_ID": "5"},
            "GITHUB_APP_PRIVATE_KEY, GITHUB_APP_INSTALLATION_ID set but GITHUB_APP_ID is not",
        ),
        ({"GITHUB_TOKEN": "   "}, "GitHub credentials missing"),
    ],
)
def test_incomplete_credentials(
    clean_env: pytest.MonkeyPatch, env: dict[str, str], expected: str
) -> None:
    clean_env.setenv("AGENT_LOOP_REPO", "o/r")
    for name, value in env.items():
        clean_env.setenv(name, value)
    with pytest.raises(ConfigError, match=expected.replace("(", r"\(")):
        load_settings()


def test_empty_optional_values_mean_unset(minimal_env: pytest.MonkeyPatch) -> None:
    for name in (
        "AGENT_LOOP_TRUSTED_LABEL",
        "AGENT_LOOP_API_BASE",
        "AGENT_LOOP_BOT_LOGIN",
        "AGENT_LOOP_VERIFIER_MODEL",
    ):
        minimal_env.setenv(name, "")
    minimal_env.setenv("AGENT_LOOP_MODEL", "openai/x")
    s = load_settings()
    assert (s.trusted_label, s.api_base, s.bot_login) == (None, None, None)
    assert s.verifier_model == "openai/x"


def test_derived_objects(minimal_env: pytest.MonkeyPatch) -> None:
    minimal_env.setenv("AGENT_LOOP_MAX_COST_USD_PER_RUN", "0")
    minimal_env.setenv("AGENT_LOOP_PROTECTED_PATHS", "secrets/**")
    s = load_settings()
    budget = Budget.from_settings(s)
    assert (budget.max_tokens, budget.max_cost_usd) == (4_000_000, None)
    retry = ModelRetryPolicy.from_settings(s)
    assert (retry.max_attempts, retry.base_delay, retry.max_delay) == (4, 2.0, 60.0)
    staging = StagingPolicy.from_settings(s)
    assert staging.protected_globs == ("secrets/**",)
    assert staging.protected_reason("secrets/a.txt") is not None
    assert staging.protected_reason(".github/workflows/ci.yml") is not None
    assert (staging.max_files, staging.max_issues) == (40, 12)
    backoff = BackoffPolicy.from_settings(s)
    assert (backoff.base, backoff.cap) == (timedelta(minutes=15), timedelta(hours=24))
    location = MemoryLocation.from_settings(s, root="/tmp/flyte-data")
    assert (location.org, location.project, location.domain) == (
        "local",
        "agent-loop",
        "development",
    )
    assert (location.root, location.prefix) == ("/tmp/flyte-data", "agent-loop")


def test_sandbox_defaults_and_limits(minimal_env: pytest.MonkeyPatch) -> None:
    s = load_settings()
    assert (s.sandbox, s.sandbox_image, s.sandbox_readonly_paths) == (
        "auto",
        "python:3.11-slim",
        (),
    )
    assert (s.test_command, s.setup_command, s.max_test_runs) == (None, None, 5)
    limits = limits_from_settings(s)
    assert (limits.wall_seconds, limits.memory_mb, limits.max_processes, limits.max_file_mb) == (
        600.0,
        4096,
        256,
        256,
    )
    assert limits.cpu == 601


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("AGENT_LOOP_TEST_COMMAND", "pytest -q && make lint", "uses shell syntax"),
        ("AGENT_LOOP_SETUP_COMMAND", "pip install -r req.txt > /dev/null", "uses shell syntax"),
        ("AGENT_LOOP_TEST_COMMAND", "CI=1 pytest", "variable assignment"),
        ("AGENT_LOOP_SANDBOX", "chroot", "'auto', 'bwrap', 'docker', 'flyte' or 'off'"),
        ("AGENT_LOOP_SANDBOX_READONLY_PATHS", "/opt/x,relative/dir", "expected absolute paths"),
        ("AGENT_LOOP_SANDBOX_MAX_PROCESSES", "2", "greater than or equal to 8"),
    ],
)
def test_sandbox_settings_are_checked_at_load(
    minimal_env: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    minimal_env.setenv(variable, value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    (problem,) = caught.value.problems
    assert problem.startswith(f"{variable}: ")
    assert expected in problem


def test_empty_commands_mean_detect(minimal_env: pytest.MonkeyPatch) -> None:
    minimal_env.setenv("AGENT_LOOP_TEST_COMMAND", "  ")
    minimal_env.setenv("AGENT_LOOP_SETUP_COMMAND", "")
    s = load_settings()
    assert (s.test_command, s.setup_command) == (None, None)


def test_settings_are_immutable(minimal_env: pytest.MonkeyPatch) -> None:
    s = load_settings()
    with pytest.raises(ValueError, match="frozen"):
        s.model = "other"  # type: ignore[misc]


def test_docs_table_matches_the_code() -> None:
    text = DOCS.read_text(encoding="utf-8")
    start, end = text.index(TABLE_START), text.index(TABLE_END) + len(TABLE_END)
    assert text[start:end] == render_settings_table(), (
        "docs/configuration.md is stale: run "
        "`uv run --frozen python -m agent_loop_common.settings --update docs/configuration.md`"
    )
    for name in Settings.model_fields:
        assert f"`{env_var_name(name)}`" in text
        assert field_meaning(name), f"{name} has no docstring"


def test_update_document_rewrites_only_the_generated_block(tmp_path: Path) -> None:
    doc = tmp_path / "configuration.md"
    doc.write_text(f"# Title\n\n{TABLE_START}\nstale\n{TABLE_END}\n\nTail.\n")
    assert update_document(doc) is True
    text = doc.read_text()
    assert text.startswith("# Title\n\n")
    assert text.endswith("\n\nTail.\n")
    assert "| `AGENT_LOOP_REPO` | (empty) |" in text
    assert update_document(doc) is False


def test_importing_settings_is_cheap() -> None:
    code = (
        "import sys, agent_loop_common.settings\n"
        "heavy = [m for m in ('litellm', 'githubkit', 'flyte') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
