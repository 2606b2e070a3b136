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
from agent_loop_common.settings._model import ENV_PREFIX, Permission, Settings, normalize_cron

__all__ = [
    "ENV_PREFIX",
    "ConfigError",
    "Permission",
    "Settings",
    "env_var_name",
    "load_settings",
    "normalize_cron",
    "render_settings_table",
]
