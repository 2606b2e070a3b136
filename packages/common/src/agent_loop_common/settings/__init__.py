"""Every agent-loop knob as one environment variable, loaded and validated in one place.

```python
settings = load_settings()                  # raises ConfigError naming each bad variable
auth = github_auth(settings)                # agent_loop_common.github: token or App
call_llm = make_call_llm(model=settings.model, usage=usage,
                         budget=Budget.from_settings(settings),
                         retry=ModelRetryPolicy.from_settings(settings),
                         api_base=settings.api_base)
```

Settings hold values and their validation only: each domain builds its own objects
from them (`MemoryLocation.from_settings`, `StagingPolicy.from_settings`,
`BackoffPolicy.from_settings`, `limits_from_settings`, ...), and this package imports
none of the domains, so the import graph has no circle (an import-linter contract in
the root `pyproject.toml` checks it). The rules a setting shares with the code that
uses it (claim TTL, command-line grammar, rate-limit reserve) live in `_rules`.

The reference table in `docs/configuration.md` is rendered from the field docstrings
(`python -m agent_loop_common.settings`).
"""

from agent_loop_common.settings._docs import render_settings_table
from agent_loop_common.settings._errors import ConfigError
from agent_loop_common.settings._load import (
    env_var_name,
    known_variables,
    load_settings,
    unknown_variable_problems,
)
from agent_loop_common.settings._model import (
    ENV_PREFIX,
    SETTING_FLOORS,
    Permission,
    Settings,
    allowed_range,
    field_bounds,
    normalize_cron,
)
from agent_loop_common.settings._rules import (
    CLAIM_SKEW,
    GATEWAY_MEMORY_MIB,
    JUNIT_PLACEHOLDER_PATTERN,
    MIN_CLAIM_TTL_MINUTES,
    claim_ttl_problem,
    parse_rate_reserve,
    shell_syntax,
    split_command,
)

__all__ = [
    "CLAIM_SKEW",
    "ENV_PREFIX",
    "GATEWAY_MEMORY_MIB",
    "JUNIT_PLACEHOLDER_PATTERN",
    "MIN_CLAIM_TTL_MINUTES",
    "SETTING_FLOORS",
    "ConfigError",
    "Permission",
    "Settings",
    "allowed_range",
    "claim_ttl_problem",
    "env_var_name",
    "field_bounds",
    "known_variables",
    "load_settings",
    "normalize_cron",
    "parse_rate_reserve",
    "render_settings_table",
    "shell_syntax",
    "split_command",
    "unknown_variable_problems",
]
