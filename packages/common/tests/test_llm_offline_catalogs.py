"""litellm fetches nothing on its own in production (issue 16).

Unless told otherwise, `import litellm` downloads its price table from
raw.githubusercontent.com, and the first Anthropic call downloads a beta-headers
catalog: requests outside GitHub's API and the model provider, made on every cold
start of a scheduled tick. The first tests check the environment litellm sees at import
time without importing it; the last imports it for real, once, in a fresh interpreter
whose sockets record every attempt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from typing import Any

import pytest

from agent_loop_common.llm import _litellm
from agent_loop_common.settings import Settings, env_var_name

LITELLM_VARS = ("LITELLM_LOCAL_MODEL_COST_MAP", "LITELLM_OFFLINE_MODE")


def _environment_at_import(monkeypatch: pytest.MonkeyPatch) -> dict[str, str | None]:
    """Run `load_litellm` with a stand-in import; return what litellm would have seen."""
    seen: dict[str, str | None] = {}

    def fake_import(name: str, *args: Any, **kwargs: Any) -> types.ModuleType:
        assert name == "litellm"
        seen.update({var: os.environ.get(var) for var in LITELLM_VARS})
        return types.ModuleType("litellm")

    monkeypatch.delitem(sys.modules, "litellm", raising=False)
    monkeypatch.setattr(_litellm.importlib, "import_module", fake_import)
    _litellm.load_litellm()
    return seen


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in (*LITELLM_VARS, _litellm.REMOTE_CATALOGS_VARIABLE):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_litellm_is_imported_with_its_bundled_catalogs_by_default(
    clean_env: pytest.MonkeyPatch,
) -> None:
    assert _environment_at_import(clean_env) == {
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_OFFLINE_MODE": "true",
    }


@pytest.mark.parametrize("value", ["true", "1", "YES", " on "])
def test_the_user_may_opt_in_to_remote_catalogs(clean_env: pytest.MonkeyPatch, value: str) -> None:
    clean_env.setenv(_litellm.REMOTE_CATALOGS_VARIABLE, value)
    assert _environment_at_import(clean_env) == dict.fromkeys(LITELLM_VARS)


def test_a_choice_the_user_made_in_litellms_own_variables_stands(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "False")
    assert _environment_at_import(clean_env) == {
        "LITELLM_LOCAL_MODEL_COST_MAP": "False",
        "LITELLM_OFFLINE_MODE": None,
    }


def test_the_opt_in_is_a_documented_setting() -> None:
    assert env_var_name("litellm_remote_catalogs") == _litellm.REMOTE_CATALOGS_VARIABLE
    assert Settings.model_fields["litellm_remote_catalogs"].default is False


_PROBE = textwrap.dedent(
    """
    import json, socket

    attempts = []

    def connect(self, address):
        attempts.append(repr(address))
        raise OSError("blocked by the test")

    def getaddrinfo(host, *args, **kwargs):
        attempts.append(str(host))
        raise socket.gaierror("blocked by the test")

    socket.socket.connect = connect
    socket.getaddrinfo = getaddrinfo
    from agent_loop_common.llm._litellm import load_litellm

    litellm = load_litellm()
    print(json.dumps({"attempts": attempts, "priced_models": len(litellm.model_cost)}))
    """
)


def test_importing_litellm_for_a_tick_makes_no_request() -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (*LITELLM_VARS, _litellm.REMOTE_CATALOGS_VARIABLE)
    }
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["attempts"] == []
    assert result["priced_models"] > 100  # the bundled table is loaded
