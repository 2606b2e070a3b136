"""Every agent-loop knob as one environment variable, loaded and validated in one place.

```python
settings = load_settings()          # raises ConfigError naming each bad variable
auth = settings.github_auth()       # token or GitHub App installation
call_llm = make_call_llm(model=settings.model, usage=usage, budget=settings.budget(),
                         retry=settings.model_retry_policy(), api_base=settings.api_base)
```

The reference table in `docs/configuration.md` is rendered from the field docstrings
(`python -m agent_loop_common.settings`). Importing this package stays cheap: helpers
that build other packages' objects import them when called.
"""

from agent_loop_common.settings._docs import render_settings_table
from agent_loop_common.settings._errors import ConfigError
from agent_loop_common.settings._load import env_var_name, load_settings
from agent_loop_common.settings._model import (
    ENV_PREFIX,
    SETTING_FLOORS,
    Permission,
    Settings,
    allowed_range,
    field_bounds,
    normalize_cron,
)
from agent_loop_common.settings._rules import CLAIM_SKEW, MIN_CLAIM_TTL_MINUTES, claim_ttl_problem

__all__ = [
    "CLAIM_SKEW",
    "ENV_PREFIX",
    "MIN_CLAIM_TTL_MINUTES",
    "SETTING_FLOORS",
    "ConfigError",
    "Permission",
    "Settings",
    "allowed_range",
    "claim_ttl_problem",
    "env_var_name",
    "field_bounds",
    "load_settings",
    "normalize_cron",
    "render_settings_table",
]
