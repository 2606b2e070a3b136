"""Pieces every agent's `env.py` uses to declare its own Flyte environment.

`common` never defines a `TaskEnvironment` (each agent's deploy would pick it up). It
only builds the image spec and the secret list, so the three agents declare them the
same way while each keeps its own image (from its own exported lock) and its own deploy.

Secrets are read from the deploying shell's environment when `env.py` is imported (the
spec is fixed at deploy time, as the cron schedules are):

- GitHub: `AGENT_LOOP_GITHUB_AUTH=token` (the default without `GITHUB_APP_ID`) injects
  the Flyte secret `github-token` as `GITHUB_TOKEN`; `app` (the default with
  `GITHUB_APP_ID`) injects `github-app-id` and `github-app-private-key` as
  `GITHUB_APP_ID` and `GITHUB_APP_PRIVATE_KEY`.
- Model: the key variable of the provider of `AGENT_LOOP_MODEL` (and of
  `AGENT_LOOP_VERIFIER_MODEL` when it names another provider), e.g. `ANTHROPIC_API_KEY`,
  injected from the secret named after it (`anthropic-api-key`).
  `AGENT_LOOP_MODEL_KEY_ENV` overrides the variable; `none` injects no model key (a
  local OpenAI-compatible server that wants none).

The gateway (a Flyte app, not an agent) gets the GitHub credentials (for trust lookups
and acknowledgements) and `AGENT_LOOP_WEBHOOK_SECRET` from the secret
`agent-loop-webhook-secret`, and no model key: it runs no model.

With `AGENT_LOOP_SANDBOX=flyte` (a deploy's default for them) the builder and the
reviewer run the repository's tests in a raw-container task of their own, with no
secrets (`agent_tests_spec`); each agent's `env.py` depends on the environment
`agent_tests_environments()` builds around it.

Warm ticks: `AGENT_LOOP_REUSE_IDLE_MINUTES` (default 30) makes each agent's environment
reusable (`agent_reuse`): the container and its Python process outlive a tick, so the
next tick pays no container start and no imports. Its image then also installs
`unionai-reuse`, the runtime that serves reusable containers (`agent_image(reuse=...)`).

Every other setting set in the deploying shell (`AGENT_LOOP_REPO`, `GITHUB_API_URL`,
budgets...) reaches the tasks as a plain env var through `agent_env_vars()`: a scheduled
run has no shell of its own, so what the deployer configured is what the cluster runs.
A plain env var is written into the deploy spec, so a value that looks like a credential
(a key in `AGENT_LOOP_API_BASE`'s URL, a token pasted into the wrong variable) stops the
deploy instead of being copied there.
"""

from __future__ import annotations

import os
import pathlib
import typing
from collections.abc import Mapping

import flyte

from agent_loop_common.model_keys import KEY_ENV_OVERRIDE, key_env

if typing.TYPE_CHECKING:
    from agent_loop_common.sandbox import FlyteTestSpec

__all__ = [
    "DEFAULT_MODEL",
    "GITHUB_AUTH_ENV",
    "IMAGE_PREFIX",
    "PYTHON_VERSION",
    "REUSE_PACKAGE",
    "TESTS_ENV",
    "WEBHOOK_SECRET_ENV",
    "agent_env_vars",
    "agent_image",
    "agent_reuse",
    "agent_schedule",
    "agent_secrets",
    "agent_tests_environments",
    "agent_tests_spec",
    "agent_trigger",
    "gateway_secrets",
    "github_auth",
    "image_name",
    "model_key_envs",
    "requirements_lock",
    "secret_key",
]

PYTHON_VERSION = (3, 11)
"""Pinned interpreter of every agent image (the version CI checks here)."""

IMAGE_PREFIX = "agent-loop-"
"""Each agent's image is named `agent-loop-<agent>`, so no two agents share a tag."""

DEFAULT_MODEL = "anthropic/claude-sonnet-4-6"
"""Same default as `Settings.model`: its provider decides the default key variable."""


def requirements_lock(package_dir: pathlib.Path) -> pathlib.Path:
    """The package's exported lock (`uv export --package ...`), committed next to it."""
    return package_dir / "requirements.lock.txt"


def image_name(agent: str) -> str:
    """Image name of one agent (its own name: the SDK's default name is shared)."""
    return f"{IMAGE_PREFIX}{agent}"


REUSE_PACKAGE = "unionai-reuse==0.2.0"
"""The runtime a reusable container runs its tasks with; installed only into the images
of reusable environments (it is not a dependency of the code, so not in the locks)."""


def agent_image(
    agent: str, package_dir: pathlib.Path, *, reuse: flyte.ReusePolicy | None = None
) -> flyte.Image:
    """The image of one agent: Debian base, pinned Python, that agent's locked deps only.

    The workspace code (the agent and `common`) travels in Flyte's code bundle, so a
    change to one agent's dependencies changes only that agent's image identity (the tag
    hashes the lock's content, not its path). With `reuse` (the environment's
    `agent_reuse()`), the image also installs `REUSE_PACKAGE`.
    """
    image = flyte.Image.from_debian_base(
        python_version=PYTHON_VERSION, name=image_name(agent)
    ).with_requirements(requirements_lock(package_dir))
    return image if reuse is None else image.with_pip_packages(REUSE_PACKAGE)


def agent_reuse(environ: Mapping[str, str] | None = None) -> flyte.ReusePolicy | None:
    """The agent environment's reusable-container policy, or `None` for a fresh container
    per tick (`AGENT_LOOP_REUSE_IDLE_MINUTES=0`).

    Read at import, like the schedules: the policy is part of the deployed spec. One
    warm replica serves the ticks; a second may start for the tick's durable writes,
    which are tasks of the same environment and would otherwise wait for the tick that
    called them to free the only replica. One task per replica at a time: per-process
    state (an installed model, the sandbox) is never shared by two ticks. Both replicas
    stop after the configured idle time.

    Raises:
        ValueError: the variable is not a whole number of minutes within its bounds.
    """
    from agent_loop_common.settings import Settings, env_var_name

    name = env_var_name("reuse_idle_minutes")
    env = os.environ if environ is None else environ
    raw = env.get(name, "").strip()
    try:
        minutes = Settings.model_fields["reuse_idle_minutes"].default if not raw else int(raw)
    except ValueError:
        raise ValueError(f"{name}: expected a whole number of minutes, got {raw!r}") from None
    if not 0 <= minutes <= _MAX_REUSE_MINUTES:
        raise ValueError(f"{name}: expected 0 to {_MAX_REUSE_MINUTES} minutes, got {minutes}")
    if minutes == 0:
        return None
    idle = minutes * 60
    return flyte.ReusePolicy(replicas=(1, 2), concurrency=1, idle_ttl=idle, scaledown_ttl=idle)


_MAX_REUSE_MINUTES = 1440


def secret_key(env_var: str) -> str:
    """Flyte secret key for an env var: `ANTHROPIC_API_KEY` -> `anthropic-api-key`."""
    return env_var.lower().replace("_", "-")


def model_key_envs(environ: Mapping[str, str] | None = None) -> list[str]:
    """Env vars holding the model keys the agents need, for the configured model(s)."""
    env = os.environ if environ is None else environ
    override = env.get(KEY_ENV_OVERRIDE, "").strip()
    if override:
        return [] if override.lower() == "none" else [override]
    models = [
        env.get("AGENT_LOOP_MODEL") or DEFAULT_MODEL,
        env.get("AGENT_LOOP_VERIFIER_MODEL", ""),
    ]
    keys = [key_env(m.strip()) for m in models if m.strip()]
    return list(dict.fromkeys(keys))


GITHUB_AUTH_ENV = "AGENT_LOOP_GITHUB_AUTH"
"""How a deployed agent authenticates to GitHub: `token` or `app`."""


def github_auth(environ: Mapping[str, str] | None = None) -> str:
    """`token` or `app`: `AGENT_LOOP_GITHUB_AUTH`, else `app` when `GITHUB_APP_ID` is set
    (as the settings do: with an App id the agents act as the App), else `token`.

    Raises:
        ValueError: `AGENT_LOOP_GITHUB_AUTH` names no known method.
    """
    env = os.environ if environ is None else environ
    auth = env.get(GITHUB_AUTH_ENV, "").strip().lower()
    if not auth:
        return "app" if env.get("GITHUB_APP_ID", "").strip() else "token"
    if auth not in ("token", "app"):
        raise ValueError(f"{GITHUB_AUTH_ENV} must be 'token' or 'app', not {auth!r}")
    return auth


def _github_env_vars(env: Mapping[str, str]) -> list[str]:
    """The env vars of the GitHub credentials, per `github_auth`."""
    if github_auth(env) == "app":
        return ["GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY"]
    return ["GITHUB_TOKEN"]


def _secret_env_vars(env: Mapping[str, str]) -> list[str]:
    """The env vars that arrive as Flyte secrets: GitHub credentials, then model keys."""
    return [*_github_env_vars(env), *model_key_envs(env)]


def agent_secrets(environ: Mapping[str, str] | None = None) -> list[str | flyte.Secret]:
    """GitHub credentials and the model key(s), injected as the env vars settings read.

    Typed as the SDK's `TaskEnvironment(secrets=...)` parameter (an invariant list).
    """
    env = os.environ if environ is None else environ
    return [flyte.Secret(key=secret_key(var), as_env_var=var) for var in _secret_env_vars(env)]


WEBHOOK_SECRET_ENV = "AGENT_LOOP_WEBHOOK_SECRET"  # noqa: S105 (a variable name, not a secret)
"""The variable the gateway reads its webhook secret from."""


def gateway_secrets(environ: Mapping[str, str] | None = None) -> list[str | flyte.Secret]:
    """The gateway's secrets: the GitHub credentials and the webhook secret, no model key."""
    env = os.environ if environ is None else environ
    names = [*_github_env_vars(env), WEBHOOK_SECRET_ENV]
    return [flyte.Secret(key=secret_key(var), as_env_var=var) for var in names]


def agent_schedule(agent: str, environ: Mapping[str, str] | None = None) -> str:
    """The agent's cron cadence, read and checked exactly as settings read it.

    Triggers are declared when `env.py` is imported, before any task loads settings, so
    the cadence is read here from `AGENT_LOOP_<AGENT>_SCHEDULE` (default: the settings'
    default) instead of each agent repeating the variable name and default.

    Raises:
        ValueError: the variable is not a 5-field cron expression (named in the message).
    """
    from agent_loop_common.settings import Settings, env_var_name, normalize_cron

    field = f"{agent}_schedule"
    default = str(Settings.model_fields[field].default)
    env = os.environ if environ is None else environ
    name = env_var_name(field)
    try:
        return normalize_cron(env.get(name, default))
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from exc


def agent_tests_spec(environ: Mapping[str, str] | None = None) -> FlyteTestSpec | None:
    """The tests' task spec when `AGENT_LOOP_SANDBOX=flyte` in the deploying shell, else `None`.

    Read at import, like the schedules: the task must exist at deploy time. Its image and
    limits come from `AGENT_LOOP_SANDBOX_IMAGE`, `AGENT_LOOP_SANDBOX_MEMORY_MB` and
    `AGENT_LOOP_SANDBOX_TIMEOUT_SECONDS` (the settings' defaults when unset).

    Raises:
        ValueError: a limit is not a number (the message names the variable).
    """
    from agent_loop_common.sandbox import SandboxLimits, flyte_task_spec
    from agent_loop_common.settings import Settings, env_var_name

    env = os.environ if environ is None else environ
    if env.get(env_var_name("sandbox"), "").strip().lower() != "flyte":
        return None

    def read(field: str) -> str:
        return env.get(env_var_name(field), "").strip() or str(Settings.model_fields[field].default)

    try:
        limits = SandboxLimits(
            wall_seconds=float(read("sandbox_timeout_seconds")),
            memory_mb=int(read("sandbox_memory_mb")),
        )
    except ValueError as exc:
        raise ValueError(f"AGENT_LOOP_SANDBOX_*: {exc}") from exc
    return flyte_task_spec(image=read("sandbox_image"), limits=limits)


TESTS_ENV = "agent-loop-tests"
"""Name of the tests' own Flyte environment (`AGENT_LOOP_SANDBOX=flyte`): the raw
container the repository's code runs in, with no secrets, next to the agent's env."""


def agent_tests_environments(environ: Mapping[str, str] | None = None) -> list[flyte.Environment]:
    """The environments an agent that tests changes depends on: with
    `AGENT_LOOP_SANDBOX=flyte`, the tests' task in an environment of its own
    (`TESTS_ENV`: its image, its resources, no secrets), registered for this process's
    runs (`use_flyte_tests_task`); otherwise none.

    A function, called by the builder's and the reviewer's `env.py` for
    `TaskEnvironment(depends_on=...)`: `common` never declares an environment at import,
    or every agent's deploy (the distiller's too) would carry it.

    Raises:
        ValueError: a sandbox limit is not a number (see `agent_tests_spec`).
    """
    spec = agent_tests_spec(environ)
    if spec is None:
        return []
    from agent_loop_common.runtime import use_flyte_tests_task
    from agent_loop_common.sandbox import build_container_task

    task = build_container_task(spec)
    use_flyte_tests_task(task)
    # flyte leaves the task's generics unknown; the environment itself is fully typed.
    tests_env: flyte.Environment = flyte.TaskEnvironment.from_task(TESTS_ENV, task)  # pyright: ignore[reportUnknownMemberType]
    return [tests_env]


def agent_trigger(agent: str, environ: Mapping[str, str] | None = None) -> flyte.Trigger:
    """The agent's cron trigger (`<agent>_schedule`), feeding the tick's `trigger_time`."""
    return flyte.Trigger(
        name=f"{agent}_schedule",
        automation=flyte.Cron(agent_schedule(agent, environ)),
        inputs={"trigger_time": flyte.TriggerTime},
    )


_LOCAL_ONLY = frozenset(
    {
        "AGENT_LOOP_HOME",
        "AGENT_LOOP_FLYTE_CONFIG",
        "AGENT_LOOP_MEMORY_ROOT",
        "GITHUB_APP_PRIVATE_KEY_PATH",
    }
)
"""Settings for the deploying machine's CLI only (its paths, where it reads a
deployment's memory from): meaningless in a container."""


def agent_env_vars(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The non-secret settings set in the deploying shell, for `TaskEnvironment(env_vars=...)`.

    Secrets (`SecretStr` settings and whatever `agent_secrets` injects) are never copied:
    they reach the container only as Flyte secrets.

    Raises:
        ValueError: a value to be copied looks like a credential (a user name, password
            or key in a URL, a private key, an API token); the message names the variable
            and what was found, never the value.
    """
    from pydantic import SecretStr

    from agent_loop_common.settings import Settings, env_var_name
    from agent_loop_common.settings._secrets import credential_in

    env = os.environ if environ is None else environ
    secret = set(_secret_env_vars(env))
    names: list[str] = []
    for field, info in Settings.model_fields.items():
        annotation = info.annotation
        if annotation is SecretStr or SecretStr in typing.get_args(annotation):
            continue
        names.append(env_var_name(field))
    forwarded = {
        name: env[name]
        for name in names
        if env.get(name) and name not in secret and name not in _LOCAL_ONLY
    }
    for name, value in forwarded.items():
        found = credential_in(value)
        if found is not None:
            raise ValueError(
                f"{name} holds {found}: it would be written into the deploy spec as a plain "
                "environment variable. Remove the credential from it and put the key in a "
                "Flyte secret (the provider's key variable, e.g. OPENAI_API_KEY, or "
                "GITHUB_TOKEN), which the agents receive through agent_secrets()."
            )
    return forwarded
