"""Test doubles shared by every package: GitHub emulator, scripted model (in process, or
served as an OpenAI-compatible API: `serve_chat_model`), network guard, and the harness
wiring them to a run (`emulator_settings`, `emulator_runtime`, `ModelSlot`,
`stored_record`, `quiet_logs`).

The GitHub emulator's names (dulwich, starlette, uvicorn) and the harness (which exists
to drive it, and imports the runtime) are imported on first use, so loading the pytest
plugin or the scripted model stays light and pytest's start-up with it.
"""

from typing import TYPE_CHECKING, Any

from agent_loop_testing._hermetic import (
    NetworkAccessDenied,
    block_network,
    is_loopback_address,
)
from agent_loop_testing._scripted import (
    DEFAULT_ROUTE,
    RecordedCall,
    ScriptedCall,
    ScriptedModel,
    ScriptMismatch,
    Turn,
    call,
    turn,
)

if TYPE_CHECKING:
    from agent_loop_testing._chat_server import serve_chat_model
    from agent_loop_testing._emulator import GitHubEmulator
    from agent_loop_testing._emulator_faults import Fault, LoggedRequest
    from agent_loop_testing._emulator_host import GitHubHost
    from agent_loop_testing._emulator_refname import is_valid_ref_name
    from agent_loop_testing._emulator_schema import SchemaMismatch, assert_matches_schema
    from agent_loop_testing._emulator_server import serve_asgi
    from agent_loop_testing._emulator_views import (
        CommitView,
        EmulatedComment,
        EmulatedIssue,
        EmulatedPull,
    )
    from agent_loop_testing._emulator_webhooks import Delivery, sign_payload
    from agent_loop_testing._facade import emulator_client, instant_retry
    from agent_loop_testing._harness import (
        ModelSlot,
        emulator_runtime,
        emulator_settings,
        quiet_logs,
        stored_record,
    )
    from agent_loop_testing._instant import InstantModel

_LAZY = {
    "serve_chat_model": "agent_loop_testing._chat_server",
    "GitHubEmulator": "agent_loop_testing._emulator",
    "Fault": "agent_loop_testing._emulator_faults",
    "LoggedRequest": "agent_loop_testing._emulator_faults",
    "GitHubHost": "agent_loop_testing._emulator_host",
    "InstantModel": "agent_loop_testing._instant",
    "is_valid_ref_name": "agent_loop_testing._emulator_refname",
    "SchemaMismatch": "agent_loop_testing._emulator_schema",
    "assert_matches_schema": "agent_loop_testing._emulator_schema",
    "serve_asgi": "agent_loop_testing._emulator_server",
    "CommitView": "agent_loop_testing._emulator_views",
    "Delivery": "agent_loop_testing._emulator_webhooks",
    "sign_payload": "agent_loop_testing._emulator_webhooks",
    "EmulatedComment": "agent_loop_testing._emulator_views",
    "EmulatedIssue": "agent_loop_testing._emulator_views",
    "EmulatedPull": "agent_loop_testing._emulator_views",
    "emulator_client": "agent_loop_testing._facade",
    "instant_retry": "agent_loop_testing._facade",
    "ModelSlot": "agent_loop_testing._harness",
    "emulator_runtime": "agent_loop_testing._harness",
    "emulator_settings": "agent_loop_testing._harness",
    "quiet_logs": "agent_loop_testing._harness",
    "stored_record": "agent_loop_testing._harness",
}


def __getattr__(name: str) -> Any:
    """Import the emulator's and the harness's names on first use (they are heavy)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_ROUTE",
    "CommitView",
    "Delivery",
    "EmulatedComment",
    "EmulatedIssue",
    "EmulatedPull",
    "Fault",
    "GitHubEmulator",
    "GitHubHost",
    "InstantModel",
    "LoggedRequest",
    "ModelSlot",
    "NetworkAccessDenied",
    "RecordedCall",
    "SchemaMismatch",
    "ScriptMismatch",
    "ScriptedCall",
    "ScriptedModel",
    "Turn",
    "assert_matches_schema",
    "block_network",
    "call",
    "emulator_client",
    "emulator_runtime",
    "emulator_settings",
    "instant_retry",
    "is_loopback_address",
    "is_valid_ref_name",
    "quiet_logs",
    "serve_asgi",
    "serve_chat_model",
    "sign_payload",
    "stored_record",
    "turn",
]
